public import Foundation

/// Who may read or write a share without an invitation (CloudKit's `publicPermission`).
public enum PublicPermission: String, Sendable, Codable, CaseIterable {
    case none
    case readOnly
    case readWrite
}

/// What a participant may do with the share's records.
public enum ParticipantPermission: String, Sendable, Codable, CaseIterable {
    case readOnly
    case readWrite
}

/// How a participant came to the share.
public enum ParticipantRole: String, Sendable, Codable, CaseIterable {
    /// The account that owns the zone and so the share.
    case owner
    /// Invited by name or email.
    case privateUser
    /// Accepted a public URL without an invitation.
    case publicUser
}

/// Where a participant stands: invited, in, or out (removed by the owner or left).
public enum ParticipantStatus: String, Sendable, Codable, CaseIterable {
    case pending
    case accepted
    case removed
}

/// One account (or, until it resolves, one email address) in a share.
public struct Participant: Sendable, Codable, Equatable {
    /// The account name; `nil` while an email invitation has no matching account yet.
    public var name: String?
    public var email: String?
    public var role: ParticipantRole
    public var permission: ParticipantPermission
    public var status: ParticipantStatus

    public init(name: String?, email: String?, role: ParticipantRole, permission: ParticipantPermission, status: ParticipantStatus) {
        self.name = name
        self.email = email
        self.role = role
        self.permission = permission
        self.status = status
    }
}

/// A share: a hierarchy (a root record and its descendants) or a whole zone.
public struct Share: Sendable, Codable, Equatable {
    public var id: String
    public var zone: ZoneID
    /// The root record of a hierarchy share; `nil` for a zone-wide share.
    public var rootRecordName: String?
    public var title: String
    public var publicPermission: PublicPermission
    /// The unguessable token of the share URL (`PUBLIC_URL/s/TOKEN#Title`).
    public var urlToken: String
    /// The full share URL; filled in by the server, which knows its public base URL.
    public var url: String?
    public var participants: [Participant]
    public var createdAt: Date
    /// When the public link stops letting new people in; `nil` for never.
    public var publicExpiresAt: Date?
    /// Accepting through the public link needs a password.
    public var passwordProtected: Bool?
    /// Pages and files served at the public link since it was made (or its URL last
    /// rotated). Counted in batches, so it may trail the last few views by a moment.
    public var publicViews: Int?

    public init(
        id: String, zone: ZoneID, rootRecordName: String?, title: String, publicPermission: PublicPermission,
        urlToken: String, url: String? = nil, participants: [Participant], createdAt: Date,
        publicExpiresAt: Date? = nil, passwordProtected: Bool? = nil, publicViews: Int? = nil
    ) {
        self.publicViews = publicViews
        self.publicExpiresAt = publicExpiresAt
        self.passwordProtected = passwordProtected
        self.id = id
        self.zone = zone
        self.rootRecordName = rootRecordName
        self.title = title
        self.publicPermission = publicPermission
        self.urlToken = urlToken
        self.url = url
        self.participants = participants
        self.createdAt = createdAt
    }

    public var owner: String { zone.owner }
    public var isZoneWide: Bool { rootRecordName == nil }

    /// The participant entry for an account, if it has one.
    public func participant(named name: String) -> Participant? {
        participants.first { $0.name == name }
    }
}

/// Whom to invite: an account name or an email address, with a permission.
public struct Invitee: Sendable, Codable, Equatable {
    public var name: String?
    public var email: String?
    public var permission: ParticipantPermission

    public init(name: String? = nil, email: String? = nil, permission: ParticipantPermission) {
        self.name = name
        self.email = email
        self.permission = permission
    }
}

/// A request to share a record's hierarchy, or a whole zone when `rootRecordName` is nil.
public struct NewShare: Sendable, Codable, Equatable {
    public var zone: ZoneID
    public var rootRecordName: String?
    public var title: String?
    public var publicPermission: PublicPermission?
    public var participants: [Invitee]?

    public init(zone: ZoneID, rootRecordName: String?, title: String? = nil, publicPermission: PublicPermission? = nil, participants: [Invitee]? = nil) {
        self.zone = zone
        self.rootRecordName = rootRecordName
        self.title = title
        self.publicPermission = publicPermission
        self.participants = participants
    }
}

/// Changes the owner makes to a share's own fields.
public struct ShareUpdate: Sendable, Codable, Equatable {
    public var title: String?
    public var publicPermission: PublicPermission?
    /// Revoke the current URL and make a new one.
    public var rotateURL: Bool?
    /// Seconds from now until the public link expires; 0 removes the expiry.
    public var publicExpiresIn: Double?
    /// A password for accepting through the public link; empty removes it.
    public var publicPassword: String?

    /// Rejects numbers that cannot be stored as an expiry (NaN, infinities, negative,
    /// beyond ten years) and over-long passwords.
    public func validate() throws(NotesError) {
        if let seconds = publicExpiresIn { try Limits.validateLifetime(seconds, field: "publicExpiresIn", allowsZero: true) }
        if let password = publicPassword, password.utf8.count > 1024 {
            throw NotesError(.invalidArguments, "The password is longer than 1,024 bytes.")
        }
    }

    public init(title: String? = nil, publicPermission: PublicPermission? = nil, rotateURL: Bool? = nil, publicExpiresIn: Double? = nil, publicPassword: String? = nil) {
        self.publicExpiresIn = publicExpiresIn
        self.publicPassword = publicPassword
        self.title = title
        self.publicPermission = publicPermission
        self.rotateURL = rotateURL
    }
}

extension Share {
    /// The share as `actor` may see it. The owner sees everything: every participant,
    /// removed ones, pending email invitations and the link's view count. An accepted
    /// participant invited by name or email sees who else is in (the owner and accepted
    /// participants, by name, without emails). Someone who joined through the public
    /// link, or is only invited, sees the owner and their own entry, nothing else: a
    /// public link must not hand its visitors the team's names and addresses.
    public func seen(by actor: String) -> Share {
        if actor == owner { return self }
        var seen = self
        seen.publicViews = nil
        let own = participant(named: actor)
        let isMember = own?.status == .accepted && own?.role == .privateUser
        seen.participants = participants.compactMap { participant in
            if participant.name == actor { return participant }
            guard participant.role == .owner || (isMember && participant.status == .accepted && participant.name != nil) else { return nil }
            var visible = participant
            visible.email = nil
            return visible
        }
        return seen
    }
}
