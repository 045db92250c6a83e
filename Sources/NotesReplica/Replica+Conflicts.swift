import Foundation
import GRDB
public import NotesModel

/// A copy of a local edit kept beside the note it could not be merged into.
public struct ReplicaConflict: Sendable, Equatable {
    public var copy: RecordKey
    /// Where the mount showed the copy when it was made (relative to the mount).
    public var path: String
    /// The note the edit was meant for.
    public var noteName: String
    public var createdAt: Double
}

/// Settling a queued change the server refused because someone else changed the record:
/// each step applies only while the row still holds the change that was refused (its
/// queue position `dirty`), so a save made meanwhile is never overwritten.
extension Replica {
    /// Replaces a queued change by its merge with the server's version: the row now builds
    /// on the server's change tag and stays queued. `nil` if the row changed meanwhile
    /// (the next upload meets the server's version again and merges anew).
    public func rebase(_ key: RecordKey, dirty: Int64, onto server: NotesModel.Record, name: String, parent: String?, content: [UInt8]?) throws(ReplicaError) -> ReplicaRecord? {
        try write("merge \(key)") { db in
            guard var row = try Self.row(db, key), row.dirty == dirty else { return nil }
            row.name = name
            row.parent = parent
            row.changeTag = server.changeTag
            row.shareID = server.shareID
            row.modifiedAt = Date().timeIntervalSince1970
            if let content { row.size = content.count }
            row.dirty = self.nextDirty()
            try Self.upsert(db, row, content: content)
            return row
        }
    }

    /// Gives a record the server's state, dropping the refused local change (a delete that
    /// lost to an edit, or an edit kept as a copy). `nil` if the row changed meanwhile.
    public func adopt(_ server: NotesModel.Record, dirty: Int64) throws(ReplicaError) -> ReplicaRecord? {
        let zone = server.zone
        return try write("take the server's \(server.name)") { db in
            guard let row = try Self.row(db, RecordKey(zone: zone, recordName: server.recordName)), row.dirty == dirty else { return nil }
            let (adopted, content) = Self.row(server, in: zone)
            try Self.upsert(db, adopted, content: content)
            return adopted
        }
    }

    /// Takes records as the server has them now, unless they have local changes (for
    /// records settled by hand, whose later versions a fetch may have passed over).
    public func refresh(_ records: [NotesModel.Record], in zone: ZoneID) throws(ReplicaError) -> [ReplicaRecord] {
        try write("refresh records of \(zone)") { db in
            var updated: [ReplicaRecord] = []
            for record in records {
                let local = try Self.row(db, RecordKey(zone: zone, recordName: record.recordName))
                guard local == nil || (local!.dirty == 0 && local!.changeTag != record.changeTag) else { continue }
                let (row, content) = Self.row(record, in: zone)
                try Self.upsert(db, row, content: content)
                updated.append(row)
            }
            return updated
        }
    }

    /// Keeps a refused local edit as a new record (queued for upload) and gives the
    /// record it was made on the server's state (`server`), or drops that row when the
    /// server's record cannot take it (`nil`): one transaction, so a crash keeps the edit
    /// in one place or the other. Remembered for `notes status`. `nil` if the row changed
    /// meanwhile.
    public func keepConflictCopy(
        _ copy: ReplicaRecord, content: [UInt8], of key: RecordKey, dirty: Int64, adopting server: NotesModel.Record?, noteName: String
    ) throws(ReplicaError) -> (note: ReplicaRecord?, copy: ReplicaRecord)? {
        var stored = copy
        stored.dirty = nextDirty()
        stored.deleted = false
        let row = stored
        return try write("keep a conflict copy of \(noteName)") { db in
            guard let current = try Self.row(db, key), current.dirty == dirty else { return nil }
            var note: ReplicaRecord?
            if let server {
                let (adopted, content) = Self.row(server, in: key.zone)
                try Self.upsert(db, adopted, content: content)
                note = adopted
            } else {
                try db.execute(
                    sql: "DELETE FROM records WHERE owner = ? AND zone = ? AND record_name = ?",
                    arguments: [key.zone.owner, key.zone.name, key.recordName])
            }
            try Self.upsert(db, row, content: content, keepTag: true)
            try db.execute(
                sql: "INSERT OR REPLACE INTO conflicts (owner, zone, record_name, path, note_name, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [row.zone.owner, row.zone.name, row.recordName, row.name, noteName, row.createdAt])
            return (note, row)
        }
    }

    /// Where the mount shows a conflict copy, once it is placed.
    public func setConflictPath(_ key: RecordKey, _ path: String) throws(ReplicaError) {
        try write("save the place of \(key)") { db in
            try db.execute(
                sql: "UPDATE conflicts SET path = ? WHERE owner = ? AND zone = ? AND record_name = ?",
                arguments: [path, key.zone.owner, key.zone.name, key.recordName])
        }
    }

    /// Notes and files of a zone with local changes not uploaded yet (not deletes).
    public func unsentEdits(in zone: ZoneID) throws(ReplicaError) -> [PendingChange] {
        try read("read the unsent edits of \(zone)") { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.metadataColumns), content FROM records
                    WHERE owner = ? AND zone = ? AND dirty > 0 AND deleted = 0 AND record_type != 'folder' ORDER BY dirty
                    """,
                arguments: [zone.owner, zone.name]
            ).map(Self.pendingChange)
        }
    }

    /// Conflict copies that still exist (deleting a copy settles its conflict).
    public func conflicts() throws(ReplicaError) -> [ReplicaConflict] {
        try read("read conflicts") { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT c.owner, c.zone, c.record_name, c.path, c.note_name, c.created_at FROM conflicts c
                    JOIN records r ON r.owner = c.owner AND r.zone = c.zone AND r.record_name = c.record_name AND r.deleted = 0
                    ORDER BY c.created_at
                    """
            ).map { row in
                ReplicaConflict(copy: RecordKey(zone: ZoneID(owner: row[0], name: row[1]), recordName: row[2]), path: row[3], noteName: row[4], createdAt: row[5])
            }
        }
    }

    /// Names in use in a folder (`parent` nil: the zone's root), to pick a free one.
    public func names(in zone: ZoneID, parent: String?) throws(ReplicaError) -> Set<String> {
        try read("list \(zone)") { db in
            Set(
                try String.fetchAll(
                    db, sql: "SELECT name FROM records WHERE owner = ? AND zone = ? AND parent IS ? AND deleted = 0",
                    arguments: [zone.owner, zone.name, parent]))
        }
    }

    /// Moves a queued change to the end of the queue (notesd refused its name, which
    /// another change queued here may free). `false` if the row changed meanwhile.
    public func requeue(_ key: RecordKey, dirty: Int64) throws(ReplicaError) -> Bool {
        try write("queue \(key) again") { db in
            try db.execute(
                sql: "UPDATE records SET dirty = ? WHERE owner = ? AND zone = ? AND record_name = ? AND dirty = ?",
                arguments: [self.nextDirty(), key.zone.owner, key.zone.name, key.recordName, dirty])
            return db.changesCount > 0
        }
    }

    /// Whether the zone has queued changes besides `key`'s.
    public func hasOtherChanges(in zone: ZoneID, than key: RecordKey) throws(ReplicaError) -> Bool {
        try read("read the upload queue") { db in
            try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM records WHERE owner = ? AND zone = ? AND record_name != ? AND dirty > 0)",
                arguments: [zone.owner, zone.name, key.recordName]) ?? false
        }
    }

    /// Gives a queued record another name and queues it again (notesd refused its name:
    /// another note holds it). `nil` if the row changed meanwhile.
    public func rename(_ key: RecordKey, dirty: Int64, to name: String) throws(ReplicaError) -> ReplicaRecord? {
        try write("rename \(key)") { db in
            guard var row = try Self.row(db, key), row.dirty == dirty else { return nil }
            row.name = name
            row.dirty = self.nextDirty()
            try db.execute(
                sql: "UPDATE records SET name = ?, dirty = ? WHERE owner = ? AND zone = ? AND record_name = ?",
                arguments: [name, row.dirty, key.zone.owner, key.zone.name, key.recordName])
            return row
        }
    }

    /// Moves a queued record to its zone's root (its folder is gone on the server).
    public func moveToRoot(_ key: RecordKey, dirty: Int64) throws(ReplicaError) -> ReplicaRecord? {
        try write("move \(key) to the zone's root") { db in
            guard var row = try Self.row(db, key), row.dirty == dirty else { return nil }
            row.parent = nil
            try db.execute(
                sql: "UPDATE records SET parent = NULL WHERE owner = ? AND zone = ? AND record_name = ?",
                arguments: [key.zone.owner, key.zone.name, key.recordName])
            return row
        }
    }

    /// The rows of `keys` that are not deleted, as the replica holds them now.
    public func liveRecords(_ keys: [RecordKey]) throws(ReplicaError) -> [ReplicaRecord] {
        try read("read \(keys.count) records") { db in
            try keys.compactMap { try Self.row(db, $0) }.filter { !$0.deleted }
        }
    }

    static func row(_ db: Database, _ key: RecordKey) throws -> ReplicaRecord? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(metadataColumns) FROM records WHERE owner = ? AND zone = ? AND record_name = ?"),
            arguments: [key.zone.owner, key.zone.name, key.recordName]
        ).map(record)
    }
}
