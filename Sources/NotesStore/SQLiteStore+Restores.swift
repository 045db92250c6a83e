public import Foundation
import GRDB
public import NotesModel

/// Restores written in turns (`RestoreRules`): the row that hides their records and
/// holds the zone's change pages until the last turn.
extension SQLiteStore {
    public func beginRestore(_ id: String, in zone: ZoneID, actor: String) async throws(NotesError) {
        try await write { context in
            _ = try ZoneAccess.load(context.db, zone: zone, actor: actor)
            try context.db.cachedStatement(sql: "INSERT INTO restores (id, owner, zone, since_seq, started_at) VALUES (?, ?, ?, ?, ?)")
                .execute(arguments: [id, zone.owner, zone.name, context.seq, context.now.storedValue])
        }
    }

    public func finishRestore(_ id: String, in zone: ZoneID) async throws(NotesError) {
        try await write { context in
            try context.db.cachedStatement(sql: "DELETE FROM restores WHERE id = ?").execute(arguments: [id])
            // A change of its own: the zone's pages move past the restore, and the
            // database's change token and every client's notice say the zone changed.
            _ = context.nextSeq()
            try context.zoneChanged(zone)
        }
    }

    public func unfinishedRestores(startedBefore: Date) async throws(NotesError) -> [UnfinishedRestore] {
        try await readAside { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT id, owner, zone FROM restores WHERE started_at < ? ORDER BY started_at"), arguments: [startedBefore.storedValue]
            ).map { row in
                let id: String = row[0]
                let records = try Row.fetchAll(
                    db.cachedStatement(sql: "SELECT record_name, parent FROM records WHERE restore_id = ?"), arguments: [id]
                ).map { (recordName: $0[0] as String, parent: ($0[1] as String).isEmpty ? nil : $0[1] as String?) }
                return UnfinishedRestore(id: id, zone: ZoneID(owner: row[1], name: row[2]), records: records)
            }
        }
    }

    /// The records of `zone` that restores under way have brought back so far: no one
    /// sees them until their restore finishes. Empty (one indexed probe) when none runs.
    static func restoring(_ db: Database, in zone: ZoneID) throws -> Set<String> {
        Set(
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT r.record_name FROM restores x JOIN records r ON r.restore_id = x.id
                        WHERE x.owner = ? AND x.zone = ? AND r.owner = x.owner AND r.zone = x.zone
                        """), arguments: [zone.owner, zone.name]))
    }

    /// SQL true for a record no restore under way hides (for queries over `records r`).
    static let shownRecord = "(r.restore_id IS NULL OR r.restore_id NOT IN (SELECT id FROM restores))"
}
