import Foundation
import GRDB
public import NotesModel
import NotesStoreRules

extension SQLiteStore {
    /// Marks the change counter with the store's clock, then deletes the tombstones at or
    /// before the newest mark that is `TombstoneRetention.keptSeconds` old, a thousand
    /// per transaction; each zone keeps the last change number it lost (`pruned_seq`), so
    /// that a token from before it is told to start over. Returns how many went.
    @discardableResult
    public func pruneTombstones() async throws(NotesError) -> Int {
        let now = clock()
        let horizon = TombstoneRetention.horizon(now)
        let through: Int64? = try await write { context in
            let db = context.db
            try db.execute(sql: "INSERT INTO counter_marks (at, seq) VALUES (?, ?)", arguments: [now.storedValue, context.seq])
            let through = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM counter_marks WHERE at <= ?", arguments: [horizon])
            // (The newest mark past the horizon stays: it is the next pass's bound.)
            try db.execute(sql: "DELETE FROM counter_marks WHERE at < (SELECT MAX(at) FROM counter_marks WHERE at <= ?)", arguments: [horizon])
            return through
        }
        guard let through else { return 0 }
        var removed = 0
        while true {
            let count: Int = try await write { context in
                let db = context.db
                let rows = try Row.fetchAll(
                    db, sql: "SELECT rowid, owner, zone, seq FROM tombstones WHERE seq <= ? ORDER BY seq LIMIT ?",
                    arguments: [through, TombstoneRetention.rowsPerTransaction])
                var lost: [ZoneID: Int64] = [:]
                for row in rows {
                    let zone = ZoneID(owner: row["owner"], name: row["zone"])
                    lost[zone] = max(lost[zone] ?? 0, row["seq"])
                    try db.cachedStatement(sql: "DELETE FROM tombstones WHERE rowid = ?").execute(arguments: [row["rowid"] as Int64])
                }
                for (zone, seq) in lost {
                    try db.cachedStatement(sql: "UPDATE zones SET pruned_seq = MAX(pruned_seq, ?) WHERE owner = ? AND name = ?").execute(arguments: [
                        seq, zone.owner, zone.name,
                    ])
                }
                return rows.count
            }
            removed += count
            if count < TombstoneRetention.rowsPerTransaction { break }
        }
        if removed > 0 { logger.info("tombstone retention", metadata: ["removed": "\(removed)"]) }
        return removed
    }
}
