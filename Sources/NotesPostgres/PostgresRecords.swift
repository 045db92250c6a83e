import Foundation
import NotesModel
import PostgresNIO

/// Reading records, zones and access out of PostgreSQL rows (what `StoredRecord` and
/// `ZoneAccess.load` do for SQLite).
enum PostgresRecords {
    /// The columns `record(from:zone:)` reads, by position.
    static let columns = "record_name, record_type, name, parent, \(body("records")), \(bytes("records")), created_at, modified_at, modified_by, seq, share_id"

    /// The text of a row of `table` (records or versions), inline or written apart
    /// (`SeparateContents`).
    static func body(_ table: String) -> String {
        "CASE WHEN \(table).content_id IS NULL THEN \(table).body ELSE (SELECT c.body FROM contents c WHERE c.id = \(table).content_id) END"
    }

    /// The attachment of a row of `records`, inline or written apart.
    static func bytes(_ table: String) -> String {
        "CASE WHEN \(table).content_id IS NULL THEN \(table).bytes ELSE (SELECT c.bytes FROM contents c WHERE c.id = \(table).content_id) END"
    }

    /// The bytes a row of `records` (or of rows taken from it, `table`) holds, inline
    /// and written apart.
    static func size(_ table: String) -> String {
        """
        COALESCE(octet_length(\(table).body), 0) + COALESCE(octet_length(\(table).bytes), 0)
          + COALESCE((SELECT c.size FROM contents c WHERE c.id = \(table).content_id), 0)
        """
    }

    /// The length of a version's text, inline or written apart (what a page of versions sends).
    static let versionBodySize = "COALESCE(octet_length(\(body("versions"))), 0)"
    /// The same without content: what checks need, without reading it.
    static let metadataColumns = "record_name, record_type, name, parent, NULL::BYTEA, NULL::BYTEA, created_at, modified_at, modified_by, seq, share_id"

    /// A note's text as stored: its UTF-8 bytes (NULs included).
    static func storedText(_ text: String?) -> Data? {
        text.map { Data($0.utf8) }
    }

    static func record(from row: PostgresRow, zone: ZoneID) throws -> (seq: Int64, record: Record) {
        let (recordName, type, name, parent, body, bytes, createdAt, modifiedAt, modifiedBy, seq, shareID) =
            try row.decode((String, String, String, String, Data?, Data?, Double, Double, String, Int64, String?).self)
        let record = Record(
            recordName: recordName, zone: zone, recordType: RecordType(rawValue: type) ?? .note, name: name,
            parent: parent.isEmpty ? nil : parent, body: body.map { String(decoding: $0, as: UTF8.self) }, bytes: bytes,
            createdAt: Date(stored: createdAt), modifiedAt: Date(stored: modifiedAt), modifiedBy: modifiedBy,
            changeTag: RecordRules.changeTag(seq), shareID: shareID)
        return (seq, record)
    }

    static func fetch(_ sql: SQL, _ recordName: String, in zone: ZoneID) async throws -> Record? {
        try await sql.row("SELECT \(unescaped: columns) FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(recordName)")
            .map { try record(from: $0, zone: zone).record }
    }

    static func fetchMetadata(_ sql: SQL, _ recordName: String, in zone: ZoneID) async throws -> Record? {
        try await sql.row("SELECT \(unescaped: metadataColumns) FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(recordName)")
            .map { try record(from: $0, zone: zone).record }
    }

    /// The record names below `recordName` (not itself), at any depth.
    static func descendants(_ sql: SQL, of recordName: String, in zone: ZoneID) async throws -> [String] {
        try await sql.column(
            """
            WITH RECURSIVE below(record_name) AS (
                SELECT record_name FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND parent = \(recordName)
                UNION
                SELECT r.record_name FROM records r JOIN below b ON r.owner = \(zone.owner) AND r.zone = \(zone.name) AND r.parent = b.record_name
            )
            SELECT record_name FROM below
            """, as: String.self)
    }

    /// The zone's last change number, the last change number whose tombstones it has
    /// lost (`TombstoneRetention`) and where its oldest restore under way began
    /// (`ChangePage.heldAt`), in one round trip.
    static func currentSeq(_ sql: SQL, in zone: ZoneID) async throws -> (current: Int64, pruned: Int64, held: Int64?) {
        guard
            let row = try await sql.row(
                """
                SELECT z.last_seq, z.pruned_seq, (SELECT MIN(since_seq) FROM restores WHERE owner = z.owner AND zone = z.name)
                FROM zones z WHERE z.owner = \(zone.owner) AND z.name = \(zone.name)
                """)
        else { return (0, 0, nil) }
        let (current, pruned, held) = try row.decode((Int64, Int64, Int64?).self)
        return (current, pruned, held)
    }

    /// The zone's last change number (0 when there is no such zone).
    static func lastSeq(_ sql: SQL, in zone: ZoneID) async throws -> Int64 {
        try await sql.value("SELECT last_seq FROM zones WHERE owner = \(zone.owner) AND name = \(zone.name)", as: Int64.self) ?? 0
    }

    /// Zones of others in which the caller has at least one readable, accepted share.
    static func sharedZoneIDs(_ sql: SQL, actor: String) async throws -> [ZoneID] {
        try await sql.rows(
            """
            SELECT s.owner, s.zone FROM participants p JOIN shares s ON s.id = p.share_id
            WHERE p.account = \(actor) AND p.status = 'accepted' AND p.role != 'owner' AND NOT s.stopped
              AND (p.role != 'publicUser' OR s.public_permission != 'none')
            GROUP BY s.owner, s.zone ORDER BY s.owner COLLATE "C", s.zone COLLATE "C"
            """
        ).map { row in
            let (owner, name) = try row.decode((String, String).self)
            return ZoneID(owner: owner, name: name)
        }
    }

    /// The caller's access to a zone, read in the current transaction.
    static func access(_ sql: SQL, zone: ZoneID, actor: String) async throws -> ZoneAccess {
        try await accessAndUsage(sql, zone: zone, actor: actor).access
    }

    /// What a modify reads before it writes, in one statement (a save pays a round trip
    /// per statement, and this is the first of them): the caller's access to the zone,
    /// the bytes its owner's zones hold, the accounts to tell of a change (accepted
    /// participants of its shares), and the metadata of the records named in `records`.
    static func accessAndUsage(_ sql: SQL, zone: ZoneID, actor: String, records names: [String] = [])
        async throws -> (access: ZoneAccess, ownerUsage: Int64, participants: [String], records: [Record])
    {
        guard let row = try await sql.rows(ReadForModify(owner: zone.owner, zone: zone.name, actor: actor, records: names)).first else {
            throw ZoneAccess.missing(zone, actor: actor)
        }
        let (epoch, sharesJSON, participationsJSON, usage, accounts, recordsJSON) = try row.decode((Int64, String, String, Int64, [String], String).self)
        let decoder = JSONDecoder()
        // (Most saves name one new record in a zone without shares: three empty lists,
        // not worth a decoder's work each.)
        func rows<Row: Decodable>(_ json: String, as type: Row.Type) throws -> [Row] {
            json == "[]" ? [] : try decoder.decode([Row].self, from: Data(json.utf8))
        }
        let shares = try rows(sharesJSON, as: ShareRow.self).map {
            ZoneAccess.ActiveShare(id: $0.id, rootRecord: $0.root)
        }
        let participations = try rows(participationsJSON, as: ParticipationRow.self).map {
            ZoneAccess.Participation(shareID: $0.id, publicPermission: $0.public, role: $0.role, permission: $0.permission, status: $0.status, changedSeq: $0.seq)
        }
        let records = try rows(recordsJSON, as: RecordRow.self).map { row in
            Record(
                recordName: row.r, zone: zone, recordType: RecordType(rawValue: row.t) ?? .note, name: row.n, parent: row.p.isEmpty ? nil : row.p,
                body: nil, bytes: nil, createdAt: Date(stored: row.c), modifiedAt: Date(stored: row.m), modifiedBy: row.b,
                changeTag: RecordRules.changeTag(row.s), shareID: row.h)
        }
        return (try ZoneAccess(zone: zone, epoch: epoch, actor: actor, shares: shares, participations: participations), usage, accounts, records)
    }

    /// A record's metadata as `accessAndUsage` reads it (what `metadataColumns` reads).
    private struct RecordRow: Decodable {
        var r: String, t: String, n: String, p: String, c: Double, m: Double, b: String, s: Int64, h: String?
    }

    /// One active share of a zone, as `accessAndUsage` reads it.
    private struct ShareRow: Decodable {
        var id: String
        var root: String?
    }

    /// The caller's part in one share of a zone, as `accessAndUsage` reads it.
    private struct ParticipationRow: Decodable {
        var id: String
        var `public`: String
        var role: String
        var permission: String
        var status: String
        var seq: Int64
    }

    static func usage(_ sql: SQL, of owner: String) async throws -> Int64 {
        try await sql.value("SELECT COALESCE(SUM(bytes), 0)::bigint FROM usage WHERE owner = \(owner)", as: Int64.self) ?? 0
    }
}
