public import Foundation
public import Logging
public import NotesModel
package import NotesStoreRules
import NotesSearch
import NotesWork
import PostgresNIO
import Synchronization

/// The store on PostgreSQL: the same `RecordStore` as `SQLiteStore`, for several notesd
/// sharing one database.
///
/// Each mutating call is one transaction. One that changes a zone's records, shares or
/// participants first takes that zone's row `FOR UPDATE` (`Numbering`) and writes its
/// change counter back before committing, so writers of one zone follow one another as
/// SQLite's single writer does: everything they read of the zone is the latest
/// committed state (a stale change tag is refused even with concurrent writers on
/// other instances), and the zone's numbers are taken in commit order. Writers of
/// different zones do not wait for each other. Reads run in one `REPEATABLE READ`
/// snapshot, as a SQLite read transaction does.
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
    /// Link-password guesses this process saw refused.
    package let guessRefusals = GuessRefusals()
    /// The cluster's system identifier, read once (`databasePosition`).
    let clusterID = Mutex<String?>(nil)
    /// When to analyze `records` again.
    let statistics = PostgresStatistics()
    /// Sends committed notices to the other instances (with `changeFeed`).
    let announcer: PostgresChangeAnnouncer?
    /// The full-text index's rows, and what fills them after each write.
    let searchIndex = PostgresSearchIndex()
    let searchIndexer: SearchIndexer
    /// Whether this instance takes notes into the search index and answers searches.
    let searchable: Bool

    /// - Parameter onChange: called after each commit with the accounts to notify.
    /// - Parameter clock: what "now" is (token and link expiry, record times).
    /// - Parameter changeFeed: when given, every commit with notices also sends them
    ///   with `pg_notify` once committed (`PostgresChangeAnnouncer`), for
    ///   `PostgresChangeListener`s.
    public init(
        database: PostgresDatabase, logger: Logger = Logger(label: "notes.store"), clock: @escaping @Sendable () -> Date = { Date() },
        storage: StoragePolicy = StoragePolicy(), changeFeed: PostgresChangeFeed? = nil, searchable: Bool = true,
        onChange: @escaping @Sendable ([ChangeNotice]) -> Void = { _ in }
    ) {
        self.searchable = searchable
        self.changeFeed = changeFeed
        announcer = changeFeed.map { PostgresChangeAnnouncer(feed: $0, client: database.client, logger: logger) }
        self.database = database
        self.logger = logger
        self.clock = clock
        self.storage = storage
        self.onChange = onChange
        searchIndexer = SearchIndexer(storage: searchIndex, logger: logger)
        searchIndex.attach(self)
    }

    /// Runs `body` in one transaction with a context that hands out the change numbers of
    /// the zones `numbering` names, and collects notices, which are sent only after the
    /// commit.
    func write<T: Sendable>(_ numbering: Numbering = .none, _ body: (PostgresWrite) async throws -> T) async throws(NotesError) -> T {
        let metrics = database.metrics
        metrics.calls.increment()
        defer { metrics.calls.decrement() }
        try await database.checkAvailable()
        try await waitForPace()
        // A zone's writers follow one another on its row lock, which PostgreSQL grants
        // first come, first served: taking turns here first, by account, keeps one
        // account's queued batches from standing between another's save and the lock
        // (and from holding a connection each while they wait).
        let turn: ZoneID? = if case .zone(let zone) = numbering { zone } else { nil }
        if let turn { try await take(turn) }
        defer { if let turn { database.zoneTurns.release(turn) } }
        try await take(database.connections)
        defer { database.connections.release() }
        let outcome: (T, Set<ChangeNotice>, Int64)
        let start = ContinuousClock.now
        defer { WorkPace.held(since: start) }
        do {
            outcome = try await database.client.withTransaction(logger: logger) { connection in
                metrics.connectionsInUse.increment()
                defer { metrics.connectionsInUse.decrement() }
                let context = try await PostgresWrite.begin(SQL(connection: connection, logger: logger), now: clock(), numbering: numbering)
                let value = try await body(context)
                try await context.finish()
                return (value, context.notices, context.highestSeq)
            }
        } catch {
            throw convert(error)
        }
        if !outcome.1.isEmpty {
            // Announced once committed, never on rollback (`PostgresChangeAnnouncer`).
            announcer?.announce(outcome.1, seq: outcome.2)
            onChange(Array(outcome.1))
            if searchable { searchIndexer.wake() }
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

    /// Waits while the caller owes the writer time it held (`WorkPace`).
    private func waitForPace() async throws(NotesError) {
        do {
            try await WorkPace.waitBeforeWrite()
        } catch {
            throw NotesError(.serviceUnavailable, "The request was cancelled while it waited for its turn to write; try again.")
        }
    }

    /// Waits for the caller's turn at `gate` (the pool's connections).
    private func take(_ gate: FairGate) async throws(NotesError) {
        do {
            try await gate.acquire()
        } catch let error as NotesError {
            throw error
        } catch {
            throw NotesError(.serviceUnavailable, "The request was cancelled while it waited for the database; try again.")
        }
    }

    /// Waits for the caller's turn at `zone`'s writer on this instance.
    private func take(_ zone: ZoneID) async throws(NotesError) {
        do {
            try await database.zoneTurns.acquire(zone)
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

/// Which zones' change counters a write takes (`PostgresStore.write`).
enum Numbering {
    /// None: the write changes nothing zones number (accounts, tokens, contents,
    /// counts), or only makes a zone.
    case none
    /// The zone's, from the start (and this instance's turn at it first).
    case zone(ZoneID)
    /// The zone of a share, found by its ID or its link's token in the locking statement.
    case zoneOfShare(id: String)
    case zoneOfLink(urlToken: String)
    /// Every zone's: the write waits until no other zone write is under way and keeps
    /// them all out until it commits, then takes the counters it needs
    /// (`PostgresWrite.take`). For the rare writes that change several zones (an account
    /// made with invitations waiting for its email, an account deleted).
    case everyZone
}

/// The state of one write transaction; used only inside one `write` call.
final class PostgresWrite {
    let sql: SQL
    let now: Date
    var notices: Set<ChangeNotice> = []
    /// The counters held: each zone's last number when taken, and the last handed out.
    private var counters: [ZoneID: (start: Int64, last: Int64)] = [:]
    /// The zone `nextSeq()` numbers in: the first one taken.
    private(set) var zone: ZoneID?
    /// Zones whose change this transaction reports in database change tokens.
    private var changedZones: Set<ZoneID> = []
    private var holdsEveryZone = false

    private init(sql: SQL, now: Date) {
        self.sql = sql
        self.now = now
    }

    /// Takes the counters `numbering` names: other writers of those zones wait until this
    /// one commits, and then read what it wrote.
    static func begin(_ sql: SQL, now: Date, numbering: Numbering) async throws -> PostgresWrite {
        let context = PostgresWrite(sql: sql, now: now)
        switch numbering {
        case .none:
            break
        case .zone(let zone):
            try await context.take(zone)
        case .zoneOfShare(let id):
            try await context.take(try await sql.row(LockZone.ofShare(id: id)))
        case .zoneOfLink(let urlToken):
            try await context.take(try await sql.row(LockZone.ofLink(urlToken: urlToken)))
        case .everyZone:
            try await sql.execute("SELECT FROM pg_advisory_xact_lock(\(LockZone.everyZoneKey))")
            context.holdsEveryZone = true
        }
        return context
    }

    /// Takes `zone`'s counter for the rest of the transaction, if the zone exists (a
    /// write that goes on without it fails at its first number). In a write of
    /// `.everyZone`, any zone's.
    /// - Returns: whether the write holds the zone's counter.
    @discardableResult
    func take(_ zone: ZoneID) async throws -> Bool {
        guard counters[zone] == nil else { return true }
        if holdsEveryZone {
            if let last = try await sql.value("SELECT last_seq FROM zones WHERE owner = \(zone.owner) AND name = \(zone.name) FOR UPDATE", as: Int64.self) {
                hold(zone, last: last)
            }
        } else {
            guard counters.isEmpty else { throw NotesError(.internalError, "A write took a second zone's counter without holding every zone's.") }
            try await take(try await sql.rows(LockZone(zone)).first)
        }
        return counters[zone] != nil
    }

    private func take(_ row: PostgresRow?) async throws {
        guard let row else { return }
        let (owner, name, last) = try row.decode((String, String, Int64).self)
        hold(ZoneID(owner: owner, name: name), last: last)
    }

    private func hold(_ zone: ZoneID, last: Int64) {
        counters[zone] = (last, last)
        if self.zone == nil { self.zone = zone }
    }

    /// The next change number (also used as a change tag) of the zone this write took.
    func nextSeq() throws -> Int64 {
        guard let zone else { throw Self.noCounter }
        return try nextSeq(in: zone)
    }

    /// The next change number of `zone`, whose counter this write holds.
    func nextSeq(in zone: ZoneID) throws -> Int64 {
        guard var counter = counters[zone] else { throw Self.noCounter }
        counter.last += 1
        counters[zone] = counter
        return counter.last
    }

    /// The last number handed out in `zone` so far (its present, to this write).
    func lastSeq(in zone: ZoneID) throws -> Int64 {
        guard let counter = counters[zone] else { throw Self.noCounter }
        return counter.last
    }

    /// The highest number this write handed out (for the notices' log lines).
    var highestSeq: Int64 { counters.values.map(\.last).max() ?? 0 }

    /// A write that numbers a zone it could not take: the zone went (deleted meanwhile).
    private static let noCounter = NotesError(.unknownItem, "The zone was deleted while this request ran; list your zones again.")

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

    /// Writes back the counters that moved and marks the changed zones, in one
    /// statement: the last round trip before the commit.
    func finish() async throws {
        if let zone = pendingZone {
            let row = try await sql.rows(FinishModify(seq: try lastSeq(in: zone), owner: zone.owner, zone: zone.name)).first
            var usage: Int64 = 0
            if let row { (usage, _) = try row.decode((Int64, Int64).self) }
            try checkUsage?(usage)
            return
        }
        let moved = counters.filter { $0.value.last != $0.value.start || changedZones.contains($0.key) }
        guard !moved.isEmpty else { return }
        let zones = Array(moved.keys)
        try await sql.execute(
            """
            UPDATE zones z SET last_seq = v.last,
                changed_seq = CASE WHEN v.changed THEN v.last ELSE z.changed_seq END,
                changed_txn = CASE WHEN v.changed THEN pg_current_xact_id()::text::bigint ELSE z.changed_txn END
            FROM unnest(\(zones.map(\.owner))::text[], \(zones.map(\.name))::text[], \(zones.map { moved[$0]!.last })::bigint[],
                        \(zones.map { changedZones.contains($0) })::bool[]) AS v(owner, name, last, changed)
            WHERE z.owner = v.owner AND z.name = v.name
            """)
    }

    /// Notes that `zone` changed, for its owner and every accepted participant (its
    /// change is marked by `finish`).
    func zoneChanged(_ zone: ZoneID) async throws {
        let participants = try await sql.column(
            """
            SELECT DISTINCT p.account FROM participants p JOIN shares s ON s.id = p.share_id
            WHERE s.owner = \(zone.owner) AND s.zone = \(zone.name) AND NOT s.stopped AND p.status = 'accepted'
              AND p.account IS NOT NULL AND p.role != 'owner'
            """, as: String.self)
        changedZones.insert(zone)
        notices.insert(ChangeNotice(account: zone.owner, scope: .private, zone: zone))
        for account in participants {
            notices.insert(ChangeNotice(account: account, scope: .shared, zone: zone))
        }
    }
}

extension Date {
    var storedValue: Double { timeIntervalSince1970 }
    init(stored value: Double) { self.init(timeIntervalSince1970: value) }
}
