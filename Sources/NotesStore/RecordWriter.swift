import Foundation
import GRDB
import NotesModel

/// Applies the saves and deletes of one modify operation inside its transaction,
/// deciding each one with `SharingRules` against the caller's `ZoneAccess`.
final class RecordWriter {
    let context: WriteContext
    let access: ZoneAccess
    let actor: String
    /// Folders already read in this operation (a batch usually fills one folder).
    private var folders: [String: NotesModel.Record] = [:]

    init(context: WriteContext, access: ZoneAccess, actor: String) {
        self.context = context
        self.access = access
        self.actor = actor
    }
    var zone: ZoneID { access.zone }
    var db: Database { context.db }

    /// Deletes one record. Children must be gone already or be deleted or moved away in
    /// the same operation (`deleting`, `savedParents`); the owner deleting a share's root
    /// stops the share. Returns false, changing nothing, for a folder that the
    /// operation's saves empty: it is deleted again after them.
    @discardableResult
    func delete(_ delete: RecordDelete, deleting: Set<String>, savedParents: [String: String] = [:]) throws -> Bool {
        let existing = try StoredRecord.fetchMetadata(db, delete.recordName, in: zone)
        let rootOf: String?
        do {
            rootOf = try RecordRules.checkDelete(delete, existing: existing, access: access)
        } catch {
            throw try withServerRecord(error, delete.recordName)
        }
        guard let existing else { return true }
        let children = try String.fetchAll(
            db.cachedStatement(sql: "SELECT record_name FROM records WHERE owner = ? AND zone = ? AND parent = ?"),
            arguments: [zone.owner, zone.name, existing.recordName])
        guard try RecordRules.checkEmptied(existing, children: children, deleting: deleting, savedParents: savedParents) == .now else { return false }
        let seq = context.nextSeq()
        try StoredRecord.keepVersion(db, existing.recordName, in: zone)
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO trash (owner, zone, record_name, created_seq, version_seq, deleted_seq, record_type, name, parent, share_id, size, deleted_by, deleted_at)
                SELECT owner, zone, record_name, created_seq, seq, ?, record_type, name, parent, share_id, \(StoredRecord.recordSize), ?, ?
                FROM records WHERE owner = ? AND zone = ? AND record_name = ?
                """
        ).execute(arguments: [seq, actor, context.now.storedValue, zone.owner, zone.name, existing.recordName])
        try db.cachedStatement(sql: "DELETE FROM records WHERE owner = ? AND zone = ? AND record_name = ?").execute(arguments: [zone.owner, zone.name, existing.recordName])
        folders[existing.recordName] = nil
        try db.cachedStatement(sql: "INSERT INTO tombstones (owner, zone, record_name, seq, share_id, kind) VALUES (?, ?, ?, ?, ?, 'deleted')").execute(arguments: [
            zone.owner, zone.name, existing.recordName, seq, existing.shareID,
        ])
        if let rootOf {
            folders.removeAll()
            try ShareWriter(context: context).stop(shareID: rootOf, zone: zone)
        }
        return true
    }

    /// Creates or updates one record; an update first keeps the previous state as a version.
    /// - Parameter contentID: the row of `contents` holding the save's content, written
    ///   apart before this transaction (`SeparateContents`); `nil`: the content is inline.
    func save(_ save: RecordSave, contentID: Int64? = nil) throws -> NotesModel.Record {
        let body = contentID == nil ? StoredRecord.storedText(save.body) : nil
        let bytes = contentID == nil ? save.bytes : nil
        let existing = try StoredRecord.fetchMetadata(db, save.recordName, in: zone)
        try RecordRules.checkName(save, existing: existing)
        var parentShare = access.zoneWideShare
        if let parentName = save.parent {
            parentShare = try RecordRules.checkParent(save, parentName, parent: try folder(parentName), existing: existing, access: access)
        }
        let ownShare = access.rootShares[save.recordName]
        let newShare = ownShare ?? parentShare
        let seq = context.nextSeq()

        if let existing {
            try checkUpdate(save, existing: existing, ownShare: ownShare, parentShare: parentShare, newShare: newShare)
            try StoredRecord.keepVersion(db, save.recordName, in: zone)
            try db.cachedStatement(
                sql: """
                    UPDATE records SET name = ?, parent = ?, body = ?, bytes = ?, content_id = ?, modified_at = ?, modified_by = ?, seq = ?, share_id = ?
                    WHERE owner = ? AND zone = ? AND record_name = ?
                    """
            ).execute(arguments: [
                save.name, save.parent ?? "", body, bytes, contentID, context.now.storedValue, actor, seq, newShare,
                zone.owner, zone.name, save.recordName,
            ])
            if existing.shareID != newShare {
                try moveSubtree(of: existing, from: existing.shareID, to: newShare, recordSeq: seq)
            }
        } else {
            try RecordRules.checkCreate(save, newShare: newShare, access: access)
            try db.cachedStatement(
                sql: """
                    INSERT INTO records (owner, zone, record_name, record_type, name, parent, body, bytes, content_id, created_at, modified_at, modified_by, seq, share_id, created_seq)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                zone.owner, zone.name, save.recordName, save.recordType.rawValue, save.name, save.parent ?? "", body, bytes, contentID,
                context.now.storedValue, context.now.storedValue, actor, seq, newShare, seq,
            ])
        }
        let saved = RecordRules.saved(save, zone: zone, existing: existing, now: context.now, actor: actor, seq: seq, share: newShare)
        if save.recordType == .folder { folders[save.recordName] = saved }
        return saved
    }

    /// A folder of the zone, read once per operation.
    private func folder(_ recordName: String) throws -> NotesModel.Record? {
        if let known = folders[recordName] { return known }
        let record = try StoredRecord.fetchMetadata(db, recordName, in: zone)
        if let record, record.recordType == .folder { folders[recordName] = record }
        return record
    }

    /// A rule's error; a `serverRecordChanged` gets the server's record attached.
    private func withServerRecord(_ error: NotesError, _ recordName: String) throws -> NotesError {
        guard error.code == .serverRecordChanged else { return error }
        var error = error
        error.serverRecord = try StoredRecord.fetch(db, recordName, in: zone)
        return error
    }

    private func checkUpdate(_ save: RecordSave, existing: NotesModel.Record, ownShare: String?, parentShare: String?, newShare: String?) throws {
        let moved: Bool
        do {
            moved = try RecordRules.checkUpdate(save, existing: existing, ownShare: ownShare, newShare: newShare, access: access)
        } catch {
            throw try withServerRecord(error, existing.recordName)
        }
        guard moved else { return }
        if let parent = save.parent {
            // Walk up from the new parent: meeting the record itself means a cycle.
            var cursor: String? = parent
            var steps = 0
            while let current = cursor {
                try RecordRules.checkAncestor(current, of: save, existing: existing, steps: steps)
                cursor = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT parent FROM records WHERE owner = ? AND zone = ? AND record_name = ?"),
                    arguments: [zone.owner, zone.name, current]
                ).flatMap { $0.isEmpty ? nil : $0 }
                steps += 1
            }
        }
        if try RecordRules.checkMove(existing: existing, ownShare: ownShare, parentShare: parentShare, newShare: newShare) {
            try RecordRules.checkNoNestedShare(existing, below: try StoredRecord.descendants(db, of: existing.recordName, in: zone), access: access)
        }
    }

    /// A record changed share: its participants' views must drop or gain it and every
    /// record below it.
    private func moveSubtree(of record: NotesModel.Record, from oldShare: String?, to newShare: String?, recordSeq: Int64) throws {
        if let oldShare {
            try db.cachedStatement(sql: "INSERT INTO tombstones (owner, zone, record_name, seq, share_id, kind) VALUES (?, ?, ?, ?, ?, 'left')").execute(arguments: [
                zone.owner, zone.name, record.recordName, recordSeq, oldShare,
            ])
        }
        guard record.recordType == .folder else { return }
        folders.removeAll()
        for name in try StoredRecord.descendants(db, of: record.recordName, in: zone) {
            try ShareWriter(context: context).setShare(of: name, in: zone, from: oldShare, to: newShare)
        }
    }
}
