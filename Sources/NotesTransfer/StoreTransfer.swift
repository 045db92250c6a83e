import Foundation
import GRDB
public import Logging
public import NotesModel
public import NotesPostgres
import NotesStore
import NIOCore
import PostgresNIO

/// Moves a team from the embedded store to PostgreSQL (`notesd migrate`): copies every
/// table of a SQLite store into a PostgreSQL database as it is, so record names, change
/// tags, change tokens, token hashes and share URLs stay the same and mounts keep their
/// caches.
///
/// Rows go in batches, each one PostgreSQL transaction that also records how far the
/// copy got (`transfer_progress`): a copy stopped at any point goes on from there when
/// run again. The source must not change meanwhile (notesd stopped): its change counter
/// is noted at the start and checked again at the end. At the end every table is
/// compared, row count and an order-free digest of every value, on both sides.
public struct StoreTransfer: Sendable {
    public struct Progress: Sendable {
        public let table: String
        public let copied: Int
        public let total: Int
    }

    public struct Report: Sendable {
        /// Rows per table, as both databases hold them now.
        public let rows: [(table: String, count: Int)]
        /// Whether an interrupted copy was taken up again.
        public let resumed: Bool
        /// Whether the copy had already finished (this run only compared).
        public let alreadyComplete: Bool
    }

    let sqlitePath: String
    let target: NotesPostgres.PostgresDatabase
    let logger: Logger
    /// Rows and bytes per batch: enough to amortise a round trip, small enough that a
    /// batch of large notes stays well inside memory and the statement timeout.
    let batchRows: Int
    let batchBytes: Int

    public init(sqlitePath: String, target: NotesPostgres.PostgresDatabase, logger: Logger = Logger(label: "notesd.migrate"), batchRows: Int = 500, batchBytes: Int = 8 << 20) {
        self.sqlitePath = sqlitePath
        self.target = target
        self.logger = logger
        self.batchRows = batchRows
        self.batchBytes = batchBytes
    }

    /// Copies what is left to copy, then compares. The target's pool must be running.
    /// - Parameter progress: told after every batch; an error it throws stops the copy
    ///   there, as an interruption would (the next run goes on from that batch).
    public func run(progress: (Progress) throws(NotesError) -> Void = { _ in }) async throws(NotesError) -> Report {
        let source = try openSource()
        try await target.migrate()
        do {
            try checkColumns(source)
            let sourceCounter = try await source.read { db in try Self.changeCounter(db) }
            let start = try await begin(sourceCounter: sourceCounter)
            if !start.complete {
                for table in TransferTable.copied {
                    try await copy(table, from: source, after: start.progress[table.name] ?? (0, 0), progress: progress)
                }
                try await finishCopy(source)
            }
            let rows = try await compare(source)
            let counterNow = try await source.read { db in try Self.changeCounter(db) }
            guard counterNow == sourceCounter else {
                throw NotesError(
                    .serviceUnavailable,
                    "The SQLite database changed while it was copied (change \(sourceCounter) then, \(counterNow) now): notesd must be stopped during the move. Drop and create the PostgreSQL database again, stop notesd, and run migrate again."
                )
            }
            try await markComplete()
            return Report(rows: rows, resumed: !start.progress.isEmpty && !start.complete, alreadyComplete: start.complete)
        } catch let error as NotesError {
            throw error
        } catch {
            throw target.convert(error, doing: "copy the SQLite database into PostgreSQL")
        }
    }

    // MARK: The source

    /// The SQLite store, brought to the newest schema first (what a notesd of this
    /// version would do on start), then read through a read-only connection.
    func openSource() throws(NotesError) -> DatabaseQueue {
        guard FileManager.default.fileExists(atPath: sqlitePath) else {
            throw NotesError(.invalidArguments, "There is no SQLite database at \(sqlitePath): give the path of notesd's notes.sqlite (in its --data-dir).")
        }
        _ = try SQLiteStore(path: sqlitePath, searchable: false)
        var configuration = Configuration()
        configuration.readonly = true
        do {
            return try DatabaseQueue(path: sqlitePath, configuration: configuration)
        } catch {
            throw NotesError(.serviceUnavailable, "Cannot read the SQLite database at \(sqlitePath): \(error).")
        }
    }

    static func changeCounter(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT value FROM counters WHERE name = 'seq'") ?? 0
    }

    /// Refuses a schema this list does not cover on either side: a column left out
    /// would be lost without a word.
    func checkColumns(_ source: DatabaseQueue) throws {
        let expected = TransferTable.copied + TransferTable.checkedOnly
        let sqliteTables = try source.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%'")
        }
        for name in sqliteTables where !expected.contains(where: { $0.name == name }) && !TransferTable.leftBehind.contains(name) {
            throw NotesError(.internalError, "The SQLite database has a table \(name) that this notesd cannot move; use the notesd that matches the database.")
        }
        for table in expected {
            let columns = try source.read { db in try db.columns(in: table.name).map(\.name) }
            let known = Set(table.columns.filter { $0.kind != .rowid }.map(\.name))
            if let missing = columns.first(where: { !known.contains($0) }) {
                throw NotesError(.internalError, "The SQLite table \(table.name) has a column \(missing) that this notesd cannot move; use the notesd that matches the database.")
            }
        }
    }

    func readBatch(_ table: TransferTable, from source: DatabaseQueue, after rowid: Int64) throws -> (rows: [[TransferValue]], last: Int64) {
        try source.read { db in
            let cursor = try Row.fetchCursor(
                db, sql: "SELECT rowid, \(table.sqliteSelection) FROM \(table.name) WHERE rowid > ? ORDER BY rowid LIMIT ?",
                arguments: [rowid, batchRows])
            var rows: [[TransferValue]] = []
            var bytes = 0
            var last = rowid
            while let row = try cursor.next() {
                last = row[0]
                let values = table.columns.indices.map { Self.value(row[$0 + 1] as DatabaseValue, kind: table.columns[$0].kind) }
                rows.append(values)
                bytes += values.reduce(0) { $0 + $1.byteCount }
                if bytes >= batchBytes { break }
            }
            return (rows, last)
        }
    }

    static func value(_ value: DatabaseValue, kind: TransferTable.Kind) -> TransferValue {
        switch value.storage {
        case .null: return .null
        case .int64(let number): return kind == .real ? .real(Double(number)) : .integer(number)
        case .double(let number): return .real(number)
        case .string(let text): return kind == .blob || kind == .textBytes ? .bytes(Array(text.utf8)) : .text(text)
        case .blob(let data): return .bytes(Array(data))
        }
    }

    // MARK: The target

    /// Makes the bookkeeping tables and decides where to start: an empty database, a
    /// copy to go on with, or one already finished.
    func begin(sourceCounter: Int64) async throws -> (progress: [String: (rowid: Int64, copied: Int)], complete: Bool) {
        try await target.client.withTransaction(logger: logger) { connection in
            try await Self.run(
                """
                CREATE TABLE IF NOT EXISTS transfer_source (
                    id INTEGER PRIMARY KEY CHECK (id = 1), path TEXT NOT NULL, source_seq BIGINT NOT NULL,
                    started_at TIMESTAMPTZ NOT NULL DEFAULT now(), completed_at TIMESTAMPTZ)
                """, on: connection, logger: logger)
            try await Self.run(
                """
                CREATE TABLE IF NOT EXISTS transfer_progress (
                    table_name TEXT PRIMARY KEY, last_rowid BIGINT NOT NULL, copied BIGINT NOT NULL)
                """, on: connection, logger: logger)
            var started: (seq: Int64, complete: Bool)?
            for try await (seq, completed) in try await connection.query(
                "SELECT source_seq, completed_at IS NOT NULL FROM transfer_source", logger: logger
            ).decode((Int64, Bool).self) {
                started = (seq, completed)
            }
            guard let started else {
                var holds = false
                for try await count in try await connection.query("SELECT COUNT(*) FROM accounts", logger: logger).decode(Int64.self) {
                    holds = count > 0
                }
                if holds {
                    throw NotesError(
                        .invalidArguments, "The PostgreSQL database \(target.location) already holds accounts that did not come from this copy: move into a new, empty database.")
                }
                try await Self.run("INSERT INTO transfer_source (id, path, source_seq) VALUES (1, \(sqlitePath), \(sourceCounter))", on: connection, logger: logger)
                return ([:], false)
            }
            guard started.seq == sourceCounter else {
                throw NotesError(
                    .invalidArguments,
                    "The SQLite database changed since this copy began (change \(started.seq) then, \(sourceCounter) now): drop and create the PostgreSQL database again, stop notesd, and run migrate again."
                )
            }
            var progress: [String: (Int64, Int)] = [:]
            for try await (table, rowid, copied) in try await connection.query(
                "SELECT table_name, last_rowid, copied FROM transfer_progress", logger: logger
            ).decode((String, Int64, Int64).self) {
                progress[table] = (rowid, Int(copied))
            }
            return (progress, started.complete)
        }
    }

    func copy(_ table: TransferTable, from source: DatabaseQueue, after start: (rowid: Int64, copied: Int), progress: (Progress) throws(NotesError) -> Void) async throws {
        let total = try await source.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.name)") ?? 0 }
        var (rowid, copied) = start
        try progress(Progress(table: table.name, copied: copied, total: total))
        while true {
            let batch = try readBatch(table, from: source, after: rowid)
            if batch.rows.isEmpty { break }
            let insert = Self.insert(batch.rows, into: table)
            let through = batch.last
            let after = rowid
            copied += batch.rows.count
            let done = copied
            try await target.client.withTransaction(logger: logger) { connection in
                try await Self.run(insert, on: connection, logger: logger)
                if table.name == "contents" {
                    // Contents in use count toward their owner's usage (the stores charge
                    // them when a modify takes them; no trigger counts them on insert).
                    try await Self.run(
                        """
                        INSERT INTO usage AS u (owner, zone, bytes)
                        SELECT owner, zone, SUM(size) FROM contents c
                        WHERE c.id > \(after) AND c.id <= \(through) AND NOT EXISTS (SELECT 1 FROM staged_contents s WHERE s.content_id = c.id)
                        GROUP BY owner, zone
                        ON CONFLICT (owner, zone) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes
                        """, on: connection, logger: logger)
                }
                try await Self.run(
                    """
                    INSERT INTO transfer_progress (table_name, last_rowid, copied) VALUES (\(table.name), \(through), \(Int64(done)))
                    ON CONFLICT (table_name) DO UPDATE SET last_rowid = EXCLUDED.last_rowid, copied = EXCLUDED.copied
                    """, on: connection, logger: logger)
            }
            rowid = through
            try progress(Progress(table: table.name, copied: copied, total: total))
        }
    }

    /// One multi-row INSERT with every value bound.
    static func insert(_ rows: [[TransferValue]], into table: TransferTable) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: rows.count * table.columns.count)
        var tuples: [String] = []
        tuples.reserveCapacity(rows.count)
        var index = 0
        for row in rows {
            var placeholders: [String] = []
            for (value, column) in zip(row, table.columns) {
                index += 1
                placeholders.append("$\(index)")
                switch (value, column.kind) {
                case (.null, _): bindings.appendNull()
                case (.integer(let number), .boolean): bindings.append(number != 0)
                case (.integer(let number), _): bindings.append(number)
                case (.real(let number), _): bindings.append(number)
                case (.text(let text), _): bindings.append(text)
                case (.bytes(let bytes), _): bindings.append(ByteBuffer(bytes: bytes))
                }
            }
            tuples.append("(" + placeholders.joined(separator: ", ") + ")")
        }
        let overriding = table.overridesIdentity ? " OVERRIDING SYSTEM VALUE" : ""
        return PostgresQuery(
            unsafeSQL: "INSERT INTO \(table.name) (\(table.columnList))\(overriding) VALUES \(tuples.joined(separator: ", "))", binds: bindings)
    }

    /// The change counter and the token order go on from where the source was: every
    /// zone counts on from the source's counter (so every change tag and zone token it
    /// handed out is at most its zone's number), and new zones' epochs after it.
    func finishCopy(_ source: DatabaseQueue) async throws {
        let counters = try await source.read { db in
            try Row.fetchAll(db, sql: "SELECT name, value FROM counters").map { ($0[0] as String, $0[1] as Int64) }
        }
        try await target.client.withTransaction(logger: logger) { connection in
            for (name, value) in counters {
                try await Self.run(
                    "INSERT INTO counters (name, value) VALUES (\(name), \(value)) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                    on: connection, logger: logger)
            }
            let counter = counters.first { $0.0 == "seq" }?.1 ?? 0
            try await Self.run("UPDATE zones SET last_seq = GREATEST(last_seq, \(counter))", on: connection, logger: logger)
            try await Self.run("SELECT setval('zone_epochs', \(counter + 1), false)", on: connection, logger: logger)
            try await Self.run(
                "SELECT setval(pg_get_serial_sequence('tokens', 'issued'), GREATEST((SELECT MAX(issued) FROM tokens), 1))",
                on: connection, logger: logger)
            try await Self.run(
                "SELECT setval(pg_get_serial_sequence('contents', 'id'), GREATEST((SELECT MAX(id) FROM contents), 1))",
                on: connection, logger: logger)
        }
    }

    func markComplete() async throws {
        try await target.client.withConnection { connection in
            try await Self.run("UPDATE transfer_source SET completed_at = COALESCE(completed_at, now())", on: connection, logger: logger)
        }
    }

    // MARK: Comparing

    /// Both sides' digests of every table, which must be equal; returns the row counts.
    func compare(_ source: DatabaseQueue) async throws -> [(table: String, count: Int)] {
        var counts: [(String, Int)] = []
        for table in TransferTable.copied + TransferTable.checkedOnly {
            let filter = table.name == "usage" ? " WHERE bytes <> 0" : ""
            let sqlite = try await source.read { db in
                var digest = TableDigest()
                let cursor = try Row.fetchCursor(db, sql: "SELECT \(table.sqliteSelection) FROM \(table.name)\(filter)")
                while let row = try cursor.next() {
                    digest.add(table.columns.indices.map { Self.value(row[$0] as DatabaseValue, kind: table.columns[$0].kind) })
                }
                return digest
            }
            let postgres = try await target.client.withConnection { connection in
                var digest = TableDigest()
                let selection = table.columns.map { column in
                    switch column.kind {
                    case .integer, .rowid: "\(column.name)::BIGINT"
                    case .boolean: "\(column.name)::INTEGER::BIGINT"
                    case .real: "\(column.name)::DOUBLE PRECISION"
                    default: column.name
                    }
                }.joined(separator: ", ")
                let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT \(selection) FROM \(table.postgresSource)\(filter)"), logger: logger)
                for try await row in rows {
                    let cells = PostgresRandomAccessRow(row)
                    digest.add(try table.columns.indices.map { try Self.value(cells[$0], kind: table.columns[$0].kind) })
                }
                return digest
            }
            guard sqlite == postgres else {
                throw NotesError(
                    .internalError,
                    "After the copy, table \(table.name) differs: SQLite \(sqlite), PostgreSQL \(postgres). Nothing was removed from the SQLite database; drop the PostgreSQL database and run migrate again, and report this if it happens again."
                )
            }
            logger.info("table compared", metadata: ["table": "\(table.name)", "rows": "\(sqlite.rows)"])
            counts.append((table.name, sqlite.rows))
        }
        return counts
    }

    static func value(_ cell: PostgresCell, kind: TransferTable.Kind) throws -> TransferValue {
        switch kind {
        case .text: try cell.decode(String?.self).map(TransferValue.text) ?? .null
        case .integer, .boolean, .rowid: try cell.decode(Int64?.self).map(TransferValue.integer) ?? .null
        case .real: try cell.decode(Double?.self).map(TransferValue.real) ?? .null
        case .blob, .textBytes: try cell.decode(ByteBuffer?.self).map { TransferValue.bytes(Array($0.readableBytesView)) } ?? .null
        }
    }

    static func run(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws {
        for try await _ in try await connection.query(query, logger: logger) {}
    }
}
