public import Foundation

/// A deleted record, kept with its last version until the trash is emptied of it
/// (`StoragePolicy.trashDays` after the delete). Restoring it brings back the same
/// record: its record name, its history, its content.
public struct TrashedRecord: Sendable, Codable, Equatable {
    public var recordName: String
    public var recordType: RecordType
    /// Its name and parent folder (a record name; nil: the zone's root) when deleted.
    public var name: String
    public var parent: String?
    /// Bytes of content it held.
    public var size: Int
    /// The share it was in, if any: a participant sees the deleted records of the
    /// shares they can read.
    public var shareID: String?
    public var deletedBy: String
    public var deletedAt: Date
    /// The change tag of its last version (its content in `versions`).
    public var changeTag: String

    public init(
        recordName: String, recordType: RecordType, name: String, parent: String?, size: Int, shareID: String?,
        deletedBy: String, deletedAt: Date, changeTag: String
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.name = name
        self.parent = parent
        self.size = size
        self.shareID = shareID
        self.deletedBy = deletedBy
        self.deletedAt = deletedAt
        self.changeTag = changeTag
    }
}

/// A trashed record with what a restore needs: its text and the number its history
/// is kept under.
public struct TrashedContent: Sendable, Equatable {
    public var record: TrashedRecord
    public var body: String?
    public var createdSeq: Int64
    /// The seq of its last version, which holds its content.
    public var versionSeq: Int64

    public init(record: TrashedRecord, body: String?, createdSeq: Int64, versionSeq: Int64) {
        self.record = record
        self.body = body
        self.createdSeq = createdSeq
        self.versionSeq = versionSeq
    }
}

/// A record a restore brings back, and the number its earlier history is kept under.
public typealias RestoredRecord = (recordName: String, createdSeq: Int64)

/// What trash operations share between the store backends.
public enum TrashRules {
    /// The entry and every trashed record below it (a folder's notes deleted with it or
    /// after it), parents first; refuses a name that is not in the trash.
    public static func subtree(of recordName: String, in entries: [TrashedContent]) throws(NotesError) -> [TrashedContent] {
        guard let root = entries.first(where: { $0.record.recordName == recordName }) else {
            throw NotesError(.unknownItem, "\(recordName) is not in the trash (it may have been restored, or emptied from the trash).")
        }
        let children = Dictionary(grouping: entries.filter { $0.record.parent != nil }, by: { $0.record.parent! })
        var result: [TrashedContent] = [root]
        var index = 0
        var seen: Set<String> = [root.record.recordName]
        while index < result.count {
            for child in children[result[index].record.recordName] ?? [] where seen.insert(child.record.recordName).inserted {
                result.append(child)
            }
            index += 1
        }
        return result
    }

    /// The saves that bring `entries` (all or part of a subtree) back: the subtree's
    /// root (`root`) under `parent` as `name`, the rest where they were.
    public static func saves(restoring entries: [TrashedContent], root: String, parent: String?, name: String?) -> [RecordSave] {
        entries.map { entry in
            let record = entry.record
            let isRoot = record.recordName == root
            return RecordSave(
                recordName: record.recordName, recordType: record.recordType,
                name: isRoot ? (name ?? record.name) : record.name,
                parent: isRoot ? parent : record.parent,
                body: record.recordType == .folder ? nil : (entry.body ?? ""))
        }
    }
}

extension RecordStore {
    public func trashJSON(in zone: ZoneID, actor: String) async throws(NotesError) -> [UInt8] {
        RecordJSONWriter.encode(API.Trash(trash: try await trash(in: zone, actor: actor)))
    }

    /// Brings a trashed record (and, for a folder, what was trashed below it) back as
    /// the same records, under `parent` as `name` (default: where it was, as it was
    /// called), with the rights of a save. Returns the restored records without their
    /// content (a folder may hold thousands).
    ///
    /// Up to `RestoreRules.recordsPerTurn` come back in one modify. More come back in
    /// turns of that many, parents first, inside a restore (`beginRestore`) that keeps
    /// them out of sight until the last turn: no client ever sees part of a folder, and
    /// no turn holds the writer long. A turn refused (a quota, a name taken) takes back
    /// the turns before it, so the folder stays in the trash as it was.
    public func restoreFromTrash(_ recordName: String, in zone: ZoneID, parent: String??, name: String?, actor: String) async throws(NotesError) -> [Record] {
        let subtree = try await trashedContent(in: zone, under: recordName, actor: actor)
        let target = parent ?? subtree[0].record.parent
        let turns = RestoreRules.turns(subtree)
        if turns.count == 1 {
            return try await restoreTurn(subtree, root: recordName, parent: target, name: name, in: zone, actor: actor, restore: nil)
        }
        let id = RestoreRules.newID()
        try await beginRestore(id, in: zone, actor: actor)
        var restored: [Record] = []
        do {
            for turn in turns {
                restored += try await restoreTurn(turn, root: recordName, parent: target, name: name, in: zone, actor: actor, restore: id)
            }
            try await finishRestore(id, in: zone)
        } catch {
            try? await undoRestore(UnfinishedRestore(id: id, zone: zone, records: restored.map { ($0.recordName, $0.parent) }), actor: actor)
            throw error
        }
        return restored
    }

    private func restoreTurn(
        _ entries: [TrashedContent], root: String, parent: String?, name: String?, in zone: ZoneID, actor: String, restore: String?
    ) async throws(NotesError) -> [Record] {
        let withBodies = try await trashedBodies(entries, in: zone)
        let request = ModifyRequest(zone: zone, saves: TrashRules.saves(restoring: withBodies, root: root, parent: parent, name: name))
        let saved = try await modify(request, actor: actor, restoring: entries.map { ($0.record.recordName, $0.createdSeq) }, restore: restore).saved
        return saved.map { record in
            var listed = record
            listed.body = nil
            listed.bytes = nil
            return listed
        }
    }

    /// Takes back what a restore brought so far, deepest first, a turn at a time (the
    /// records go to the trash again), and ends it.
    public func undoRestore(_ restore: UnfinishedRestore, actor: String) async throws(NotesError) {
        for turn in RestoreRules.undoTurns(restore.records) {
            _ = try await modify(ModifyRequest(zone: restore.zone, deletes: turn.map { RecordDelete(recordName: $0) }), actor: actor)
        }
        try await finishRestore(restore.id, in: restore.zone)
    }

    /// Takes back, as their owner, the restores begun before `startedBefore` that never
    /// finished (notesd stopped in the middle of them); returns how many there were.
    @discardableResult
    public func undoUnfinishedRestores(startedBefore: Date) async throws(NotesError) -> Int {
        let unfinished = try await unfinishedRestores(startedBefore: startedBefore)
        for restore in unfinished {
            try await undoRestore(restore, actor: restore.zone.owner)
        }
        return unfinished.count
    }
}
