import GRDB
import NotesModel

/// What a page of a zone's changes is read from in SQLite: the caller's view of the
/// zone from where the token left off; `page` says where the page ends.
struct ChangeQuery {
    let recordSQL: String
    let tombstoneSQL: String
    let arguments: StatementArguments
    let page: ChangePage

    init(_ db: Database, zone: ZoneID, since parsed: ZoneChangeToken?, limit: Int, actor: String) throws {
        let access = try ZoneAccess.load(db, zone: zone, actor: actor)
        let bounds = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT (SELECT pruned_seq FROM zones WHERE owner = ?1 AND name = ?2), (SELECT MIN(since_seq) FROM restores WHERE owner = ?1 AND zone = ?2)
                    """), arguments: [zone.owner, zone.name])
        page = try ChangePage(
            access: access, since: parsed, limit: limit, current: try SQLiteStore.currentSeq(db), prunedThrough: bounds?[0] ?? 0, heldAt: bounds?[1])
        var recordFilter = "owner = ? AND zone = ? AND seq > ? AND seq <= ?"
        var tombstoneFilter = recordFilter + " AND kind = 'deleted'"
        var arguments: StatementArguments = [zone.owner, zone.name, page.since, page.current]
        if !access.isOwner {
            let shares = access.readableShares
            let placeholders = Array(repeating: "?", count: shares.count).joined(separator: ",")
            recordFilter += " AND share_id IN (\(placeholders))"
            tombstoneFilter = "owner = ? AND zone = ? AND seq > ? AND seq <= ? AND share_id IN (\(placeholders))"
            arguments += StatementArguments(shares)
        }
        self.arguments = arguments
        recordSQL = "SELECT \(StoredRecord.columns) FROM records WHERE \(recordFilter) ORDER BY seq LIMIT \(limit + 1)"
        tombstoneSQL = "SELECT record_name, seq FROM tombstones WHERE \(tombstoneFilter) ORDER BY seq LIMIT \(limit + 1)"
    }

    func tombstones(_ db: Database) throws -> [(seq: Int64, name: String)] {
        try Row.fetchAll(db.cachedStatement(sql: tombstoneSQL), arguments: arguments).map { (seq: $0["seq"] as Int64, name: $0["record_name"] as String) }
    }
}
