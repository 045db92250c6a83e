import GRDB
import NotesModel

/// The caller's standing in one zone, read inside the transaction that uses it.
struct ZoneAccess {
    let zone: ZoneID
    let epoch: Int64
    let isOwner: Bool
    /// The caller's standing in each active share of the zone (participants only),
    /// with a public user's permission already narrowed by the share's public permission.
    let standings: [String: SharingRules.Standing]
    /// Root record name → share ID, for every active hierarchy share of the zone.
    let rootShares: [String: String]
    /// The active zone-wide share, if any.
    let zoneWideShare: String?
    /// Highest change seq of the caller's participations here (part of the zone token).
    let membershipSeq: Int64

    /// Reads the caller's access, or throws if the caller may see nothing of the zone.
    /// A zone that does not exist is `zoneNotFound` to its would-be owner and
    /// `permissionFailure` to everyone else, so zone names of others do not leak.
    static func load(_ db: Database, zone: ZoneID, actor: String) throws -> ZoneAccess {
        let isOwner = zone.owner == actor
        guard let epoch = try Int64.fetchOne(db.cachedStatement(sql: "SELECT epoch FROM zones WHERE owner = ? AND name = ?"), arguments: [zone.owner, zone.name]) else {
            if isOwner {
                throw NotesError(.zoneNotFound, "You have no zone named \(zone.name).")
            }
            throw NotesError(.permissionFailure, "You have no access to \(zone.owner)'s zone \(zone.name).")
        }
        var rootShares: [String: String] = [:]
        var zoneWide: String?
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT id, root_record FROM shares WHERE owner = ? AND zone = ? AND stopped = 0"), arguments: [zone.owner, zone.name]) {
            if let root: String = row["root_record"] { rootShares[root] = row["id"] } else { zoneWide = row["id"] }
        }
        var standings: [String: SharingRules.Standing] = [:]
        var membershipSeq: Int64 = 0
        if !isOwner {
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT s.id, s.public_permission, p.role, p.permission, p.status, p.changed_seq
                FROM participants p JOIN shares s ON s.id = p.share_id
                WHERE s.owner = ? AND s.zone = ? AND p.account = ?
                """), arguments: [zone.owner, zone.name, actor])
            for row in rows {
                membershipSeq = max(membershipSeq, row["changed_seq"])
                let participant = Participant(
                    name: actor, email: nil,
                    role: ParticipantRole(rawValue: row["role"]) ?? .privateUser,
                    permission: ParticipantPermission(rawValue: row["permission"]) ?? .readOnly,
                    status: ParticipantStatus(rawValue: row["status"]) ?? .removed)
                let shareID: String = row["id"]
                guard rootShares.values.contains(shareID) || zoneWide == shareID else { continue }
                let publicPermission = PublicPermission(rawValue: row["public_permission"]) ?? .none
                if let permission = SharingRules.effectivePermission(of: participant, publicPermission: publicPermission) {
                    standings[shareID] = .init(role: participant.role, permission: permission, status: participant.status)
                } else {
                    standings[shareID] = .init(role: participant.role, permission: .readOnly, status: .removed)
                }
            }
            guard standings.values.contains(where: { SharingRules.allows(.read, standing: $0) }) else {
                let what = "\(zone.owner)'s notes"
                let best = standings.values.first
                throw NotesError(.permissionFailure, SharingRules.reasonText(.read, standing: best, what: what))
            }
        }
        return ZoneAccess(zone: zone, epoch: epoch, isOwner: isOwner, standings: standings, rootShares: rootShares, zoneWideShare: zoneWide, membershipSeq: membershipSeq)
    }

    /// The caller's standing for a record covered by `shareID` (`nil`: not shared).
    func standing(forShare shareID: String?) -> SharingRules.Standing? {
        if isOwner { return .owner }
        guard let shareID else { return nil }
        return standings[shareID]
    }

    /// The shares whose records the caller may read (participants only).
    var readableShares: [String] {
        standings.filter { SharingRules.allows(.read, standing: $0.value) }.map(\.key).sorted()
    }

    func canRead(shareID: String?) -> Bool {
        SharingRules.allows(.read, standing: standing(forShare: shareID))
    }
}
