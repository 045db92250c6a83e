public import Foundation
public import NotesModel
import PostgresNIO

/// Restores written in turns (`RestoreRules`), as `SQLiteStore` keeps them: the row
/// that hides their records and holds the zone's change pages until the last turn.
extension PostgresStore {
    public func beginRestore(_ id: String, in zone: ZoneID, actor: String) async throws(NotesError) {
        try await write(.zone(zone)) { context in
            _ = try await PostgresRecords.access(context.sql, zone: zone, actor: actor)
            // Holding the zone's counter: every change of the restore comes after this.
            try await context.sql.execute(
                """
                INSERT INTO restores (id, owner, zone, since_seq, started_at) VALUES (\(id), \(zone.owner), \(zone.name), \(try context.lastSeq(in: zone)), \(context.now.storedValue))
                """)
        }
    }

    public func finishRestore(_ id: String, in zone: ZoneID) async throws(NotesError) {
        try await write(.zone(zone)) { context in
            try await context.sql.execute("DELETE FROM restores WHERE id = \(id)")
            // A change of its own: the zone's pages move past the restore, and the
            // database's change token and every client's notice say the zone changed.
            _ = try context.nextSeq()
            try await context.zoneChanged(zone)
        }
    }

    public func unfinishedRestores(startedBefore: Date) async throws(NotesError) -> [UnfinishedRestore] {
        try await read { sql in
            var unfinished: [UnfinishedRestore] = []
            for row in try await sql.rows("SELECT id, owner, zone FROM restores WHERE started_at < \(startedBefore.storedValue) ORDER BY started_at") {
                let (id, owner, zone) = try row.decode((String, String, String).self)
                let records = try await sql.rows("SELECT record_name, parent FROM records WHERE restore_id = \(id)").map { row in
                    let (name, parent) = try row.decode((String, String).self)
                    return (recordName: name, parent: parent.isEmpty ? nil : parent as String?)
                }
                unfinished.append(UnfinishedRestore(id: id, zone: ZoneID(owner: owner, name: zone), records: records))
            }
            return unfinished
        }
    }

    /// The records of `zone` that restores under way have brought back so far: no one
    /// sees them until their restore finishes. Empty (one indexed probe) when none runs.
    static func restoring(_ sql: SQL, in zone: ZoneID) async throws -> Set<String> {
        Set(
            try await sql.column(
                """
                SELECT r.record_name FROM restores x JOIN records r ON r.restore_id = x.id
                WHERE x.owner = \(zone.owner) AND x.zone = \(zone.name) AND r.owner = x.owner AND r.zone = x.zone
                """, as: String.self))
    }

    /// SQL true for a record no restore under way hides (for queries over `records r`).
    static let shownRecord = "(r.restore_id IS NULL OR r.restore_id NOT IN (SELECT id FROM restores))"
}
