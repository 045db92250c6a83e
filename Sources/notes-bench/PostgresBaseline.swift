import Foundation
import Logging
import NotesModel
import NotesPostgres
import PostgresNIO

/// The same work straight through postgres-nio from this process, on the same server
/// and database as notesd, two ways:
///
/// - the same statements: what notesd sends for a modify (`LockZone`,
///   `ReadForModify`, `InsertRecord`, `FinishModify` from NotesPostgres, prepared as
///   notesd prepares them), into notesd's own tables, in a zone of its own: what notesd
///   adds on top is HTTP, JSON, identity and the sharing rules between the statements;
/// - a bare INSERT: a records table of notesd's shape and indexes (in a schema of its
///   own, dropped at the end), one transaction per save or per batch: what the change
///   counter, the access read, versions, usage and notices cost on top of storing a row.
///
/// The change fetch is measured against a full read of the bare table decoded into
/// `Record` values.
struct PostgresBaseline {
    let client: PostgresClient
    let logger = Logger(label: "notes-bench.postgres")
    static let schema = "notes_bench_baseline"

    init(location: PostgresLocation) {
        client = PostgresClient(configuration: location.clientConfiguration(), backgroundLogger: logger)
    }

    /// Runs the pool around `body`, with the table made first and dropped after.
    func run<T: Sendable>(_ body: (PostgresBaseline) async throws -> T) async throws -> T {
        // The pool runs in a task that is cancelled, not awaited: awaiting its end after
        // cancelling it (in a task group) hung the bench two runs in six.
        let pool = Task { [client] in await client.run() }
        defer { pool.cancel() }
        do {
            try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(Self.schema) CASCADE"), logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(Self.schema)"), logger: logger)
            try await client.query(
                PostgresQuery(
                    unsafeSQL: """
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
        try await connection.query(
            """
            INSERT INTO notes_bench_baseline.records (owner, zone, record_name, record_type, name, parent, body, created_at, modified_at, modified_by, seq)
            VALUES ('bench', 'bench', \(save.recordName), \(save.recordType.rawValue), \(save.name), '', \(body), \(now), \(now), 'bench', \(seq))
            """, logger: logger)
    }

    /// notesd's statements for one modify of `saves`, in one transaction, with nothing
    /// between them: BEGIN, the zone's counter, the access read, an INSERT per record, the
    /// counter written back, COMMIT (notesd announces the change to other instances after
    /// the commit, gathered with others, outside the write).
    private func modify(_ saves: some Collection<RecordSave>, in zone: ZoneID, feed: PostgresChangeFeed) async throws {
        try await client.withTransaction(logger: logger) { connection in
            var seq: Int64 = 0
            for try await row in try await connection.execute(LockZone(zone), logger: logger) { (_, _, seq) = try row.decode((String, String, Int64).self) }
            let names = saves.map(\.recordName)
            for try await _ in try await connection.execute(
                ReadForModify(owner: zone.owner, zone: zone.name, actor: zone.owner, records: names), logger: logger)
            {}
            let now = Date().timeIntervalSince1970
            for save in saves {
                seq += 1
                for try await _ in try await connection.execute(
                    InsertRecord(
                        owner: zone.owner, zone: zone.name, recordName: save.recordName, recordType: save.recordType.rawValue, name: save.name,
                        parent: "", body: save.body.map { Data($0.utf8) }, bytes: nil, now: now, actor: zone.owner, seq: seq, shareID: nil),
                    logger: logger)
                {}
            }
            for try await _ in try await connection.execute(FinishModify(seq: seq, owner: zone.owner, zone: zone.name), logger: logger) {}
        }
    }

    /// One modify per save, as notesd's statements (see `modify`).
    func saveEach(_ saves: ArraySlice<RecordSave>, in zone: ZoneID, feed: PostgresChangeFeed) async throws {
        for save in saves { try await modify([save], in: zone, feed: feed) }
    }

    /// One modify of the whole batch, as notesd's statements (see `modify`).
    func saveBatch(_ saves: [RecordSave], in zone: ZoneID, feed: PostgresChangeFeed) async throws {
        try await modify(saves, in: zone, feed: feed)
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

    /// Pages through a zone of notesd's own tables with notesd's statements for a page of
    /// changes (a snapshot; the access read; the zone's counter; the content sizes; the
    /// tombstones; the records), each page's rows decoded into `Record` values.
    func fetchLikeNotesd(_ zone: ZoneID, pageSize: Int) async throws -> Int {
        var since: Int64 = 0
        var count = 0
        while true {
            let (rows, more): (Int, Int64?) = try await client.withConnection { connection in
                try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
                for try await _ in try await connection.execute(ReadForModify(owner: zone.owner, zone: zone.name, actor: zone.owner, records: []), logger: logger) {}
                for try await _ in try await connection.query(
                    "SELECT last_seq, pruned_seq FROM zones WHERE owner = \(zone.owner) AND name = \(zone.name)", logger: logger)
                {}
                var sizes = 0
                for try await _ in try await connection.query(
                    """
                    SELECT COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0) FROM records
                    WHERE owner = \(zone.owner) AND zone = \(zone.name) AND seq > \(since) ORDER BY seq LIMIT \(pageSize + 1)
                    """, logger: logger)
                { sizes += 1 }
                for try await _ in try await connection.query(
                    """
                    SELECT seq, record_name FROM tombstones WHERE owner = \(zone.owner) AND zone = \(zone.name) AND seq > \(since) AND kind = 'deleted'
                    ORDER BY seq LIMIT \(pageSize + 1)
                    """, logger: logger)
                {}
                var last: Int64 = since
                var read = 0
                let rows = try await connection.query(
                    """
                    SELECT record_name, record_type, name, parent, body, bytes, created_at, modified_at, modified_by, seq, share_id FROM records
                    WHERE owner = \(zone.owner) AND zone = \(zone.name) AND seq > \(since) ORDER BY seq LIMIT \(pageSize)
                    """, logger: logger)
                for try await (recordName, type, name, parent, body, _, created, modified, modifiedBy, seq, shareID)
                    in rows.decode((String, String, String, String, Data?, Data?, Double, Double, String, Int64, String?).self)
                {
                    _ = NotesModel.Record(
                        recordName: recordName, zone: zone, recordType: RecordType(rawValue: type) ?? .note, name: name,
                        parent: parent.isEmpty ? nil : parent, body: body.map { String(decoding: $0, as: UTF8.self) }, bytes: nil,
                        createdAt: Date(timeIntervalSince1970: created), modifiedAt: Date(timeIntervalSince1970: modified),
                        modifiedBy: modifiedBy, changeTag: String(seq, radix: 36), shareID: shareID)
                    last = seq
                    read += 1
                }
                try await connection.query("COMMIT", logger: logger)
                return (read, sizes > pageSize ? last : nil)
            }
            count += rows
            guard let more else { return count }
            since = more
        }
    }

    /// Reads every record into `Record` values, as a client would hold them.
    func fetchAll() async throws -> Int {
        let zone = ZoneID(owner: "bench", name: "bench")
        let rows = try await client.query(
            """
            SELECT record_name, record_type, name, body, created_at, modified_at, modified_by, seq, share_id
            FROM notes_bench_baseline.records WHERE owner = 'bench' AND zone = 'bench' ORDER BY seq
            """, logger: logger)
        var records: [NotesModel.Record] = []
        for try await (recordName, type, name, body, created, modified, modifiedBy, seq, shareID)
            in rows.decode((String, String, String, Data?, Double, Double, String, Int64, String?).self)
        {
            records.append(
                NotesModel.Record(
                    recordName: recordName, zone: zone, recordType: RecordType(rawValue: type) ?? .note,
                    name: name, parent: nil, body: body.map { String(decoding: $0, as: UTF8.self) }, bytes: nil,
                    createdAt: Date(timeIntervalSince1970: created), modifiedAt: Date(timeIntervalSince1970: modified),
                    modifiedBy: modifiedBy, changeTag: String(seq, radix: 36), shareID: shareID))
        }
        return records.count
    }
}
