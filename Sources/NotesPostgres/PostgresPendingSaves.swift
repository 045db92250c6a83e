import Foundation
import NIOCore
import NotesModel
import NotesStoreRules
import PostgresNIO

/// Saves a modify has decided and not yet written, written together in at most three
/// statements (keep the versions, update, insert): a batch of 400 notes written one
/// statement at a time paid 800 round trips while it held the instance's writer and the
/// change counter, and every other account's save waited out all of them.
///
/// `PostgresRecordWriter` writes them before anything that reads the records table
/// again (a delete, a move, a record not read ahead) and at the end of the operation.
struct PostgresPendingSaves {
    /// One row to write; `body` and `bytes` are nil for a content written apart
    /// (`contentID`) or a kind of record without one.
    struct Row {
        let recordName: String
        let recordType: String
        let name: String
        let parent: String
        let body: Data?
        let bytes: Data?
        let seq: Int64
        let shareID: String?
        let contentID: Int64?
    }

    private(set) var updates: [Row] = []
    private(set) var inserts: [Row] = []

    var isEmpty: Bool { updates.isEmpty && inserts.isEmpty }

    mutating func update(_ row: Row) { updates.append(row) }
    mutating func insert(_ row: Row) { inserts.append(row) }

    /// Writes what is pending, in order: the versions of the records about to change,
    /// their updates, the new records.
    mutating func write(_ sql: SQL, zone: ZoneID, actor: String, now: Double) async throws {
        if !updates.isEmpty {
            let columns = Columns(updates)
            try await sql.execute(
                """
                INSERT INTO versions (owner, zone, record_name, seq, name, parent, body, content_id, size, modified_by, modified_at, created_seq)
                SELECT owner, zone, record_name, seq, name, parent, body, \(unescaped: SeparateContents.versionContentSQL), \(unescaped: PostgresRecords.size("records")), modified_by, modified_at, created_seq
                FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = ANY(\(columns.recordNames))
                """)
            try await sql.execute(
                """
                UPDATE records AS r SET name = u.name, parent = u.parent,
                    body = CASE WHEN u.has_body THEN u.body END, bytes = CASE WHEN u.has_bytes THEN u.bytes END,
                    modified_at = \(now), modified_by = \(actor), seq = u.seq, share_id = NULLIF(u.share_id, ''), content_id = NULLIF(u.content_id, 0)
                FROM unnest(\(columns.recordNames)::text[], \(columns.names)::text[], \(columns.parents)::text[], \(columns.bodies)::bytea[], \(columns.hasBody)::bool[],
                    \(columns.bytes)::bytea[], \(columns.hasBytes)::bool[], \(columns.seqs)::int8[], \(columns.shareIDs)::text[], \(columns.contentIDs)::int8[])
                    AS u(record_name, name, parent, body, has_body, bytes, has_bytes, seq, share_id, content_id)
                WHERE r.owner = \(zone.owner) AND r.zone = \(zone.name) AND r.record_name = u.record_name
                """)
            updates.removeAll()
        }
        if !inserts.isEmpty {
            let columns = Columns(inserts)
            try await sql.execute(
                """
                INSERT INTO records (owner, zone, record_name, record_type, name, parent, body, bytes, created_at, modified_at, modified_by, seq, share_id, created_seq, content_id)
                SELECT \(zone.owner), \(zone.name), u.record_name, u.record_type, u.name, u.parent,
                    CASE WHEN u.has_body THEN u.body END, CASE WHEN u.has_bytes THEN u.bytes END,
                    \(now), \(now), \(actor), u.seq, NULLIF(u.share_id, ''), u.seq, NULLIF(u.content_id, 0)
                FROM unnest(\(columns.recordNames)::text[], \(columns.recordTypes)::text[], \(columns.names)::text[], \(columns.parents)::text[], \(columns.bodies)::bytea[],
                    \(columns.hasBody)::bool[], \(columns.bytes)::bytea[], \(columns.hasBytes)::bool[], \(columns.seqs)::int8[], \(columns.shareIDs)::text[],
                    \(columns.contentIDs)::int8[])
                    AS u(record_name, record_type, name, parent, body, has_body, bytes, has_bytes, seq, share_id, content_id)
                ORDER BY u.seq
                """)
            inserts.removeAll()
        }
    }

    /// The rows as one array per column (PostgreSQL arrays hold no NULLs here: a flag or
    /// an impossible value stands for one: no share ID is empty, no content's ID is 0).
    private struct Columns {
        var recordNames: [String] = []
        var recordTypes: [String] = []
        var names: [String] = []
        var parents: [String] = []
        var bodies: [ByteBuffer] = []
        var hasBody: [Bool] = []
        var bytes: [ByteBuffer] = []
        var hasBytes: [Bool] = []
        var seqs: [Int64] = []
        var shareIDs: [String] = []
        var contentIDs: [Int64] = []

        init(_ rows: [Row]) {
            for row in rows {
                recordNames.append(row.recordName)
                recordTypes.append(row.recordType)
                names.append(row.name)
                parents.append(row.parent)
                bodies.append(ByteBuffer(bytes: row.body ?? Data()))
                hasBody.append(row.body != nil)
                bytes.append(ByteBuffer(bytes: row.bytes ?? Data()))
                hasBytes.append(row.bytes != nil)
                seqs.append(row.seq)
                shareIDs.append(row.shareID ?? "")
                contentIDs.append(row.contentID ?? 0)
            }
        }
    }
}
