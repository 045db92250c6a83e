public import Foundation
public import Logging
public import NotesModel
import NotesWork
import PostgresNIO

/// The store on PostgreSQL: the same `RecordStore` as `SQLiteStore`, for several notesd
/// sharing one database.
///
/// Each mutating call is one transaction. One that hands out change numbers first takes
/// the `counters` row `FOR UPDATE` and writes it back before committing, so such writers
/// follow one another as SQLite's single writer does: everything they read is the
/// latest committed state (a stale change tag is refused even with concurrent writers on
/// other instances), and numbers are taken in commit order. Reads run in one
/// `REPEATABLE READ` snapshot, as a SQLite read transaction does.
///
/// The database must be migrated (`PostgresDatabase.migrate()`) and its pool running
/// (`PostgresDatabase.run()`) before the store is used; `checkReady` tells whether it is.
public final class PostgresStore: RecordStore {
    let database: PostgresDatabase
    let logger: Logger
    let onChange: @Sendable ([ChangeNotice]) -> Void
    /// The time of day for expiries and record times; tests pass a clock they move.
    let clock: @Sendable () -> Date
    /// Quota and version retention.
    public let storage: StoragePolicy
    /// Where commits are announced to the other instances on this database (none: only
    /// `onChange` hears of them).
    public let changeFeed: PostgresChangeFeed?

    /// - Parameter onChange: called after each commit with the accounts to notify.
    /// - Parameter clock: what "now" is (token and link expiry, record times).
    /// - Parameter changeFeed: when given, every commit with notices also sends them
    ///   with `pg_notify` in the same transaction, for `PostgresChangeListener`s.
    public init(
        database: PostgresDatabase, logger: Logger = Logger(label: "notes.store"), clock: @escaping @Sendable () -> Date = { Date() },
        storage: StoragePolicy = StoragePolicy(), changeFeed: PostgresChangeFeed? = nil,
        onChange: @escaping @Sendable ([ChangeNotice]) -> Void = { _ in }
    ) {
        self.changeFeed = changeFeed
        self.database = database
        self.logger = logger
        self.clock = clock
        self.storage = storage
        self.onChange = onChange
    }

    /// Runs `body` in one transaction with a context that hands out change sequence
    /// numbers (when `sequenced`) and collects notices, which are sent only after the commit.
    /// - Parameter sequenced: takes the counter row for the whole transaction; only
    ///   writes that touch nothing of zones, records or shares may leave it.
    func write<T: Sendable>(sequenced: Bool = true, _ body: (PostgresWrite) async throws -> T) async throws(NotesError) -> T {
        let metrics = database.metrics
        metrics.calls.increment()
        defer { metrics.calls.decrement() }
        try await database.checkAvailable()
        // Sequenced writes follow one another on the counter row, whose lock PostgreSQL
        // grants first come, first served: taking turns here first, by account, keeps one
        // account's queued batches from standing between another's save and the lock
        // (and from holding a connection each while they wait).
        if sequenced { try await take(database.writer) }
        defer { if sequenced { database.writer.release() } }
        try await take(database.connections)
        defer { database.connections.release() }
        let outcome: (T, Set<ChangeNotice>)
        do {
            outcome = try await database.client.withTransaction(logger: logger) { connection in
                metrics.connectionsInUse.increment()
                defer { metrics.connectionsInUse.decrement() }
                let context = try await PostgresWrite.begin(SQL(connection: connection, logger: logger), now: clock(), sequenced: sequenced)
                let value = try await body(context)
                // The notices go in the transaction: delivered to the listeners on commit, never on rollback.
                let payloads = changeFeed.map { $0.payloads(for: context.notices, seq: context.seq) } ?? []
                try await context.finish(notifying: changeFeed?.channel ?? "", payloads)
                return (value, context.notices)
            }
        } catch {
            throw convert(error)
        }
        if !outcome.1.isEmpty {
            onChange(Array(outcome.1))
        }
        return outcome.0
    }

    /// Runs `body` in one read-only snapshot of the database.
    func read<T: Sendable>(_ body: (SQL) async throws -> T) async throws(NotesError) -> T {
        let metrics = database.metrics
        metrics.calls.increment()
        defer { metrics.calls.decrement() }
        try await database.checkAvailable()
        try await take(database.connections)
        defer { database.connections.release() }
        do {
            return try await database.client.withConnection { connection in
                metrics.connectionsInUse.increment()
                defer { metrics.connectionsInUse.decrement() }
                let sql = SQL(connection: connection, logger: logger)
                try await sql.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                do {
                    let value = try await body(sql)
                    try await sql.execute("COMMIT")
                    return value
                } catch {
                    try? await sql.execute("ROLLBACK")
                    throw error
                }
            }
        } catch {
            throw convert(error)
        }
    }

    /// One statement on its own (no snapshot needed), for the hottest reads.
    func readOne<T: Sendable>(_ body: (SQL) async throws -> T) async throws(NotesError) -> T {
        let metrics = database.metrics
        metrics.calls.increment()
        defer { metrics.calls.decrement() }
        try await database.checkAvailable()
        try await take(database.connections)
        defer { database.connections.release() }
        do {
            return try await database.client.withConnection { connection in
                metrics.connectionsInUse.increment()
                defer { metrics.connectionsInUse.decrement() }
                return try await body(SQL(connection: connection, logger: logger))
            }
        } catch {
            throw convert(error)
        }
    }

    /// Waits for the caller's turn at `gate` (the pool's connections, or the writer).
    private func take(_ gate: FairGate) async throws(NotesError) {
        do {
            try await gate.acquire()
        } catch let error as NotesError {
            throw error
        } catch {
            throw NotesError(.serviceUnavailable, "The request was cancelled while it waited for the database; try again.")
        }
    }

    public func checkReady() async throws(NotesError) {
        let migrated = try await readOne { sql in try await sql.value("SELECT to_regclass('schema_migrations') IS NOT NULL", as: Bool.self) ?? false }
        let version = migrated ? try await database.schemaVersion() : 0
        guard version == PostgresMigrations.latest else {
            throw NotesError(
                .serviceUnavailable, "The database's schema is at version \(version), not the \(PostgresMigrations.latest) this notesd knows; restart notesd to migrate it.")
        }
    }

    /// Driver errors as `NotesError`, as `SQLiteStore.convert` makes them.
    func convert(_ error: any Error) -> NotesError {
        database.convert(error, doing: "store or read data")
    }
}

/// One connection in a transaction or a read, with what the store's statements need.
/// Every statement is sent with its values bound, never written into its text.
struct SQL {
    let connection: PostgresConnection
    let logger: Logger

    /// Runs a statement and reads its answer to the end (a failure shows only then).
    func execute(_ query: PostgresQuery) async throws {
        for try await _ in try await connection.query(query, logger: logger) {}
    }

    /// Every row of a prepared statement's answer.
    func rows<Statement: PreparedRows>(_ statement: Statement) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
        return rows
    }

    /// Every row of the answer.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
        return rows
    }

    /// The first row of the answer, if any.
    func row(_ query: PostgresQuery) async throws -> PostgresRow? {
        try await rows(query).first
    }

    /// The first column of the first row, if there is a row.
    func value<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type = T.self) async throws -> T? {
        try await row(query).map { try $0.decode(T.self) }
    }

    /// The first column of every row.
    func column<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type = T.self) async throws -> [T] {
        try await rows(query).map { try $0.decode(T.self) }
    }

    func exists(_ query: PostgresQuery) async throws -> Bool {
        try await row(query) != nil
    }

    /// How many rows an `UPDATE … RETURNING 1` changed.
    func count(_ query: PostgresQuery) async throws -> Int {
        try await rows(query).count
    }
}

/// The state of one write transaction; used only inside one `write` call.
final class PostgresWrite {
    let sql: SQL
    let now: Date
    private(set) var seq: Int64
    private let startSeq: Int64
    private let sequenced: Bool
    var notices: Set<ChangeNotice> = []

    private init(sql: SQL, now: Date, seq: Int64, sequenced: Bool) {
        self.sql = sql
        self.now = now
        self.seq = seq
        self.startSeq = seq
        self.sequenced = sequenced
    }

    /// Takes the counter row for the transaction when `sequenced`: other writers that
    /// need it wait until this one commits, and then read what it wrote.
    static func begin(_ sql: SQL, now: Date, sequenced: Bool) async throws -> PostgresWrite {
        let current = sequenced ? try await sql.rows(LockCounter()).first?.decode(Int64.self) ?? 0 : 0
        return PostgresWrite(sql: sql, now: now, seq: current, sequenced: sequenced)
    }

    /// The next change sequence number (also used as a change tag).
    func nextSeq() -> Int64 {
        precondition(sequenced, "a change number taken in a write that did not lock the counter")
        seq += 1
        return seq
    }

    /// A zone whose change number `finish` writes, with the counter, in its statement.
    private(set) var pendingZone: ZoneID?
    /// Called by `finish` with the bytes the pending zone's owner holds after the write
    /// (a quota check: throwing rolls the transaction back).
    var checkUsage: ((Int64) throws(NotesError) -> Void)?

    /// Notes that `zone` changed, for its owner and for `participants` (read ahead), and
    /// leaves the zone's change number to `finish`.
    func zoneChangedAtFinish(_ zone: ZoneID, participants: [String]) {
        pendingZone = zone
        notices.insert(ChangeNotice(account: zone.owner, scope: .private, zone: zone))
        for account in participants {
            notices.insert(ChangeNotice(account: account, scope: .shared, zone: zone))
        }
    }

    /// Writes the counter back (when numbers were taken), the pending zone's change
    /// number, and sends `payloads` on `channel`, in one statement: the last round trip
    /// before the commit.
    func finish(notifying channel: String, _ payloads: [String]) async throws {
        if let zone = pendingZone {
            let row = try await sql.rows(
                FinishModify(
                    seq: seq, advanced: seq != startSeq, owner: zone.owner, zone: zone.name, channel: channel, payloads: payloads)
            ).first
            var usage: Int64 = 0
            if let row { (usage, _) = try row.decode((Int64, Int64).self) }
            try checkUsage?(usage)
            return
        }
        switch (seq != startSeq, payloads.isEmpty) {
        case (true, true):
            try await sql.execute("UPDATE counters SET value = \(seq) WHERE name = 'seq'")
        case (true, false):
            try await sql.execute(
                """
                WITH counter AS (UPDATE counters SET value = \(seq) WHERE name = 'seq' RETURNING 1)
                SELECT pg_notify(\(channel), payload) FROM counter, unnest(\(payloads)::text[]) AS payload
                """)
        case (false, false):
            try await sql.execute("SELECT pg_notify(\(channel), payload) FROM unnest(\(payloads)::text[]) AS payload")
        case (false, true):
            break
        }
    }

    /// Notes that `zone` changed, for its owner and every accepted participant.
    /// - Returns: the bytes the owner's zones now hold (read in the same statement, for
    ///   the quota check that follows a modify).
    @discardableResult
    func zoneChanged(_ zone: ZoneID) async throws -> Int64 {
        // PostgreSQL runs a data-modifying WITH to completion whether or not the query reads it.
        let row = try await sql.row(
            """
            WITH changed AS (UPDATE zones SET changed_seq = \(seq) WHERE owner = \(zone.owner) AND name = \(zone.name) RETURNING 1)
            SELECT COALESCE((SELECT bytes FROM usage WHERE owner = \(zone.owner)), 0),
                   ARRAY(SELECT DISTINCT p.account FROM participants p JOIN shares s ON s.id = p.share_id
                         WHERE s.owner = \(zone.owner) AND s.zone = \(zone.name) AND NOT s.stopped AND p.status = 'accepted'
                           AND p.account IS NOT NULL AND p.role != 'owner')
            """)
        guard let row else { return 0 }
        let (usage, participants) = try row.decode((Int64, [String]).self)
        notices.insert(ChangeNotice(account: zone.owner, scope: .private, zone: zone))
        for account in participants {
            notices.insert(ChangeNotice(account: account, scope: .shared, zone: zone))
        }
        return usage
    }
}

extension Date {
    var storedValue: Double { timeIntervalSince1970 }
    init(stored value: Double) { self.init(timeIntervalSince1970: value) }
}
