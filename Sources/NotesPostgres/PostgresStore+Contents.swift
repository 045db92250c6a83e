import Foundation
import NotesModel
import NotesStoreRules
import PostgresNIO

/// Large contents written apart from the modify that uses them (`SeparateContents`):
/// in transactions of their own that take no number, so the zone's counter is held
/// only for the modify's own, short transaction.
extension PostgresStore {
    /// How long a content written apart may wait for its modify before the retention
    /// pass deletes it (only a crash between the two leaves one that long).
    static let abandonedContentSeconds: Double = 3_600

    /// Writes the large contents of `saves`, each group in a transaction of its own,
    /// and returns each record name's content id. Writes nothing for a caller who may
    /// save nothing in the zone: the modify itself then refuses them with its reason.
    func writeApart(_ saves: [RecordSave], in zone: ZoneID, actor: String) async throws(NotesError) -> [String: Int64] {
        let groups = SeparateContents.groups(saves)
        guard !groups.isEmpty else { return [:] }
        let maySave = try await read { sql in try await PostgresRecords.access(sql, zone: zone, actor: actor).maySaveSomething }
        guard maySave else { return [:] }
        var written: [String: Int64] = [:]
        do {
            for group in groups {
                let ids: [(String, Int64)] = try await write(.none) { context in
                    var ids: [(String, Int64)] = []
                    for index in group {
                        let save = saves[index]
                        let id = try await context.sql.value(
                            """
                            WITH content AS (
                                INSERT INTO contents (owner, zone, body, bytes, size)
                                VALUES (\(zone.owner), \(zone.name), \(PostgresRecords.storedText(save.body)), \(save.bytes), \(Int64(save.contentSize))) RETURNING id)
                            INSERT INTO staged_contents (content_id, staged_at) SELECT id, \(context.now.storedValue) FROM content RETURNING content_id
                            """, as: Int64.self)
                        guard let id else { throw NotesError(.internalError, "A content was written without an id.") }
                        ids.append((save.recordName, id))
                    }
                    return ids
                }
                for (name, id) in ids { written[name] = id }
            }
        } catch {
            await dropWrittenApart(Array(written.values))
            throw error
        }
        return written
    }

    /// Inside the modify's transaction: its contents are in use, and count toward the
    /// storage of `zone`'s owner (`bytes`), from now on. Throws if one of them is gone
    /// (deleted as abandoned), changing nothing.
    static func takeWrittenApart(_ sql: SQL, _ ids: [Int64], charging bytes: Int64, to zone: ZoneID) async throws {
        guard !ids.isEmpty else { return }
        let taken = try await sql.count("DELETE FROM staged_contents WHERE content_id = ANY(\(ids)) RETURNING 1")
        guard taken == ids.count else {
            throw NotesError(.serviceUnavailable, "The server dropped this request's contents while it waited; send it again.")
        }
        try await sql.execute(
            "INSERT INTO usage AS u (owner, zone, bytes) VALUES (\(zone.owner), \(zone.name), \(bytes)) ON CONFLICT (owner, zone) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes")
    }

    /// Deletes contents written for a modify that did not commit.
    func dropWrittenApart(_ ids: [Int64]) async {
        guard !ids.isEmpty else { return }
        do {
            try await write(.none) { context in try await Self.drop(context.sql, .these(ids)) }
        } catch {
            logger.warning("contents of a failed modify stay until the retention pass", metadata: ["error": "\(error)"])
        }
    }

    /// Deletes contents whose modify never came (notesd stopped in between), in the
    /// retention pass.
    func dropAbandonedContents() async throws(NotesError) {
        let before = clock().storedValue - Self.abandonedContentSeconds
        try await write(.none) { context in try await Self.drop(context.sql, .stagedBefore(before)) }
    }

    /// Deletes staged contents and their staging rows: the contents first, while still
    /// staged (so uncounted: `usage_of_deleted_content`), their staging rows locked so a
    /// modify taking one meanwhile waits and then finds it gone.
    private static func drop(_ sql: SQL, _ staged: Staged) async throws {
        switch staged {
        case .these(let ids):
            try await sql.execute("DELETE FROM contents WHERE id IN (SELECT content_id FROM staged_contents WHERE content_id = ANY(\(ids)) FOR UPDATE)")
            try await sql.execute("DELETE FROM staged_contents WHERE content_id = ANY(\(ids))")
        case .stagedBefore(let time):
            try await sql.execute("DELETE FROM contents WHERE id IN (SELECT content_id FROM staged_contents WHERE staged_at < \(time) FOR UPDATE)")
            try await sql.execute("DELETE FROM staged_contents WHERE staged_at < \(time)")
        }
    }

    private enum Staged {
        case these([Int64])
        case stagedBefore(Double)
    }
}
