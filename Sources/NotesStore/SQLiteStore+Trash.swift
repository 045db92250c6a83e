import Foundation
import GRDB
import GRDBSQLite
public import NotesModel

/// The trash: deleted records kept with their last version for `storage.trashDays`
/// (the row is written by `RecordWriter.delete`).
extension SQLiteStore {
    public func trash(in zone: ZoneID, actor: String) async throws(NotesError) -> [TrashedRecord] {
        try await readAside { db in
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            return try Self.trashed(db, in: zone, access: access).map(\.record)
        }
    }

    /// The trash written as JSON straight from SQLite's column buffers (as
    /// `RecordRowJSON` writes change pages): 10,000 entries cost ~70 ms as values.
    public func trashJSON(in zone: ZoneID, actor: String) async throws(NotesError) -> [UInt8] {
        try await readAside { db in
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            let statement = try db.cachedStatement(sql: Self.trashSQL)
            let row = statement.sqliteStatement
            func column(_ index: Int32) -> UnsafeRawBufferPointer? {
                guard sqlite3_column_type(row, index) != SQLITE_NULL else { return nil }
                return UnsafeRawBufferPointer(start: sqlite3_column_blob(row, index), count: Int(sqlite3_column_bytes(row, index)))
            }
            func text(_ index: Int32, _ name: StaticString, into out: inout [UInt8]) {
                JSONBytes.key(name, into: &out)
                JSONBytes.string(column(index) ?? UnsafeRawBufferPointer(start: nil, count: 0), into: &out)
                out.append(UInt8(ascii: ","))
            }
            var out = Array(#"{"trash":["#.utf8)
            var first = true
            let cursor = try Row.fetchCursor(statement, arguments: [zone.owner, zone.name])
            while try cursor.next() != nil {
                let share = column(5)
                if !access.isOwner && !access.canRead(shareID: share.map { String(decoding: $0, as: UTF8.self) }) { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out.append(UInt8(ascii: "{"))
                JSONBytes.field("changeTag", RecordRules.changeTag(sqlite3_column_int64(row, 8)), into: &out)
                JSONBytes.date("deletedAt", secondsSince1970: sqlite3_column_double(row, 7), into: &out)
                text(6, "deletedBy", into: &out)
                text(2, "name", into: &out)
                if let parent = column(3), !parent.isEmpty {
                    JSONBytes.key("parent", into: &out)
                    JSONBytes.string(parent, into: &out)
                    out.append(UInt8(ascii: ","))
                }
                text(0, "recordName", into: &out)
                text(1, "recordType", into: &out)
                if let share {
                    JSONBytes.key("shareID", into: &out)
                    JSONBytes.string(share, into: &out)
                    out.append(UInt8(ascii: ","))
                }
                JSONBytes.key("size", into: &out)
                out.append(contentsOf: String(sqlite3_column_int64(row, 4)).utf8)
                out.append(UInt8(ascii: "}"))
            }
            out.append(contentsOf: "]}".utf8)
            return out
        }
    }

    public func trashedContent(in zone: ZoneID, under recordName: String, actor: String) async throws(NotesError) -> [TrashedContent] {
        try await readAside { db in
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            return try TrashRules.subtree(of: recordName, in: try Self.trashed(db, in: zone, access: access))
        }
    }

    public func trashedBodies(_ entries: [TrashedContent], in zone: ZoneID) async throws(NotesError) -> [TrashedContent] {
        try await readAside { db in
            var filled = entries
            for index in filled.indices where filled[index].record.recordType != .folder {
                filled[index].body = StoredRecord.text(
                    try Data.fetchOne(
                        db.cachedStatement(
                            sql: """
                                SELECT \(StoredRecord.body("versions")) FROM versions WHERE owner = ? AND zone = ? AND record_name = ? AND seq = ?
                                """), arguments: [zone.owner, zone.name, filled[index].record.recordName, filled[index].versionSeq]))
            }
            return filled
        }
    }

    /// Restored records take up their earlier histories (and the restore under way they
    /// belong to, if any) and leave the trash, inside the restore's modify.
    static func joinHistories(_ db: Database, _ records: [RestoredRecord], in zone: ZoneID, restore: String?) throws {
        for record in records {
            try db.cachedStatement(sql: "UPDATE records SET created_seq = ?, restore_id = ? WHERE owner = ? AND zone = ? AND record_name = ?")
                .execute(arguments: [record.createdSeq, restore, zone.owner, zone.name, record.recordName])
            try db.cachedStatement(sql: "DELETE FROM trash WHERE owner = ? AND zone = ? AND record_name = ?")
                .execute(arguments: [zone.owner, zone.name, record.recordName])
        }
    }

    @discardableResult
    public func purgeTrash(maxRecords: Int = 200) async throws(NotesError) -> Int {
        let cutoff = storage.trashExpiring(at: clock()).storedValue
        var removed = 0
        while true {
            let count: Int = try await write { context in
                let db = context.db
                let rows = try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT owner, zone, record_name, created_seq FROM trash WHERE deleted_at < ? ORDER BY deleted_at LIMIT ?
                            """), arguments: [cutoff, maxRecords])
                for row in rows {
                    let (owner, zone, name, createdSeq) = (row[0] as String, row[1] as String, row[2] as String, row[3] as Int64)
                    // The history goes with it, unless the same record lives again.
                    try db.cachedStatement(
                        sql: """
                            DELETE FROM versions WHERE owner = ? AND zone = ? AND record_name = ? AND created_seq = ?
                              AND NOT EXISTS (SELECT 1 FROM records WHERE owner = ? AND zone = ? AND record_name = ? AND created_seq = ?)
                            """
                    ).execute(arguments: [owner, zone, name, createdSeq, owner, zone, name, createdSeq])
                    try db.cachedStatement(sql: "DELETE FROM trash WHERE owner = ? AND zone = ? AND record_name = ?").execute(arguments: [owner, zone, name])
                }
                return rows.count
            }
            removed += count
            if count < maxRecords { break }
        }
        if removed > 0 { logger.info("trash purge", metadata: ["removed": "\(removed)", "days": "\(storage.trashDays)"]) }
        return removed
    }

    /// The zone's trash as the caller may see it: records deleted from shares it can
    /// read (all of them for the owner), and not living again under the same name.
    static let trashSQL = """
        SELECT t.record_name, t.record_type, t.name, t.parent, t.size, t.share_id, t.deleted_by, t.deleted_at, t.version_seq, t.created_seq
        FROM trash t WHERE t.owner = ? AND t.zone = ?
          AND NOT EXISTS (SELECT 1 FROM records r WHERE r.owner = t.owner AND r.zone = t.zone AND r.record_name = t.record_name)
        ORDER BY t.deleted_at DESC, t.record_name
        """

    static func trashed(_ db: Database, in zone: ZoneID, access: ZoneAccess) throws -> [TrashedContent] {
        try Row.fetchAll(db.cachedStatement(sql: trashSQL), arguments: [zone.owner, zone.name]).compactMap { row in
            let shareID: String? = row[5]
            guard access.isOwner || access.canRead(shareID: shareID) else { return nil }
            let parent: String = row[3]
            return TrashedContent(
                record: TrashedRecord(
                    recordName: row[0], recordType: RecordType(rawValue: row[1]) ?? .note, name: row[2], parent: parent.isEmpty ? nil : parent,
                    size: row[4], shareID: shareID, deletedBy: row[6], deletedAt: Date(stored: row[7]), changeTag: RecordRules.changeTag(row[8])),
                body: nil, createdSeq: row[9], versionSeq: row[8])
        }
    }
}
