package import Foundation
public import NotesModel
import NotesStore
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
        var removed = 0
        var after: (owner: String, zone: String, recordName: String, createdSeq: Int64)?
        repeat {
            let start = after
            // (Under the counter's lock as every write of zone data: it then never waits
            // for a modify holding the rows it deletes while that waits for it.)
            let (count, last) = try await write { context in
                let sql = context.sql
                // Records with at least one version past the all-kept period, in key order.
                let query: PostgresQuery
                if let start {
                    query = """
                        SELECT DISTINCT owner, zone, record_name, created_seq FROM versions
                        WHERE modified_at < \(oldest) AND (owner, zone, record_name, created_seq) > (\(start.owner), \(start.zone), \(start.recordName), \(start.createdSeq))
                        ORDER BY owner, zone, record_name, created_seq LIMIT \(maxRecords)
                        """
                } else {
                    query = """
                        SELECT DISTINCT owner, zone, record_name, created_seq FROM versions
                        WHERE modified_at < \(oldest) ORDER BY owner, zone, record_name, created_seq LIMIT \(maxRecords)
                        """
                }
                let keys = try await sql.rows(query).map { row in
                    let (owner, zone, recordName, createdSeq) = try row.decode((String, String, String, Int64).self)
                    return (owner: owner, zone: zone, recordName: recordName, createdSeq: createdSeq)
                }
                var count = 0
                for key in keys {
                    let versions = try await sql.rows(
                        """
                        SELECT seq, modified_at FROM versions
                        WHERE owner = \(key.owner) AND zone = \(key.zone) AND record_name = \(key.recordName) AND created_seq = \(key.createdSeq)
                        """
                    ).map { try $0.decode((Int64, Double).self) }
                    let expired = retention.expired(versions.map { Date(stored: $0.1) }, now: now).map { versions[$0].0 }
                    if !expired.isEmpty {
                        try await sql.execute(
                            """
                            DELETE FROM versions
                            WHERE owner = \(key.owner) AND zone = \(key.zone) AND record_name = \(key.recordName) AND created_seq = \(key.createdSeq) AND seq = ANY(\(expired))
                            """)
                    }
                    count += expired.count
                }
                return (count, keys.count == maxRecords ? keys.last : nil)
            }
            removed += count
            after = last
        } while after != nil
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

    package func passwordAttempts(_ keys: [String]) async throws(NotesError) -> [(windowStart: Double, failures: Int, key: String)] {
        try await readOne { sql in
            try await sql.rows("SELECT window_start, failures, key FROM password_attempts WHERE key = ANY(\(keys))").map { row in
                let (windowStart, failures, key) = try row.decode((Double, Int, String).self)
                return (windowStart: windowStart, failures: failures, key: key)
            }
        }
    }

    package func countPasswordFailure(_ keys: [String]) async throws(NotesError) {
        try await write(sequenced: false) { context in
            let now = context.now.storedValue
            let window = Limits.passwordWindowSeconds
            for key in keys {
                // A new window starts when the last one is over.
                try await context.sql.execute(
                    """
                    INSERT INTO password_attempts AS a (key, window_start, failures) VALUES (\(key), \(now), 1)
                    ON CONFLICT (key) DO UPDATE SET
                        failures = CASE WHEN a.window_start + \(window) <= excluded.window_start THEN 1 ELSE a.failures + 1 END,
                        window_start = CASE WHEN a.window_start + \(window) <= excluded.window_start THEN excluded.window_start ELSE a.window_start END
                    """)
            }
            // Old windows are of no use: keep the table small.
            try await context.sql.execute("DELETE FROM password_attempts WHERE window_start < \(now - 2 * window)")
        }
    }
}
