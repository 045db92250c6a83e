import Foundation
import GRDB
import NotesModel

/// The same work straight on GRDB: the same SQLite settings as notesd (WAL,
/// `synchronous = FULL`), a records table of the same shape with the same indexes,
/// one transaction per save or per batch, and a full read decoded into values.
struct GRDBBaseline {
    let pool: DatabasePool

    init(path: String) throws {
        pool = try DatabasePool(path: path)
        // As in notesd: after opening, since GRDB sets its writer to NORMAL.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        try pool.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE records (
                        owner TEXT NOT NULL, zone TEXT NOT NULL, record_name TEXT NOT NULL, record_type TEXT NOT NULL,
                        name TEXT NOT NULL, parent TEXT NOT NULL DEFAULT '', body TEXT, bytes BLOB,
                        created_at REAL NOT NULL, modified_at REAL NOT NULL, modified_by TEXT NOT NULL, seq INTEGER NOT NULL, share_id TEXT,
                        PRIMARY KEY (owner, zone, record_name));
                    CREATE UNIQUE INDEX records_by_path ON records(owner, zone, parent, name);
                    CREATE INDEX records_by_seq ON records(owner, zone, seq);
                    """)
        }
    }

    private static func insert(_ db: Database, _ save: RecordSave, seq: Int) throws {
        let now = Date().timeIntervalSince1970
        try db.execute(
            sql: """
                INSERT INTO records (owner, zone, record_name, record_type, name, parent, body, created_at, modified_at, modified_by, seq)
                VALUES ('bench', 'bench', ?, ?, ?, '', ?, ?, ?, 'bench', ?)
                """, arguments: [save.recordName, save.recordType.rawValue, save.name, save.body, now, now, seq])
    }

    func insertEach(_ saves: [RecordSave]) throws {
        for (index, save) in saves.enumerated() {
            try pool.write { db in try Self.insert(db, save, seq: index) }
        }
    }

    func insertBatch(_ saves: [RecordSave]) throws {
        try pool.write { db in
            for (index, save) in saves.enumerated() { try Self.insert(db, save, seq: 1_000_000 + index) }
        }
    }

    /// Reads every record into `Record` values, as a client would hold them.
    func fetchAll() throws -> Int {
        try pool.read { db in
            let zone = ZoneID(owner: "bench", name: "bench")
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM records WHERE owner = 'bench' AND zone = 'bench' ORDER BY seq")
            var records: [NotesModel.Record] = []
            while let row = try rows.next() {
                records.append(
                    NotesModel.Record(
                        recordName: row["record_name"], zone: zone, recordType: RecordType(rawValue: row["record_type"]) ?? .note,
                        name: row["name"], parent: nil, body: row["body"], bytes: row["bytes"],
                        createdAt: Date(timeIntervalSince1970: row["created_at"]), modifiedAt: Date(timeIntervalSince1970: row["modified_at"]),
                        modifiedBy: row["modified_by"], changeTag: String(row["seq"] as Int64, radix: 36), shareID: row["share_id"]))
            }
            return records.count
        }
    }
}
