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

    /// Deletes one record. Children must be gone already or be deleted in the same
    /// operation (`deleting`); the owner deleting a share's root stops the share.
    func delete(_ delete: RecordDelete, deleting: Set<String>) throws {
        guard let existing = try StoredRecord.fetchMetadata(db, delete.recordName, in: zone), access.canRead(shareID: existing.shareID) else {
            throw NotesError(.unknownItem, "There is no record \(delete.recordName) in this zone; it may have been deleted already.")
        }
        let rootOf = access.rootShares[existing.recordName]
        try SharingRules.check(rootOf == nil ? .deleteRecord : .deleteRoot, standing: access.standing(forShare: existing.shareID), what: "“\(existing.name)”")
        if let tag = delete.changeTag, tag != existing.changeTag {
            throw NotesError(.serverRecordChanged, "“\(existing.name)” changed on the server since you last fetched it; fetch it again before deleting.",
                             serverRecord: try StoredRecord.fetch(db, existing.recordName, in: zone))
        }
        let children = try String.fetchAll(db.cachedStatement(sql: "SELECT record_name FROM records WHERE owner = ? AND zone = ? AND parent = ?"),
                                           arguments: [zone.owner, zone.name, existing.recordName])
        if children.contains(where: { !deleting.contains($0) }) {
            throw NotesError(.folderNotEmpty, "The folder “\(existing.name)” is not empty; delete what it holds first.")
        }
        let seq = context.nextSeq()
        try StoredRecord.keepVersion(db, existing.recordName, in: zone)
        try db.cachedStatement(sql: "DELETE FROM records WHERE owner = ? AND zone = ? AND record_name = ?").execute(arguments: [zone.owner, zone.name, existing.recordName])
        folders[existing.recordName] = nil
        try db.cachedStatement(sql: "INSERT INTO tombstones (owner, zone, record_name, seq, share_id, kind) VALUES (?, ?, ?, ?, ?, 'deleted')").execute(arguments: [zone.owner, zone.name, existing.recordName, seq, existing.shareID])
        if let rootOf {
            folders.removeAll()
            try ShareWriter(context: context).stop(shareID: rootOf, zone: zone)
        }
    }

    /// Creates or updates one record; an update first keeps the previous state as a version.
    func save(_ save: RecordSave) throws -> NotesModel.Record {
        let existing = try StoredRecord.fetchMetadata(db, save.recordName, in: zone)
        // A new name must be visible; one stored before that rule may stay as it is.
        if existing?.name != save.name { try Names.validateNewName(save.name, what: "name") }
        var parentShare = access.zoneWideShare
        if let parentName = save.parent {
            // A participant may not see the parent of a share's root; keeping the parent a
            // record already has needs no access to it, choosing a new one does.
            let keepsParent = existing?.parent == parentName
            guard let parent = try folder(parentName), keepsParent || access.canRead(shareID: parent.shareID) else {
                throw NotesError(.unknownItem, "The parent folder \(parentName) of “\(save.name)” does not exist in this zone.")
            }
            guard parent.recordType == .folder else {
                throw NotesError(.invalidArguments, "“\(parent.name)” is a \(parent.recordType.rawValue), not a folder; only folders hold records.")
            }
            parentShare = parent.shareID
        }
        let ownShare = access.rootShares[save.recordName]
        let newShare = ownShare ?? parentShare
        let seq = context.nextSeq()

        if let existing {
            try checkUpdate(save, existing: existing, ownShare: ownShare, parentShare: parentShare, newShare: newShare)
            try StoredRecord.keepVersion(db, save.recordName, in: zone)
            try db.cachedStatement(sql: """
                UPDATE records SET name = ?, parent = ?, body = ?, bytes = ?, modified_at = ?, modified_by = ?, seq = ?, share_id = ?
                WHERE owner = ? AND zone = ? AND record_name = ?
                """).execute(arguments: [save.name, save.parent ?? "", StoredRecord.storedText(save.body), save.bytes, context.now.storedValue, actor, seq, newShare,
                                 zone.owner, zone.name, save.recordName])
            if existing.shareID != newShare {
                try moveSubtree(of: existing, from: existing.shareID, to: newShare, recordSeq: seq)
            }
        } else {
            if save.changeTag != nil {
                throw NotesError(.unknownItem, "“\(save.name)” no longer exists on the server; it was deleted. Save it again as a new record.")
            }
            try SharingRules.check(.createRecord, standing: access.standing(forShare: newShare), what: "that folder")
            try db.cachedStatement(sql: """
                INSERT INTO records (owner, zone, record_name, record_type, name, parent, body, bytes, created_at, modified_at, modified_by, seq, share_id, created_seq)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [zone.owner, zone.name, save.recordName, save.recordType.rawValue, save.name, save.parent ?? "", StoredRecord.storedText(save.body), save.bytes,
                                 context.now.storedValue, context.now.storedValue, actor, seq, newShare, seq])
        }
        // The saved record goes back without its content: the client sent it and has it.
        let saved = NotesModel.Record(
            recordName: save.recordName, zone: zone, recordType: save.recordType, name: save.name, parent: save.parent,
            body: nil, bytes: nil, createdAt: existing?.createdAt ?? context.now, modifiedAt: context.now,
            modifiedBy: actor, changeTag: StoredRecord.changeTag(seq), shareID: newShare)
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

    private func checkUpdate(_ save: RecordSave, existing: NotesModel.Record, ownShare: String?, parentShare: String?, newShare: String?) throws {
        let standing = access.standing(forShare: existing.shareID)
        guard access.canRead(shareID: existing.shareID) else {
            throw NotesError(.permissionFailure, "You have no access to the record \(save.recordName).")
        }
        let what = "“\(existing.name)”"
        let moved = existing.parent != save.parent
        if ownShare != nil {
            try SharingRules.check(.modifyRoot, standing: standing, what: what)
            if moved { try SharingRules.check(.moveRoot, standing: standing, what: what) }
        } else {
            try SharingRules.check(.modifyRecord, standing: standing, what: what)
        }
        if save.changeTag != existing.changeTag {
            let message = save.changeTag == nil
                ? "A record named \(save.recordName) already exists; fetch it and save with its change tag."
                : "\(what) changed on the server since you last fetched it; merge with the server's version and save again."
            throw NotesError(.serverRecordChanged, message, serverRecord: try StoredRecord.fetch(db, existing.recordName, in: zone))
        }
        guard existing.recordType == save.recordType else {
            throw NotesError(.invalidArguments, "\(what) is a \(existing.recordType.rawValue); a save cannot turn it into a \(save.recordType.rawValue).")
        }
        guard moved else { return }
        if !access.isOwner && newShare != existing.shareID {
            throw NotesError(.permissionFailure, "You can move \(what) only within the share that holds it.")
        }
        if let parent = save.parent {
            // Walk up from the new parent: meeting the record itself means a cycle.
            var cursor: String? = parent
            var steps = 0
            while let current = cursor {
                if current == save.recordName {
                    throw NotesError(.invalidArguments, "Cannot move the folder \(what) into itself or one of its own subfolders.")
                }
                cursor = try String.fetchOne(db.cachedStatement(sql: "SELECT parent FROM records WHERE owner = ? AND zone = ? AND record_name = ?"),
                                             arguments: [zone.owner, zone.name, current]).flatMap { $0.isEmpty ? nil : $0 }
                steps += 1
                if steps > 10_000 { throw NotesError(.internalError, "The folder tree of this zone is corrupt (a cycle).") }
            }
        }
        if ownShare != nil, parentShare != nil {
            throw NotesError(.alreadyShared, "\(what) is the root of a share and cannot move into another shared folder.")
        }
        if newShare != nil, newShare != existing.shareID, existing.recordType == .folder {
            let below = try StoredRecord.descendants(db, of: existing.recordName, in: zone)
            if let nested = below.first(where: { access.rootShares[$0] != nil }) {
                throw NotesError(.alreadyShared, "\(what) holds \(nested), which has a share of its own; shares cannot nest.")
            }
        }
    }

    /// A record changed share: its participants' views must drop or gain it and every
    /// record below it.
    private func moveSubtree(of record: NotesModel.Record, from oldShare: String?, to newShare: String?, recordSeq: Int64) throws {
        if let oldShare {
            try db.cachedStatement(sql: "INSERT INTO tombstones (owner, zone, record_name, seq, share_id, kind) VALUES (?, ?, ?, ?, ?, 'left')").execute(arguments: [zone.owner, zone.name, record.recordName, recordSeq, oldShare])
        }
        guard record.recordType == .folder else { return }
        folders.removeAll()
        for name in try StoredRecord.descendants(db, of: record.recordName, in: zone) {
            try ShareWriter(context: context).setShare(of: name, in: zone, from: oldShare, to: newShare)
        }
    }
}
