import Foundation
import GRDB
public import NotesModel

/// What each account stores (kept exact by triggers, see migration v6), and the
/// thinning of old versions by `VersionRetention`.
enum Storage {
    static func used(_ db: Database, by owner: String) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT bytes FROM usage WHERE owner = ?"), arguments: [owner]) ?? 0
    }
}

extension SQLiteStore {
    /// Bytes the account's zones hold, and its quota (nil: none).
    public func usage(of account: String) async throws(NotesError) -> (used: Int64, quota: Int64?) {
        let quota = storage.quotaBytes
        return try await read { db in (try Storage.used(db, by: account), quota) }
    }

    /// Deletes the versions that `storage.retention` no longer keeps, at most
    /// `maxRecords` records' histories per transaction so that the writer is held for
    /// milliseconds at a time; returns how many versions went.
    @discardableResult
    public func pruneVersions(maxRecords: Int = 200) async throws(NotesError) -> Int {
        let retention = storage.retention
        let now = clock()
        let oldest = retention.expiring(at: now).storedValue
        try await dropAbandonedContents()
        var removed = 0
        var after: (String, String, String, Int64)? = nil
        while true {
            let start = after
            let (count, last): (Int, (String, String, String, Int64)?) = try await write { context in
                let db = context.db
                // Records with at least one version past the all-kept period, in key order.
                var sql = "SELECT DISTINCT owner, zone, record_name, created_seq FROM versions WHERE modified_at < ?"
                var arguments: StatementArguments = [oldest]
                if let start {
                    sql += " AND (owner, zone, record_name, created_seq) > (?, ?, ?, ?)"
                    arguments += [start.0, start.1, start.2, start.3]
                }
                sql += " ORDER BY owner, zone, record_name, created_seq LIMIT ?"
                arguments += [maxRecords]
                let keys = try Row.fetchAll(db, sql: sql, arguments: arguments).map { ($0[0] as String, $0[1] as String, $0[2] as String, $0[3] as Int64) }
                var count = 0
                for key in keys {
                    let rows = try Row.fetchAll(
                        db.cachedStatement(
                            sql: """
                                SELECT rowid, modified_at FROM versions WHERE owner = ? AND zone = ? AND record_name = ? AND created_seq = ?
                                """), arguments: [key.0, key.1, key.2, key.3])
                    let expired = retention.expired(rows.map { Date(stored: $0[1]) }, now: now)
                    for index in expired {
                        try db.cachedStatement(sql: "DELETE FROM versions WHERE rowid = ?").execute(arguments: [rows[index][0] as Int64])
                    }
                    count += expired.count
                }
                return (count, keys.count == maxRecords ? keys.last : nil)
            }
            removed += count
            guard let last else { break }
            after = last
        }
        if removed > 0 { logger.info("version retention", metadata: ["removed": "\(removed)"]) }
        return removed
    }
}
