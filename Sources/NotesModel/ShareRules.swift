package import Foundation

/// The decisions of the share operations that do not depend on how shares are stored:
/// each store reads the share inside its transaction and asks here.
package enum ShareRules {
    package static func noSuchShare(_ id: String) -> NotesError {
        NotesError(.unknownItem, "There is no share \(id) that you take part in.")
    }

    package static func validateTitle(_ title: String) throws(NotesError) {
        guard !title.isEmpty, title.utf8.count <= 255, !title.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw NotesError(.invalidArguments, "A share title must be 1 to 255 bytes long, without control characters.")
        }
    }

    /// A participant as stored (unknown values read as the least they could be).
    package static func participant(account: String?, email: String?, role: String, permission: String, status: String) -> Participant {
        Participant(
            name: account, email: email,
            role: ParticipantRole(rawValue: role) ?? .privateUser,
            permission: ParticipantPermission(rawValue: permission) ?? .readOnly,
            status: ParticipantStatus(rawValue: status) ?? .removed)
    }

    /// A share the caller may look at: its owner's, or one they take part in (pending too).
    package static func requireVisible(_ share: Share, actor: String) throws(NotesError) {
        guard share.owner == actor || share.participant(named: actor).map({ $0.status != .removed }) == true else {
            throw noSuchShare(share.id)
        }
    }

    /// Only the owner changes a share: participants get `permissionFailure`, strangers
    /// `unknownItem`.
    package static func requireOwner(_ share: Share, actor: String) throws(NotesError) {
        guard share.owner == actor else {
            if let participant = share.participant(named: actor), participant.status != .removed {
                let standing = SharingRules.Standing(role: participant.role, permission: participant.permission, status: participant.status)
                try SharingRules.check(.changeShare, standing: standing, what: "“\(share.title)”")
            }
            throw noSuchShare(share.id)
        }
    }

    /// Whether the caller may leave the share (a participant that has not left yet).
    package static func checkLeave(_ share: Share, actor: String) throws(NotesError) {
        let standing =
            share.owner == actor
            ? SharingRules.Standing.owner
            : share.participant(named: actor).map { SharingRules.Standing(role: $0.role, permission: $0.permission, status: $0.status) }
        guard standing != nil, standing?.status != .removed else { throw noSuchShare(share.id) }
        try SharingRules.check(.leave, standing: standing, what: "“\(share.title)”")
    }

    /// The participant the owner removes by account name or, for an email invitation
    /// with no account yet, by email; nil when they were removed already (removing is
    /// idempotent: the share lists removed participants, and removing one again changes
    /// nothing).
    package static func participantToRemove(_ share: Share, name: String, actor: String) throws(NotesError) -> Participant? {
        guard name != actor else {
            throw NotesError(.invalidArguments, "You own this share; to stop sharing with everyone, run `notes unshare` without --with.")
        }
        guard let participant = share.participants.first(where: { $0.name == name || ($0.name == nil && $0.email == name) }) else {
            throw NotesError(.unknownItem, "\(name) is not a participant of this share.")
        }
        return participant.status == .removed ? nil : participant
    }

    // MARK: New shares

    /// Only the owner of a zone shares from it, with a title that can be shown.
    package static func checkRequest(_ request: NewShare, actor: String) throws(NotesError) {
        guard request.zone.owner == actor else {
            throw NotesError(.permissionFailure, "Only the owner of a note can share it; you can share only what is under private/.")
        }
        if let title = request.title { try validateTitle(title) }
    }

    /// What a new share covers, decided from the zone's access and, for a hierarchy
    /// share, its root as read (`nil` if missing) and the records below it; returns the
    /// share's title.
    package static func checkNewShare(_ request: NewShare, actor: String, access: ZoneAccess, root: Record?, members: [String]) throws(NotesError) -> String {
        let zone = request.zone
        if let existing = access.zoneWideShare {
            throw NotesError(.alreadyShared, "The whole zone \(zone.name) is already shared (share \(existing)); change that share instead.")
        }
        if let rootName = request.rootRecordName {
            guard let root else {
                throw NotesError(.unknownItem, "There is no record \(rootName) in \(zone.name) to share.")
            }
            if let covering = root.shareID {
                throw NotesError(.alreadyShared, "“\(root.name)” is already shared (share \(covering)); add participants to that share instead.")
            }
            if let nested = members.first(where: { access.rootShares[$0] != nil }), let nestedShare = access.rootShares[nested] {
                throw NotesError(.alreadyShared, "“\(root.name)” holds a record that is already shared (share \(nestedShare)); shares cannot nest.")
            }
            return request.title ?? root.name
        }
        if let other = access.rootShares.values.sorted().first {
            throw NotesError(.alreadyShared, "Part of the zone \(zone.name) is already shared (share \(other)); stop that share before sharing the whole zone.")
        }
        return request.title ?? (zone.isDefault ? "\(actor)'s notes" : zone.name)
    }

    // MARK: Invitations

    package static func unknownInvitee(_ name: String) -> NotesError {
        NotesError(.unknownItem, "\(name) is not an account on this server; ask your admin to run `notes account create \(name)`.")
    }

    package static let inviteeNeedsNameOrEmail = NotesError(.invalidArguments, "Each invitee needs an account name or an email address.")

    package static func checkInvitee(account: String?, owner: String) throws(NotesError) {
        if account == owner {
            throw NotesError(.invalidArguments, "You own this share; invite others.")
        }
    }

    /// A share takes one more participant while it has fewer than the limit (those
    /// removed do not count).
    package static func checkRoom(active: Int) throws(NotesError) {
        guard active < Limits.maxParticipants else {
            throw NotesError(.limitExceeded, "A share has at most \(Limits.maxParticipants) participants; remove someone first.")
        }
    }

    /// A participant invited again keeps an accepted or pending status; one removed is
    /// pending again.
    package static func statusWhenInvitedAgain(_ status: String) -> String {
        status == "removed" ? "pending" : status
    }

    // MARK: Links

    /// What accepting a share's URL does for the caller.
    package enum Acceptance: Equatable {
        /// An invitation (by name, or by the caller's email) becomes accepted.
        case invitation
        /// The caller joins as a public user with this permission; `again` when the
        /// caller has a participant row already (removed before).
        case publicUser(ParticipantPermission, again: Bool)
    }

    package static let unknownLink = NotesError(.unknownItem, "No share has this URL: it may have been stopped, or its owner replaced the URL. Ask the owner for a new one.")

    /// Decides an accept: `mine` is the caller's participant row, by name or email; the
    /// link's expiry and password hash as stored; `password` whether one was given, and
    /// `verified` the hash it was checked against before the transaction.
    package static func acceptance(
        _ share: Share, actor: String, mine: Participant?, now: Date, expiresAt: Double?,
        passwordHash: Data?, passwordGiven: Bool, verified: Data?
    ) throws(NotesError) -> Acceptance {
        guard share.owner != actor else {
            throw NotesError(.invalidArguments, "You own this share; its notes are already under private/.")
        }
        switch mine?.status {
        case .accepted?:
            throw NotesError(.constraintViolation, "You have already accepted this share; it is under shared/\(share.owner)/.")
        case .pending?:
            return .invitation
        case .removed?, nil:
            guard share.publicPermission != .none else {
                throw NotesError(
                    .permissionFailure,
                    mine == nil
                        ? "This share is not public and you are not invited; ask \(share.owner) to invite you."
                        : "\(share.owner) removed you from this share; ask them to invite you again.")
            }
            // An expired public link answers like one that does not exist.
            if let expiresAt, now.timeIntervalSince1970 >= expiresAt { throw unknownLink }
            if let passwordHash {
                guard passwordGiven else {
                    throw NotesError(.permissionFailure, "This link needs a password; ask \(share.owner) for it and pass it with --password.")
                }
                guard verified == passwordHash else {
                    throw NotesError(.permissionFailure, "The link's password changed while it was checked; try again with the new one.")
                }
            }
            return .publicUser(share.publicPermission == .readWrite ? .readWrite : .readOnly, again: mine != nil)
        }
    }

    /// The caller's participant row for an accept: by name, or an email invitation to
    /// the caller's address that no account has taken yet.
    package static func participant(in share: Share, actor: String, email: String?) -> Participant? {
        share.participant(named: actor) ?? share.participants.first { $0.name == nil && $0.email != nil && $0.email == email }
    }

    package static let noPublicPage = NotesError(.unknownItem, "There is no public page at this address.")

    /// A public link with a password, asked for without a pass: its pages ask for the password.
    package static let publicPagePasswordNeeded = NotesError(.notAuthenticated, "This link needs a password; ask its owner for it.")

    /// Whether anyone may read a public link now: public and not expired, and without a
    /// password or `unlocked` (the visitor showed a pass made with it, see `LinkPass`).
    package static func checkPublicLink(publicPermission: String, hasPassword: Bool, unlocked: Bool, expiresAt: Double?, now: Date) throws(NotesError) {
        guard publicPermission != PublicPermission.none.rawValue, expiresAt.map({ now.timeIntervalSince1970 < $0 }) ?? true
        else { throw noPublicPage }
        if hasPassword && !unlocked { throw publicPagePasswordNeeded }
    }
}
