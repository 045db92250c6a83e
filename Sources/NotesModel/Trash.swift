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

    /// The saves that bring `subtree` back: its root under `parent` as `name`, the rest
    /// where they were.
    public static func saves(restoring subtree: [TrashedContent], parent: String?, name: String?) -> [RecordSave] {
        subtree.enumerated().map { index, entry in
            let record = entry.record
            return RecordSave(
                recordName: record.recordName, recordType: record.recordType,
                name: index == 0 ? (name ?? record.name) : record.name,
                parent: index == 0 ? parent : record.parent,
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
    /// called), with the rights of a save.
    public func restoreFromTrash(_ recordName: String, in zone: ZoneID, parent: String??, name: String?, actor: String) async throws(NotesError) -> [Record] {
        let subtree = try await trashedContent(in: zone, under: recordName, actor: actor)
        let target = parent ?? subtree[0].record.parent
        let request = ModifyRequest(zone: zone, saves: TrashRules.saves(restoring: subtree, parent: target, name: name))
        return try await modify(request, actor: actor, restoring: subtree.map { ($0.record.recordName, $0.createdSeq) }).saved
    }
}
