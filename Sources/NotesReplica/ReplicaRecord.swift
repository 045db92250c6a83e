public import NotesModel

/// A record as the replica holds it, without its content (read on demand).
public struct ReplicaRecord: Sendable, Equatable {
    public var zone: ZoneID
    public var recordName: String
    public var recordType: RecordType
    public var name: String
    /// The parent folder's record name; `nil` at the zone's root.
    public var parent: String?
    public var size: Int
    public var shareID: String?
    /// The server's tag this state is based on; `nil` if never uploaded.
    public var changeTag: String?
    public var createdAt: Double
    public var modifiedAt: Double
    public var modifiedBy: String
    /// Position in the upload queue; 0 when in sync with the server.
    public var dirty: Int64
    /// Deleted locally; the delete waits for upload.
    public var deleted: Bool

    public init(
        zone: ZoneID, recordName: String, recordType: RecordType, name: String, parent: String?, size: Int,
        shareID: String?, changeTag: String?, createdAt: Double, modifiedAt: Double, modifiedBy: String,
        dirty: Int64 = 0, deleted: Bool = false
    ) {
        self.zone = zone
        self.recordName = recordName
        self.recordType = recordType
        self.name = name
        self.parent = parent
        self.size = size
        self.shareID = shareID
        self.changeTag = changeTag
        self.createdAt = createdAt
        self.modifiedAt = modifiedAt
        self.modifiedBy = modifiedBy
        self.dirty = dirty
        self.deleted = deleted
    }

    public var key: RecordKey { RecordKey(zone: zone, recordName: recordName) }
}

/// A record's identity across the whole account: zone plus record name.
public struct RecordKey: Hashable, Sendable, CustomStringConvertible {
    public var zone: ZoneID
    public var recordName: String
    public init(zone: ZoneID, recordName: String) {
        self.zone = zone
        self.recordName = recordName
    }
    public var description: String { "\(zone)/\(recordName)" }
}

/// A zone as the replica knows it.
public struct ReplicaZone: Sendable, Equatable {
    public enum Pending: String, Sendable { case create, delete }
    public var id: ZoneID
    public var scope: DatabaseScope
    public var changeToken: String?
    public var pending: Pending?
    public init(id: ZoneID, scope: DatabaseScope, changeToken: String?, pending: Pending?) {
        self.id = id
        self.scope = scope
        self.changeToken = changeToken
        self.pending = pending
    }
}

/// A local change waiting for upload: the record's state now, with its content.
public struct PendingChange: Sendable {
    public var record: ReplicaRecord
    public var content: [UInt8]?
}

/// What applying a page of remote changes did to the local view, for the file tree.
public struct RemoteEffects: Sendable {
    /// Records now shown as the server has them (new, changed or moved).
    public var updated: [ReplicaRecord] = []
    /// Records no longer shown.
    public var removed: [RecordKey] = []
    public init() {}
}
