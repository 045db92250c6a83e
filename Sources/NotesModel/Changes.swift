/// A page of "changes since token" for one zone.
public struct ZoneChanges: Sendable, Codable, Equatable {
    /// Records created or changed since the token, oldest change first.
    public var records: [Record]
    /// Record names deleted (or moved out of the caller's view) since the token.
    public var deleted: [String]
    /// Pass this to the next fetch.
    public var changeToken: String
    /// More changes are waiting: fetch again with `changeToken` at once.
    public var moreComing: Bool

    public init(records: [Record], deleted: [String], changeToken: String, moreComing: Bool) {
        self.records = records
        self.deleted = deleted
        self.changeToken = changeToken
        self.moreComing = moreComing
    }
}

/// "Changes since token" for a whole database scope: which zones to fetch again.
public struct DatabaseChanges: Sendable, Codable, Equatable {
    public var changedZones: [ZoneID]
    /// Zones deleted, or no longer visible to the caller (left, removed, share stopped).
    public var deletedZones: [ZoneID]
    public var changeToken: String
    public var moreComing: Bool

    public init(changedZones: [ZoneID], deletedZones: [ZoneID], changeToken: String, moreComing: Bool) {
        self.changedZones = changedZones
        self.deletedZones = deletedZones
        self.changeToken = changeToken
        self.moreComing = moreComing
    }
}

/// A hint that something an account can see changed: fetch changes to learn what.
public struct ChangeNotice: Sendable, Codable, Equatable, Hashable {
    public var account: String
    public var scope: DatabaseScope
    /// The zone that changed; `nil` when the scope's set of zones changed.
    public var zone: ZoneID?

    public init(account: String, scope: DatabaseScope, zone: ZoneID?) {
        self.account = account
        self.scope = scope
        self.zone = zone
    }
}

/// A page of changes already written as the JSON of `ZoneChanges`, with the token and
/// flag that also travel as HTTP headers.
public struct EncodedZoneChanges: Sendable {
    public var json: [UInt8]
    public var changeToken: String
    public var moreComing: Bool

    public init(json: [UInt8], changeToken: String, moreComing: Bool) {
        self.json = json
        self.changeToken = changeToken
        self.moreComing = moreComing
    }
}
