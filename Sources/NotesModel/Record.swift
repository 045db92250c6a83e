public import Foundation

/// What a record holds.
public enum RecordType: String, Sendable, Codable, CaseIterable {
    /// A markdown note: `body` is its text.
    case note
    /// A folder: holds other records through their `parent`.
    case folder
    /// A binary attachment (an image, a PDF): `bytes` is its content.
    case file
}

/// A record as the server stores and returns it.
public struct Record: Sendable, Codable, Equatable {
    /// Unique within the zone; chosen by the client (CloudKit's record name).
    public var recordName: String
    public var zone: ZoneID
    public var recordType: RecordType
    /// The display (file) name, e.g. `plan.md`; unique among its siblings.
    public var name: String
    /// The record name of the parent folder in the same zone; `nil` at the zone's root.
    public var parent: String?
    /// The text of a note.
    public var body: String?
    /// The content of a file record.
    public var bytes: Data?
    public var createdAt: Date
    public var modifiedAt: Date
    public var modifiedBy: String
    /// Changes on every modification; a save must present the current one.
    public var changeTag: String
    /// The share that covers the record (its own, an ancestor's, or the zone's).
    public var shareID: String?

    public init(
        recordName: String, zone: ZoneID, recordType: RecordType, name: String, parent: String?,
        body: String?, bytes: Data?, createdAt: Date, modifiedAt: Date, modifiedBy: String,
        changeTag: String, shareID: String?
    ) {
        self.recordName = recordName
        self.zone = zone
        self.recordType = recordType
        self.name = name
        self.parent = parent
        self.body = body
        self.bytes = bytes
        self.createdAt = createdAt
        self.modifiedAt = modifiedAt
        self.modifiedBy = modifiedBy
        self.changeTag = changeTag
        self.shareID = shareID
    }

    /// Size of the content that counts against `Limits.maxBodyBytes`.
    public var contentSize: Int { (body?.utf8.count ?? 0) + (bytes?.count ?? 0) }
}

/// A save in a modify operation: create (no `changeTag`) or update (the tag last seen).
public struct RecordSave: Sendable, Codable, Equatable {
    public var recordName: String
    public var recordType: RecordType
    public var name: String
    public var parent: String?
    public var body: String?
    public var bytes: Data?
    /// The change tag the client last saw; `nil` means "create, it must not exist".
    public var changeTag: String?

    public init(
        recordName: String, recordType: RecordType, name: String, parent: String? = nil,
        body: String? = nil, bytes: Data? = nil, changeTag: String? = nil
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.name = name
        self.parent = parent
        self.body = body
        self.bytes = bytes
        self.changeTag = changeTag
    }

    public var contentSize: Int { (body?.utf8.count ?? 0) + (bytes?.count ?? 0) }

    /// Rejects what no store should see: bad names, content that does not fit the type,
    /// oversized bodies, a record that is its own parent.
    public func validate() throws(NotesError) {
        try Names.validateComponent(recordName, what: "record name")
        try Names.validateComponent(name, what: "name")
        if let parent {
            try Names.validateComponent(parent, what: "parent record name")
            if parent == recordName {
                throw NotesError(.invalidArguments, "The record \(recordName) cannot be its own parent.")
            }
        }
        if contentSize > Limits.maxBodyBytes {
            throw NotesError(.limitExceeded, "The content of \(name) is \(contentSize) bytes; the limit is \(Limits.maxBodyBytes) bytes (16 MiB).")
        }
        switch recordType {
        case .note:
            if bytes != nil { throw NotesError(.invalidArguments, "A note keeps its text in body, not bytes.") }
        case .folder:
            if body != nil || bytes != nil { throw NotesError(.invalidArguments, "A folder has no body or bytes.") }
        case .file:
            if body != nil { throw NotesError(.invalidArguments, "A file keeps its content in bytes, not body.") }
        }
    }
}

/// A delete in a modify operation; with a `changeTag`, only if unchanged since.
public struct RecordDelete: Sendable, Codable, Equatable {
    public var recordName: String
    public var changeTag: String?

    public init(recordName: String, changeTag: String? = nil) {
        self.recordName = recordName
        self.changeTag = changeTag
    }
}

/// An atomic modify operation on one zone.
public struct ModifyRequest: Sendable, Codable, Equatable {
    public var zone: ZoneID
    public var saves: [RecordSave]
    public var deletes: [RecordDelete]

    public init(zone: ZoneID, saves: [RecordSave] = [], deletes: [RecordDelete] = []) {
        self.zone = zone
        self.saves = saves
        self.deletes = deletes
    }

    enum CodingKeys: String, CodingKey { case zone, saves, deletes }

    /// `saves` and `deletes` may be left out when empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        zone = try container.decode(ZoneID.self, forKey: .zone)
        saves = try container.decodeIfPresent([RecordSave].self, forKey: .saves) ?? []
        deletes = try container.decodeIfPresent([RecordDelete].self, forKey: .deletes) ?? []
    }

    /// Checks the shape of the request before any storage is touched.
    public func validate() throws(NotesError) {
        let count = saves.count + deletes.count
        if count > Limits.maxBatchItems {
            throw NotesError(.limitExceeded, "A modify operation holds at most \(Limits.maxBatchItems) saves and deletes; this one has \(count). Split it into smaller batches.")
        }
        if count == 0 {
            throw NotesError(.invalidArguments, "A modify operation needs at least one save or delete.")
        }
        var seen = Set<String>()
        for name in saves.map(\.recordName) + deletes.map(\.recordName) where !seen.insert(name).inserted {
            throw NotesError(.invalidArguments, "The record \(name) appears twice in one modify operation.")
        }
        for delete in deletes {
            try Names.validateComponent(delete.recordName, what: "record name")
        }
        var itemErrors: [NotesError.ItemError] = []
        var first: NotesError?
        for save in saves {
            do throws(NotesError) {
                try save.validate()
            } catch {
                first = first ?? error
                itemErrors.append(.init(recordName: save.recordName, code: error.code, message: error.message))
            }
        }
        if var first {
            let failed = Set(itemErrors.map(\.recordName))
            let others = (saves.map(\.recordName) + deletes.map(\.recordName)).filter { !failed.contains($0) }
            first.itemErrors =
                itemErrors
                + others.map {
                    .init(recordName: $0, code: .batchRequestFailed, message: "Not applied: another item of the same operation is invalid.")
                }
            throw first
        }
    }
}

/// What a successful modify operation returns: the saved records with their new
/// change tags and times, without `body` or `bytes` (the client sent those).
public struct ModifyResult: Sendable, Codable, Equatable {
    public var saved: [Record]
    public var deleted: [String]

    public init(saved: [Record], deleted: [String]) {
        self.saved = saved
        self.deleted = deleted
    }
}

/// One stored version of a record (every save keeps one).
public struct RecordVersion: Sendable, Codable, Equatable {
    public var changeTag: String
    public var name: String
    public var parent: String?
    public var body: String?
    public var size: Int
    public var modifiedBy: String
    public var modifiedAt: Date

    public init(changeTag: String, name: String, parent: String?, body: String?, size: Int, modifiedBy: String, modifiedAt: Date) {
        self.changeTag = changeTag
        self.name = name
        self.parent = parent
        self.body = body
        self.size = size
        self.modifiedBy = modifiedBy
        self.modifiedAt = modifiedAt
    }
}
