import GRDB
import NotesModel

extension ZoneAccess {
    /// Reads the caller's access inside the current transaction, or throws if the caller
    /// may see nothing of the zone.
    static func load(_ db: Database, zone: ZoneID, actor: String) throws -> ZoneAccess {
        guard let epoch = try Int64.fetchOne(db.cachedStatement(sql: "SELECT epoch FROM zones WHERE owner = ? AND name = ?"), arguments: [zone.owner, zone.name]) else {
            throw ZoneAccess.missing(zone, actor: actor)
        }
        let shares = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT id, root_record FROM shares WHERE owner = ? AND zone = ? AND stopped = 0"), arguments: [zone.owner, zone.name]
        )
        .map { ZoneAccess.ActiveShare(id: $0["id"], rootRecord: $0["root_record"]) }
        var participations: [ZoneAccess.Participation] = []
        if zone.owner != actor {
            participations = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT s.id, s.public_permission, p.role, p.permission, p.status, p.changed_seq
                        FROM participants p JOIN shares s ON s.id = p.share_id
                        WHERE s.owner = ? AND s.zone = ? AND p.account = ?
                        """), arguments: [zone.owner, zone.name, actor]
            ).map { row in
                ZoneAccess.Participation(
                    shareID: row["id"], publicPermission: row["public_permission"], role: row["role"], permission: row["permission"],
                    status: row["status"], changedSeq: row["changed_seq"])
            }
        }
        return try ZoneAccess(zone: zone, epoch: epoch, actor: actor, shares: shares, participations: participations)
    }
}
