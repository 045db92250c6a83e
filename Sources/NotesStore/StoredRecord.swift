import Foundation
import GRDB
import NotesModel
import NotesStoreRules

/// Reading records and change tags out of rows.
enum StoredRecord {
    static func changeTag(_ seq: Int64) -> String { RecordRules.changeTag(seq) }

    /// A note's text as stored: its UTF-8 bytes, bound as a blob. GRDB binds and reads a
    /// `String` as a C string, which ends at the first NUL: a note holding one (a file
    /// written with a hole, say) was cut there and saved empty (the exerciser found it).
    static func storedText(_ text: String?) -> Data? {
        text.map { Data($0.utf8) }
    }

    /// A note's text from its column, whole (NULs included), text or blob alike.
    static func text(_ value: Data?) -> String? {
        value.map { String(decoding: $0, as: UTF8.self) }
    }

    static func record(from row: Row, zone: ZoneID) -> NotesModel.Record {
        let parent: String = row["parent"]
        return NotesModel.Record(
            recordName: row["record_name"],
            zone: zone,
            recordType: RecordType(rawValue: row["record_type"]) ?? .note,
            name: row["name"],
            parent: parent.isEmpty ? nil : parent,
            body: text(row["body"]),
            bytes: row["bytes"],
            createdAt: Date(stored: row["created_at"]),
            modifiedAt: Date(stored: row["modified_at"]),
            modifiedBy: row["modified_by"],
            changeTag: changeTag(row["seq"]),
            shareID: row["share_id"])
    }

    /// The columns `record(fromColumns:)` reads, by position (faster than by name on
    /// pages of thousands of rows).
    static let columns = "record_name, record_type, name, parent, \(body("records")), \(bytes("records")), created_at, modified_at, modified_by, seq, share_id"

    /// The text of a row of `table` (records or versions), inline or written apart
    /// (`SeparateContents`), as a column named `body`.
    static func body(_ table: String) -> String {
        bodyValue(table) + " AS body"
    }

    /// The same value, as an expression.
    static func bodyValue(_ table: String) -> String {
        "CASE WHEN \(table).content_id IS NULL THEN \(table).body ELSE (SELECT c.body FROM contents c WHERE c.id = \(table).content_id) END"
    }

    /// The attachment of a row of `records`, inline or written apart, as `bytes`.
    static func bytes(_ table: String) -> String {
        "CASE WHEN \(table).content_id IS NULL THEN \(table).bytes ELSE (SELECT c.bytes FROM contents c WHERE c.id = \(table).content_id) END AS bytes"
    }

    /// The bytes a row of `records` holds, inline and written apart.
    static let recordSize = """
        COALESCE(length(CAST(body AS BLOB)), 0) + COALESCE(length(bytes), 0)
          + COALESCE((SELECT c.size FROM contents c INDEXED BY contents_sizes WHERE c.id = records.content_id), 0)
        """

    static func record(fromColumns row: Row, zone: ZoneID) -> NotesModel.Record {
        let parent: String = row[3]
        return NotesModel.Record(
            recordName: row[0], zone: zone, recordType: RecordType(rawValue: row[1]) ?? .note, name: row[2],
            parent: parent.isEmpty ? nil : parent, body: text(row[4]), bytes: row[5],
            createdAt: Date(stored: row[6]), modifiedAt: Date(stored: row[7]), modifiedBy: row[8],
            changeTag: changeTag(row[9]), shareID: row[10])
    }

    static func fetch(_ db: Database, _ recordName: String, in zone: ZoneID) throws -> NotesModel.Record? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(columns) FROM records WHERE owner = ? AND zone = ? AND record_name = ?"),
            arguments: [zone.owner, zone.name, recordName]
        )
        .map { record(fromColumns: $0, zone: zone) }
    }

    /// The record without its body or bytes: what checks need, without reading content.
    static func fetchMetadata(_ db: Database, _ recordName: String, in zone: ZoneID) throws -> NotesModel.Record? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT record_name, record_type, name, parent, NULL AS body, NULL AS bytes, created_at, modified_at, modified_by, seq, share_id
                    FROM records WHERE owner = ? AND zone = ? AND record_name = ?
                    """), arguments: [zone.owner, zone.name, recordName]
        )
        // (By position, as `columns`: by name, each column is found by a case-insensitive
        // comparison of names, which made half of a batch's time in the writer.)
        .map { record(fromColumns: $0, zone: zone) }
    }

    /// Keeps the record's current state as a version before it is overwritten or
    /// deleted; the versions table holds every state but the current one.
    static func keepVersion(_ db: Database, _ recordName: String, in zone: ZoneID) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO versions (owner, zone, record_name, seq, name, parent, body, content_id, size, modified_by, modified_at, created_seq)
                SELECT owner, zone, record_name, seq, name, parent, body, \(SeparateContents.versionContentSQL), \(recordSize), modified_by, modified_at, created_seq
                FROM records WHERE owner = ? AND zone = ? AND record_name = ?
                """
        ).execute(arguments: [zone.owner, zone.name, recordName])
    }

    /// The record names below `recordName` (not itself), at any depth.
    static func descendants(_ db: Database, of recordName: String, in zone: ZoneID) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(
                sql: """
                    WITH RECURSIVE below(record_name) AS (
                        SELECT record_name FROM records WHERE owner = ?1 AND zone = ?2 AND parent = ?3
                        UNION
                        SELECT r.record_name FROM records r JOIN below b ON r.owner = ?1 AND r.zone = ?2 AND r.parent = b.record_name
                    )
                    SELECT record_name FROM below
                    """), arguments: [zone.owner, zone.name, recordName])
    }
}
