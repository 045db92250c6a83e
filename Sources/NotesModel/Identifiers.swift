public import Foundation

/// A zone: a named container of records owned by one account.
public struct ZoneID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The account that owns the zone.
    public var owner: String
    /// The zone's name, unique per owner.
    public var name: String

    /// The zone every account has; its notes sit at the root of `private/` in the mount.
    public static let defaultZoneName = "_defaultZone"

    public init(owner: String, name: String) {
        self.owner = owner
        self.name = name
    }

    public var isDefault: Bool { name == Self.defaultZoneName }
    public var description: String { "\(owner)/\(name)" }
}

/// The two views of records an account has (CloudKit's database scopes).
public enum DatabaseScope: String, Sendable, Codable, CaseIterable {
    /// The zones the account owns.
    case `private`
    /// The zones of others in which the account accepted a share: a window, not a copy.
    case shared
}

/// An account: a person using the daemon.
public struct Account: Sendable, Codable, Equatable {
    public var name: String
    public var email: String?
    /// The admin may create accounts and issue tokens.
    public var isAdmin: Bool
    public var createdAt: Date

    public init(name: String, email: String?, isAdmin: Bool, createdAt: Date) {
        self.name = name
        self.email = email
        self.isAdmin = isAdmin
        self.createdAt = createdAt
    }
}

/// A zone as listed to a client, with the caller's rights in it.
public struct Zone: Sendable, Codable, Equatable {
    public var id: ZoneID
    /// The current change token of the zone (what "changes since" would return now).
    public var changeToken: String
    /// For a zone of the shared database: the shares of it the caller accepted.
    public var shareIDs: [String]

    public init(id: ZoneID, changeToken: String, shareIDs: [String] = []) {
        self.id = id
        self.changeToken = changeToken
        self.shareIDs = shareIDs
    }
}
