import Foundation
public import NotesModel
import PostgresNIO

/// The trash: deleted records kept with their last version for `storage.trashDays`
/// (the row is written by `DeleteRecord`), as `SQLiteStore` keeps it.
extension PostgresStore {
    public func trash(in zone: ZoneID, actor: String) async throws(NotesError) -> [TrashedRecord] {
        try await read { sql in
            let access = try await PostgresRecords.access(sql, zone: zone, actor: actor)
            return try await Self.trashed(sql, in: zone, access: access).map(\.record)
        }
    }

    public func trashedContent(in zone: ZoneID, under recordName: String, actor: String) async throws(NotesError) -> [TrashedContent] {
        try await read { sql in
            let access = try await PostgresRecords.access(sql, zone: zone, actor: actor)
            return try TrashRules.subtree(of: recordName, in: try await Self.trashed(sql, in: zone, access: access))
        }
    }

    public func trashedBodies(_ entries: [TrashedContent], in zone: ZoneID) async throws(NotesError) -> [TrashedContent] {
        try await read { sql in
            var filled = entries
            for index in filled.indices where filled[index].record.recordType != .folder {
                filled[index].body = try await sql.value(
                    """
                    SELECT \(unescaped: PostgresRecords.body("versions")) FROM versions
                    WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(filled[index].record.recordName) AND seq = \(filled[index].versionSeq)
                    """, as: Data?.self
                ).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
            }
            return filled
        }
    }

    /// Restored records take up their earlier histories (and the restore under way they
    /// belong to, if any) and leave the trash, inside the restore's modify.
    static func joinHistories(_ sql: SQL, _ records: [RestoredRecord], in zone: ZoneID, restore: String?) async throws {
        guard !records.isEmpty else { return }
        try await sql.execute(
            """
            UPDATE records r SET created_seq = j.created_seq, restore_id = \(restore)
            FROM unnest(\(records.map(\.recordName))::text[], \(records.map(\.createdSeq))::bigint[]) AS j(record_name, created_seq)
            WHERE r.owner = \(zone.owner) AND r.zone = \(zone.name) AND r.record_name = j.record_name
            """)
        try await sql.execute(
            "DELETE FROM trash WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = ANY(\(records.map(\.recordName))::text[])")
    }

    @discardableResult
    public func purgeTrash(maxRecords: Int = 200) async throws(NotesError) -> Int {
        let cutoff = storage.trashExpiring(at: clock()).storedValue
        var removed = 0
        // A zone at a time, holding its counter (as `pruneVersions`: the usage rows its
        // deletes update are the ones a modify updates).
        while let next = try await read({ sql in
            try await sql.row("SELECT owner, zone FROM trash WHERE deleted_at < \(cutoff) ORDER BY deleted_at LIMIT 1").map { try $0.decode((String, String).self) }
        }) {
            let zone = ZoneID(owner: next.0, name: next.1)
            let count = try await write(.zone(zone)) { context in
                let sql = context.sql
                let rows = try await sql.rows(
                    """
                    SELECT record_name, created_seq FROM trash WHERE owner = \(zone.owner) AND zone = \(zone.name) AND deleted_at < \(cutoff)
                    ORDER BY deleted_at LIMIT \(maxRecords)
                    """
                ).map { try $0.decode((String, Int64).self) }
                for (name, createdSeq) in rows {
                    // The history goes with it, unless the same record lives again.
                    try await sql.execute(
                        """
                        DELETE FROM versions WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(name) AND created_seq = \(createdSeq)
                          AND NOT EXISTS (SELECT 1 FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(name) AND created_seq = \(createdSeq))
                        """)
                    try await sql.execute("DELETE FROM trash WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(name)")
                }
                return rows.count
            }
            removed += count
            if count == 0 { break }
        }
        if removed > 0 { logger.info("trash purge", metadata: ["removed": "\(removed)", "days": "\(storage.trashDays)"]) }
        return removed
    }

    /// The zone's trash as the caller may see it: records deleted from shares it can
    /// read (all of them for the owner), and not living again under the same name.
    static func trashed(_ sql: SQL, in zone: ZoneID, access: ZoneAccess) async throws -> [TrashedContent] {
        try await sql.rows(
            """
            SELECT t.record_name, t.record_type, t.name, t.parent, t.size, t.share_id, t.deleted_by, t.deleted_at, t.version_seq, t.created_seq
            FROM trash t WHERE t.owner = \(zone.owner) AND t.zone = \(zone.name)
              AND NOT EXISTS (SELECT 1 FROM records r WHERE r.owner = t.owner AND r.zone = t.zone AND r.record_name = t.record_name)
            ORDER BY t.deleted_at DESC, t.record_name COLLATE "C"
            """
        ).compactMap { row in
            let (recordName, type, name, parent, size, shareID, deletedBy, deletedAt, versionSeq, createdSeq) =
                try row.decode((String, String, String, String, Int64, String?, String, Double, Int64, Int64).self)
            guard access.isOwner || access.canRead(shareID: shareID) else { return nil }
            return TrashedContent(
                record: TrashedRecord(
                    recordName: recordName, recordType: RecordType(rawValue: type) ?? .note, name: name, parent: parent.isEmpty ? nil : parent,
                    size: Int(size), shareID: shareID, deletedBy: deletedBy, deletedAt: Date(stored: deletedAt), changeTag: RecordRules.changeTag(versionSeq)),
                body: nil, createdSeq: createdSeq, versionSeq: versionSeq)
        }
    }
}
