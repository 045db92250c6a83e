import Foundation
import Logging
import NotesModel
import NotesPostgres
import PostgresNIO

/// The same work straight through postgres-nio from this process, on the same server
/// and database as notesd: a records table of notesd's shape and indexes (in a schema
/// of its own, dropped at the end), one transaction per save or per batch, and a full
/// read decoded into `Record` values.
struct PostgresBaseline {
    let client: PostgresClient
    let logger = Logger(label: "notes-bench.postgres")
    static let schema = "notes_bench_baseline"

    init(location: PostgresLocation) {
        client = PostgresClient(configuration: location.clientConfiguration(), backgroundLogger: logger)
    }

    /// Runs the pool around `body`, with the table made first and dropped after.
    func run<T: Sendable>(_ body: (PostgresBaseline) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(Self.schema) CASCADE"), logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(Self.schema)"), logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: """
                CREATE TABLE \(Self.schema).records (
                    owner TEXT NOT NULL, zone TEXT NOT NULL, record_name TEXT NOT NULL, record_type TEXT NOT NULL,
                    name TEXT NOT NULL, parent TEXT NOT NULL DEFAULT '', body BYTEA, bytes BYTEA,
                    created_at DOUBLE PRECISION NOT NULL, modified_at DOUBLE PRECISION NOT NULL, modified_by TEXT NOT NULL,
                    seq BIGINT NOT NULL, created_seq BIGINT NOT NULL DEFAULT 0, share_id TEXT,
                    PRIMARY KEY (owner, zone, record_name))
                """), logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: "CREATE UNIQUE INDEX ON \(Self.schema).records(owner, zone, parent, name)"), logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: "CREATE INDEX ON \(Self.schema).records(owner, zone, seq)"), logger: logger)
            let value = try await body(self)
            try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(Self.schema) CASCADE"), logger: logger)
            return value
        }
    }

    private func insert(_ connection: PostgresConnection, _ save: RecordSave, seq: Int) async throws {
        let now = Date().timeIntervalSince1970
        let body = save.body.map { Data($0.utf8) }
        try await connection.query("""
            INSERT INTO notes_bench_baseline.records (owner, zone, record_name, record_type, name, parent, body, created_at, modified_at, modified_by, seq)
            VALUES ('bench', 'bench', \(save.recordName), \(save.recordType.rawValue), \(save.name), '', \(body), \(now), \(now), 'bench', \(seq))
            """, logger: logger)
    }

    func insertEach(_ saves: ArraySlice<RecordSave>, from first: Int) async throws {
        for (offset, save) in saves.enumerated() {
            try await client.withTransaction(logger: logger) { connection in try await insert(connection, save, seq: first + offset) }
        }
    }

    func insertBatch(_ saves: [RecordSave], from first: Int) async throws {
        try await client.withTransaction(logger: logger) { connection in
            for (offset, save) in saves.enumerated() { try await insert(connection, save, seq: first + offset) }
        }
    }

    /// Reads every record into `Record` values, as a client would hold them.
    func fetchAll() async throws -> Int {
        let zone = ZoneID(owner: "bench", name: "bench")
        let rows = try await client.query("""
            SELECT record_name, record_type, name, body, created_at, modified_at, modified_by, seq, share_id
            FROM notes_bench_baseline.records WHERE owner = 'bench' AND zone = 'bench' ORDER BY seq
            """, logger: logger)
        var records: [NotesModel.Record] = []
        for try await (recordName, type, name, body, created, modified, modifiedBy, seq, shareID)
            in rows.decode((String, String, String, Data?, Double, Double, String, Int64, String?).self) {
            records.append(NotesModel.Record(
                recordName: recordName, zone: zone, recordType: RecordType(rawValue: type) ?? .note,
                name: name, parent: nil, body: body.map { String(decoding: $0, as: UTF8.self) }, bytes: nil,
                createdAt: Date(timeIntervalSince1970: created), modifiedAt: Date(timeIntervalSince1970: modified),
                modifiedBy: modifiedBy, changeTag: String(seq, radix: 36), shareID: shareID))
        }
        return records.count
    }
}
