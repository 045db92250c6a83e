import Foundation
import NotesModel
import PostgresNIO

/// Reading records, zones and access out of PostgreSQL rows (what `StoredRecord` and
/// `ZoneAccess.load` do for SQLite).
enum PostgresRecords {
    /// The columns `record(from:zone:)` reads, by position.
    static let columns = "record_name, record_type, name, parent, body, bytes, created_at, modified_at, modified_by, seq, share_id"
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

    /// Keeps the record's current state as a version before it is overwritten or
    /// deleted; the versions table holds every state but the current one.
    static func keepVersion(_ sql: SQL, _ recordName: String, in zone: ZoneID) async throws {
        try await sql.execute("""
            INSERT INTO versions (owner, zone, record_name, seq, name, parent, body, size, modified_by, modified_at, created_seq)
            SELECT owner, zone, record_name, seq, name, parent, body,
                   COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0), modified_by, modified_at, created_seq
            FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(recordName)
            """)
    }

    /// The record names below `recordName` (not itself), at any depth.
    static func descendants(_ sql: SQL, of recordName: String, in zone: ZoneID) async throws -> [String] {
        try await sql.column("""
            WITH RECURSIVE below(record_name) AS (
                SELECT record_name FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND parent = \(recordName)
                UNION
                SELECT r.record_name FROM records r JOIN below b ON r.owner = \(zone.owner) AND r.zone = \(zone.name) AND r.parent = b.record_name
            )
            SELECT record_name FROM below
            """, as: String.self)
    }

    static func currentSeq(_ sql: SQL) async throws -> Int64 {
        try await sql.value("SELECT value FROM counters WHERE name = 'seq'", as: Int64.self) ?? 0
    }

    /// Zones of others in which the caller has at least one readable, accepted share.
    static func sharedZoneIDs(_ sql: SQL, actor: String) async throws -> [ZoneID] {
        try await sql.rows("""
            SELECT s.owner, s.zone FROM participants p JOIN shares s ON s.id = p.share_id
            WHERE p.account = \(actor) AND p.status = 'accepted' AND p.role != 'owner' AND NOT s.stopped
              AND (p.role != 'publicUser' OR s.public_permission != 'none')
            GROUP BY s.owner, s.zone ORDER BY s.owner COLLATE "C", s.zone COLLATE "C"
            """).map { row in
            let (owner, name) = try row.decode((String, String).self)
            return ZoneID(owner: owner, name: name)
        }
    }

    /// The caller's access to a zone, read in the current transaction.
    static func access(_ sql: SQL, zone: ZoneID, actor: String) async throws -> ZoneAccess {
        guard let epoch = try await sql.value("SELECT epoch FROM zones WHERE owner = \(zone.owner) AND name = \(zone.name)", as: Int64.self) else {
            throw ZoneAccess.missing(zone, actor: actor)
        }
        let shares = try await sql.rows("SELECT id, root_record FROM shares WHERE owner = \(zone.owner) AND zone = \(zone.name) AND NOT stopped").map { row in
            let (id, root) = try row.decode((String, String?).self)
            return ZoneAccess.ActiveShare(id: id, rootRecord: root)
        }
        var participations: [ZoneAccess.Participation] = []
        if zone.owner != actor {
            participations = try await sql.rows("""
                SELECT s.id, s.public_permission, p.role, p.permission, p.status, p.changed_seq
                FROM participants p JOIN shares s ON s.id = p.share_id
                WHERE s.owner = \(zone.owner) AND s.zone = \(zone.name) AND p.account = \(actor)
                """).map { row in
                let (id, publicPermission, role, permission, status, changedSeq) = try row.decode((String, String, String, String, String, Int64).self)
                return ZoneAccess.Participation(shareID: id, publicPermission: publicPermission, role: role, permission: permission, status: status, changedSeq: changedSeq)
            }
        }
        return try ZoneAccess(zone: zone, epoch: epoch, actor: actor, shares: shares, participations: participations)
    }

    static func usage(_ sql: SQL, of owner: String) async throws -> Int64 {
        try await sql.value("SELECT bytes FROM usage WHERE owner = \(owner)", as: Int64.self) ?? 0
    }
}
