package import Foundation
public import NotesModel
package import NotesStoreRules
import PostgresNIO

extension PostgresStore {
    /// Bytes the account's zones hold (kept exact by the usage triggers), and its quota.
    public func usage(of account: String) async throws(NotesError) -> (used: Int64, quota: Int64?) {
        let quota = storage.quotaBytes
        return try await readOne { sql in (try await PostgresRecords.usage(sql, of: account), quota) }
    }

    /// Deletes the versions that `storage.retention` no longer keeps, at most
    /// `maxRecords` records' histories per transaction; returns how many versions went.
    @discardableResult
    public func pruneVersions(maxRecords: Int = 200) async throws(NotesError) -> Int {
        let retention = storage.retention
        let now = clock()
        let oldest = retention.expiring(at: now).storedValue
        try await dropAbandonedContents()
        var removed = 0
        // A zone at a time, holding its counter as every write of zone data does: it then
        // never waits for a modify holding the rows it deletes while that waits for it.
        var zonesDone = (owner: "", zone: "")
        while let next = try await read({ sql in
            try await sql.row(
                """
                SELECT owner, zone FROM versions WHERE modified_at < \(oldest) AND (owner, zone) > (\(zonesDone.owner), \(zonesDone.zone))
                ORDER BY owner, zone LIMIT 1
                """
            ).map { try $0.decode((String, String).self) }
        }) {
            let zone = ZoneID(owner: next.0, name: next.1)
            var after = (recordName: "", createdSeq: Int64.min)
            while true {
                let start = after
                let (count, last) = try await write(.zone(zone)) { context in
                    let sql = context.sql
                    // Records of the zone with at least one version past the all-kept period, in key order.
                    let keys = try await sql.rows(
                        """
                        SELECT DISTINCT record_name, created_seq FROM versions
                        WHERE owner = \(zone.owner) AND zone = \(zone.name) AND modified_at < \(oldest)
                          AND (record_name, created_seq) > (\(start.recordName), \(start.createdSeq))
                        ORDER BY record_name, created_seq LIMIT \(maxRecords)
                        """
                    ).map { row in
                        let (recordName, createdSeq) = try row.decode((String, Int64).self)
                        return (recordName: recordName, createdSeq: createdSeq)
                    }
                    var count = 0
                    for key in keys {
                        let versions = try await sql.rows(
                            """
                            SELECT seq, modified_at FROM versions
                            WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(key.recordName) AND created_seq = \(key.createdSeq)
                            """
                        ).map { try $0.decode((Int64, Double).self) }
                        let expired = retention.expired(versions.map { Date(stored: $0.1) }, now: now).map { versions[$0].0 }
                        if !expired.isEmpty {
                            try await sql.execute(
                                """
                                DELETE FROM versions
                                WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(key.recordName) AND created_seq = \(key.createdSeq) AND seq = ANY(\(expired))
                                """)
                        }
                        count += expired.count
                    }
                    return (count, keys.count == maxRecords ? keys.last : nil)
                }
                removed += count
                guard let last else { break }
                after = last
            }
            zonesDone = (zone.owner, zone.name)
        }
        if removed > 0 { logger.info("version retention", metadata: ["removed": "\(removed)"]) }
        return removed
    }
}

extension PostgresStore: LinkPasswordStore {
    package var now: Date { clock() }

    package func passwordOfLink(_ urlToken: String) async throws(NotesError) -> (shareID: String, salt: Data, hash: Data)? {
        try await readOne { sql in
            guard let row = try await sql.row("SELECT id, password_salt, password_hash FROM shares WHERE url_token = \(urlToken) AND NOT stopped") else { return nil }
            let (id, salt, hash) = try row.decode((String, Data?, Data?).self)
            guard let salt, let hash else { return nil }
            return (id, salt, hash)
        }
    }

    package func reservePasswordGuess(_ keys: [(key: String, limit: Int)]) async throws(NotesError) -> PasswordAttempts.Admission {
        try await write(.none) { context in
            let sql = context.sql
            let now = context.now.storedValue
            let names = keys.map(\.key)
            // Rows first, so that concurrent guesses queue on the same row locks.
            try await sql.execute(
                "INSERT INTO password_attempts (key, window_start, failures) SELECT k, \(now), 0 FROM unnest(\(names)::text[]) AS k ON CONFLICT (key) DO NOTHING")
            let stored = try await sql.rows("SELECT key, window_start, failures FROM password_attempts WHERE key = ANY(\(names)) ORDER BY key FOR UPDATE").map { row in
                let (key, windowStart, failures) = try row.decode((String, Double, Int).self)
                return GuessCount(key: key, windowStart: windowStart, guesses: failures)
            }
            let (admission, counts) = PasswordAttempts.admit(stored, limits: keys, now: now)
            for count in counts {
                try await sql.execute("UPDATE password_attempts SET window_start = \(count.windowStart), failures = \(count.guesses) WHERE key = \(count.key)")
            }
            // Old windows are of no use: keep the table small.
            try await sql.execute("DELETE FROM password_attempts WHERE window_start < \(now - 2 * Limits.passwordWindowSeconds)")
            return admission
        }
    }

    package func releasePasswordGuess(_ keys: [String]) async throws(NotesError) {
        try await write(.none) { context in
            try await context.sql.execute("UPDATE password_attempts SET failures = GREATEST(failures - 1, 0) WHERE key = ANY(\(keys))")
        }
    }
}

extension PostgresStore {
    /// Deletes the tombstones older than `TombstoneRetention.keptSeconds`, a zone and a
    /// thousand at a time (holding the zone's counter); each zone keeps the last change
    /// number it lost (`pruned_seq`), so that a token from before it is told to start
    /// over. Returns how many went.
    @discardableResult
    public func pruneTombstones() async throws(NotesError) -> Int {
        let horizon = TombstoneRetention.horizon(clock())
        var removed = 0
        while let next = try await read({ sql in
            try await sql.row("SELECT owner, zone FROM tombstones WHERE deleted_at <= \(horizon) LIMIT 1").map { try $0.decode((String, String).self) }
        }) {
            let zone = ZoneID(owner: next.0, name: next.1)
            let count: Int = try await write(.zone(zone)) { context in
                let rows = try await context.sql.rows(
                    """
                    WITH gone AS (
                        DELETE FROM tombstones WHERE ctid IN (
                            SELECT ctid FROM tombstones WHERE owner = \(zone.owner) AND zone = \(zone.name) AND deleted_at <= \(horizon)
                            LIMIT \(TombstoneRetention.rowsPerTransaction))
                        RETURNING seq),
                    marked AS (
                        UPDATE zones z SET pruned_seq = GREATEST(z.pruned_seq, (SELECT MAX(seq) FROM gone))
                        WHERE z.owner = \(zone.owner) AND z.name = \(zone.name) AND EXISTS (SELECT 1 FROM gone) RETURNING 1)
                    SELECT COUNT(*)::BIGINT FROM gone
                    """)
                return Int(try rows.first?.decode(Int64.self) ?? 0)
            }
            removed += count
            if count == 0 { break }
        }
        if removed > 0 { logger.info("tombstone retention", metadata: ["removed": "\(removed)"]) }
        return removed
    }
}

/// Sign-in links exchanged in one transaction (`exchangeSignInLink`, beside the accounts).
extension PostgresStore: SignInLinkExchange {}
