/// The caller's standing in one zone, read by a store inside the transaction that uses
/// it and decided here, the same for every backend.
package struct ZoneAccess: Sendable {
    package let zone: ZoneID
    package let epoch: Int64
    package let isOwner: Bool
    /// The caller's standing in each active share of the zone (participants only),
    /// with a public user's permission already narrowed by the share's public permission.
    package let standings: [String: SharingRules.Standing]
    /// Root record name → share ID, for every active hierarchy share of the zone.
    package let rootShares: [String: String]
    /// The active zone-wide share, if any.
    package let zoneWideShare: String?
    /// Highest change seq of the caller's participations here (part of the zone token).
    package let membershipSeq: Int64

    /// An active share of the zone as stored: its id and root record (`nil`: zone-wide).
    package struct ActiveShare: Sendable {
        package var id: String
        package var rootRecord: String?
        package init(id: String, rootRecord: String?) {
            self.id = id
            self.rootRecord = rootRecord
        }
    }

    /// One row of the caller's participations in the zone's shares (stopped ones too),
    /// with the columns as stored.
    package struct Participation: Sendable {
        package var shareID: String
        package var publicPermission: String
        package var role: String
        package var permission: String
        package var status: String
        package var changedSeq: Int64
        package init(shareID: String, publicPermission: String, role: String, permission: String, status: String, changedSeq: Int64) {
            self.shareID = shareID
            self.publicPermission = publicPermission
            self.role = role
            self.permission = permission
            self.status = status
            self.changedSeq = changedSeq
        }
    }

    /// What a caller learns of a zone that does not exist, or of one they were never
    /// invited into: `zoneNotFound` for its would-be owner and the same
    /// `permissionFailure` for everyone else, so that neither account names nor others'
    /// zone names leak.
    package static func missing(_ zone: ZoneID, actor: String) -> NotesError {
        if zone.owner == actor {
            return NotesError(.zoneNotFound, "You have no zone named \(zone.name).")
        }
        return NotesError(.permissionFailure, "You have no access to \(zone.owner)'s zone \(zone.name).")
    }

    /// Decides the caller's access from what the store read (`participations` are read
    /// for participants only), or throws if the caller may see nothing of the zone.
    package init(zone: ZoneID, epoch: Int64, actor: String, shares: [ActiveShare], participations: [Participation]) throws(NotesError) {
        let isOwner = zone.owner == actor
        var rootShares: [String: String] = [:]
        var zoneWide: String?
        for share in shares {
            if let root = share.rootRecord { rootShares[root] = share.id } else { zoneWide = share.id }
        }
        var standings: [String: SharingRules.Standing] = [:]
        var membershipSeq: Int64 = 0
        if !isOwner {
            for row in participations {
                membershipSeq = max(membershipSeq, row.changedSeq)
                let participant = Participant(
                    name: actor, email: nil,
                    role: ParticipantRole(rawValue: row.role) ?? .privateUser,
                    permission: ParticipantPermission(rawValue: row.permission) ?? .readOnly,
                    status: ParticipantStatus(rawValue: row.status) ?? .removed)
                guard rootShares.values.contains(row.shareID) || zoneWide == row.shareID else { continue }
                let publicPermission = PublicPermission(rawValue: row.publicPermission) ?? .none
                if let permission = SharingRules.effectivePermission(of: participant, publicPermission: publicPermission) {
                    standings[row.shareID] = .init(role: participant.role, permission: permission, status: participant.status)
                } else {
                    standings[row.shareID] = .init(role: participant.role, permission: .readOnly, status: .removed)
                }
            }
            guard standings.values.contains(where: { SharingRules.allows(.read, standing: $0) }) else {
                // Someone never invited learns exactly what a zone that does not exist
                // tells them: neither which accounts exist nor which zones they have.
                if standings.isEmpty { throw Self.missing(zone, actor: actor) }
                let what = "\(zone.owner)'s notes"
                let best = standings.values.first
                throw NotesError(.permissionFailure, SharingRules.reasonText(.read, standing: best, what: what))
            }
        }
        self.zone = zone
        self.epoch = epoch
        self.isOwner = isOwner
        self.standings = standings
        self.rootShares = rootShares
        self.zoneWideShare = zoneWide
        self.membershipSeq = membershipSeq
    }

    /// The caller's standing for a record covered by `shareID` (`nil`: not shared).
    package func standing(forShare shareID: String?) -> SharingRules.Standing? {
        if isOwner { return .owner }
        guard let shareID else { return nil }
        return standings[shareID]
    }

    /// The shares whose records the caller may read (participants only).
    package var readableShares: [String] {
        standings.filter { SharingRules.allows(.read, standing: $0.value) }.map(\.key).sorted()
    }

    package func canRead(shareID: String?) -> Bool {
        SharingRules.allows(.read, standing: standing(forShare: shareID))
    }

    /// Whether the caller may save anything at all in the zone: checked before a store
    /// writes a modify's large contents ahead of its transaction, so that someone who
    /// may only read never makes notesd write their bytes.
    package var maySaveSomething: Bool {
        isOwner || standings.values.contains { SharingRules.allows(.modifyRecord, standing: $0) || SharingRules.allows(.createRecord, standing: $0) }
    }

    /// Every active share of the zone (what deleting the zone stops).
    package var activeShares: [String] {
        Array(rootShares.values) + [zoneWideShare].compactMap { $0 }
    }
}

extension ZoneAccess {
    /// Only the owner creates zones, in their own private database.
    package static func checkCreate(_ zone: ZoneID, actor: String) throws(NotesError) {
        try Names.validateNewName(zone.name, what: "zone name")
        guard zone.owner == actor else {
            throw NotesError(.permissionFailure, "You can create zones only in your own private database.")
        }
    }

    /// Only the owner deletes a zone, and never the default one.
    package static func checkDelete(_ zone: ZoneID, actor: String) throws(NotesError) {
        guard zone.owner == actor else {
            throw NotesError(.permissionFailure, "Only the owner may delete a zone.")
        }
        guard !zone.isDefault else {
            throw NotesError(.invalidArguments, "The default zone cannot be deleted; delete its records instead.")
        }
    }

    /// The zone as the shared scope lists it to this participant at `seq`.
    package func sharedZone(at seq: Int64) -> Zone {
        Zone(id: zone, changeToken: ZoneChangeToken(epoch: epoch, seq: seq, membership: membershipSeq).encoded, shareIDs: readableShares)
    }
}
