import GRDB
import NotesModel

/// What a page of a zone's changes is read from: the caller's view of the zone (all of
/// it for the owner, the shares' records for a participant), from where the token left
/// off, and where the page ends.
struct ChangeQuery {
    let recordSQL: String
    let tombstoneSQL: String
    let arguments: StatementArguments
    let limit: Int
    let current: Int64
    let access: ZoneAccess

    init(_ db: Database, zone: ZoneID, since parsed: ZoneChangeToken?, limit: Int, actor: String) throws {
        access = try ZoneAccess.load(db, zone: zone, actor: actor)
        current = try SQLiteStore.currentSeq(db)
        self.limit = limit
        if let parsed {
            if parsed.epoch != access.epoch {
                throw NotesError(.changeTokenExpired, "The zone \(zone.name) was deleted and created again; fetch all its records from scratch.")
            }
            if parsed.membership != access.membershipSeq {
                throw NotesError(.changeTokenExpired, "Your access to \(zone.owner)'s notes changed; fetch all records from scratch.")
            }
            if parsed.seq > current {
                throw NotesError(.invalidArguments, "The change token is not one this server issued; fetch without a token to start over.")
            }
        }
        var recordFilter = "owner = ? AND zone = ? AND seq > ?"
        var tombstoneFilter = recordFilter + " AND kind = 'deleted'"
        var arguments: StatementArguments = [zone.owner, zone.name, parsed?.seq ?? 0]
        if !access.isOwner {
            let shares = access.readableShares
            let placeholders = Array(repeating: "?", count: shares.count).joined(separator: ",")
            recordFilter += " AND share_id IN (\(placeholders))"
            tombstoneFilter = "owner = ? AND zone = ? AND seq > ? AND share_id IN (\(placeholders))"
            arguments += StatementArguments(shares)
        }
        self.arguments = arguments
        recordSQL = "SELECT \(StoredRecord.columns) FROM records WHERE \(recordFilter) ORDER BY seq LIMIT \(limit + 1)"
        tombstoneSQL = "SELECT record_name, seq FROM tombstones WHERE \(tombstoneFilter) ORDER BY seq LIMIT \(limit + 1)"
    }

    func tombstones(_ db: Database) throws -> [(seq: Int64, name: String)] {
        try Row.fetchAll(db.cachedStatement(sql: tombstoneSQL), arguments: arguments).map { (seq: $0["seq"] as Int64, name: $0["record_name"] as String) }
    }

    /// Where the page ends: records and tombstones merged in change order, cut after
    /// `limit` of them (or at the zone's present when fewer are left), and at the last
    /// record read when reading stopped early for size (`recordsCutShort`).
    func end(recordSeqs: [Int64], tombstones: [(seq: Int64, name: String)], recordsCutShort: Bool = false) -> (cut: Int64, moreComing: Bool) {
        var seqs = recordSeqs + tombstones.map(\.seq)
        seqs.sort()
        var moreComing = seqs.count > limit
        var cut = moreComing ? seqs[limit - 1] : current
        if recordsCutShort, let last = recordSeqs.last, last < cut {
            cut = last
            moreComing = true
        }
        return (cut, moreComing)
    }

    func token(_ cut: Int64) -> String {
        ZoneChangeToken(epoch: access.epoch, seq: cut, membership: access.membershipSeq).encoded
    }

    /// The names deleted within the page. A tombstone of a record that exists again in
    /// the page is dropped, so a client never deletes what it should keep.
    static func deleted(_ tombstones: [(seq: Int64, name: String)], upTo cut: Int64, present: Set<String>) -> [String] {
        var deleted: [String] = []
        var seen = Set<String>()
        for tombstone in tombstones where tombstone.seq <= cut && !present.contains(tombstone.name) && seen.insert(tombstone.name).inserted {
            deleted.append(tombstone.name)
        }
        return deleted
    }
}
