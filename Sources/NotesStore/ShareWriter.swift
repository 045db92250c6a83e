import Foundation
import GRDB
import NotesModel

/// Share bookkeeping that several operations need inside their transaction.
struct ShareWriter {
    let context: WriteContext
    var db: Database { context.db }

    /// Moves one record from one share to another (either may be `nil`), with a new
    /// change seq so that owners and the new share's participants fetch it, and a
    /// 'left' tombstone so that the old share's participants drop it.
    func setShare(of recordName: String, in zone: ZoneID, from oldShare: String?, to newShare: String?) throws {
        let seq = context.nextSeq()
        try db.cachedStatement(sql: "UPDATE records SET share_id = ?, seq = ? WHERE owner = ? AND zone = ? AND record_name = ?").execute(arguments: [
            newShare, seq, zone.owner, zone.name, recordName,
        ])
        if let oldShare, oldShare != newShare {
            try db.cachedStatement(sql: "INSERT INTO tombstones (owner, zone, record_name, seq, share_id, kind) VALUES (?, ?, ?, ?, ?, 'left')").execute(arguments: [
                zone.owner, zone.name, recordName, seq, oldShare,
            ])
        }
    }

    /// Stops a share: every participant is removed (and told), and its records become
    /// private again. The row stays, marked stopped, so participants' database changes
    /// can report the zone gone.
    func stop(shareID: String, zone: ZoneID) throws {
        let seq = context.nextSeq()
        let accounts = try String.fetchAll(
            db.cachedStatement(sql: "SELECT account FROM participants WHERE share_id = ? AND account IS NOT NULL AND role != 'owner' AND status != 'removed'"), arguments: [shareID]
        )
        try db.cachedStatement(sql: "UPDATE participants SET status = 'removed', changed_seq = ? WHERE share_id = ? AND role != 'owner'").execute(arguments: [seq, shareID])
        try db.cachedStatement(sql: "UPDATE shares SET stopped = 1 WHERE id = ?").execute(arguments: [shareID])
        let members = try String.fetchAll(db.cachedStatement(sql: "SELECT record_name FROM records WHERE share_id = ?"), arguments: [shareID])
        for name in members {
            try setShare(of: name, in: zone, from: shareID, to: nil)
        }
        for account in accounts {
            context.notices.insert(ChangeNotice(account: account, scope: .shared, zone: nil))
        }
        context.notices.insert(ChangeNotice(account: zone.owner, scope: .private, zone: zone))
    }
}
