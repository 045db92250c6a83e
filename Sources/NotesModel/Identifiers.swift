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
    /// A disabled account is refused on every request (tokens and the Unix socket
    /// alike) until the admin enables it again; its notes and shares stay as they are.
    public var isDisabled: Bool

    public init(name: String, email: String?, isAdmin: Bool, createdAt: Date, isDisabled: Bool = false) {
        self.name = name
        self.email = email
        self.isAdmin = isAdmin
        self.createdAt = createdAt
        self.isDisabled = isDisabled
    }

    enum CodingKeys: String, CodingKey { case name, email, isAdmin, createdAt, isDisabled }

    /// `isDisabled` is read as `false` when absent: answers of servers from before it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        isAdmin = try container.decode(Bool.self, forKey: .isAdmin)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        isDisabled = try container.decodeIfPresent(Bool.self, forKey: .isDisabled) ?? false
    }
}

/// A bearer token as listed to its owner or the admin: never the secret, which is
/// shown once when issued and kept only as a hash.
public struct TokenInfo: Sendable, Codable, Equatable {
    /// The public part of the token (`ntk_<id>_…`): what `revoke` takes.
    public var id: String
    public var account: String
    /// What the token is for, given when it was issued (`laptop mount`, `CI`).
    public var label: String?
    public var createdAt: Date
    public var expiresAt: Date?

    public init(id: String, account: String, label: String?, createdAt: Date, expiresAt: Date?) {
        self.id = id
        self.account = account
        self.label = label
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// Who a valid token speaks for, and which token it was (so that revoking it can end
/// what it opened).
public struct AuthenticatedToken: Sendable, Equatable {
    public var account: Account
    public var tokenID: String
    /// When the token stops being valid (`nil`: never), so that what it opened ends then.
    public var expiresAt: Date?

    public init(account: Account, tokenID: String, expiresAt: Date? = nil) {
        self.account = account
        self.tokenID = tokenID
        self.expiresAt = expiresAt
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
