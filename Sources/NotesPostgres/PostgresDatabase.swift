public import Logging
import Synchronization
public import NotesModel
package import NotesStoreRules
package import NotesWork
package import PostgresNIO

/// One notesd's connections to a PostgreSQL database: postgres-nio's pool, kept running
/// by `run()` (under the daemon's `ServiceGroup`), with a statement timeout on every
/// connection and the schema migrated once, whichever instance starts first.
public final class PostgresDatabase: Sendable {
    public let location: PostgresLocation
    package let client: PostgresClient
    let logger: Logger
    /// Whether the server was last seen unreachable (the listening connection lost): a
    /// request then checks with a connection of its own before it waits in the pool,
    /// which would hold it for as long as the server is away.
    private let markedDown = Mutex(false)
    /// Calls, connections held and faults, for `GET /metrics`.
    package let metrics: StoreMetrics
    /// The pool's connections, taken in turns by account: postgres-nio hands them out
    /// first come, first served, so one account's burst would queue ahead of everyone.
    package let connections: FairGate
    /// This instance's turn at each zone's change counter, taken by accounts in turns
    /// (see `PostgresStore.write`).
    package let zoneTurns = PostgresZoneTurns()

    /// Most connections this instance opens (PostgreSQL's own default limit is 100, for
    /// all instances together).
    public static let defaultMaximumConnections = 20
    /// A statement running longer than this is cancelled by the server, so that a stuck
    /// query cannot hold a connection and its locks for ever.
    public static let defaultStatementTimeout: Duration = .seconds(30)

    public init(
        _ location: PostgresLocation, maximumConnections: Int = defaultMaximumConnections,
        statementTimeout: Duration = defaultStatementTimeout, logger: Logger = Logger(label: "notes.postgres")
    ) {
        self.location = location
        self.logger = logger
        metrics = StoreMetrics(backend: "postgres", maximumConnections: maximumConnections)
        connections = FairGate(name: "the database connections", permits: maximumConnections)
        var configuration = location.clientConfiguration()
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(10)
        let milliseconds = statementTimeout.components.seconds * 1_000 + statementTimeout.components.attoseconds / 1_000_000_000_000_000
        configuration.options.additionalStartupParameters += [
            ("statement_timeout", "\(milliseconds)"),
            ("application_name", "notesd"),
        ]
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// Runs the pool until the task is cancelled; every query waits for this to run.
    public func run() async {
        await client.run()
    }

    /// Connects once, outside the pool, so that a database that cannot be reached is
    /// reported at once and plainly (the pool would retry for a minute, then report a
    /// tripped circuit breaker).
    public func checkReachable() async throws(NotesError) {
        do {
            let configuration = try location.connectionConfiguration(applicationName: "notesd")
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
        } catch {
            throw convert(error, doing: "open a connection")
        }
    }

    /// Notes whether the server answers, as the listening connection finds it.
    public func markReachable(_ reachable: Bool) {
        markedDown.withLock { $0 = !reachable }
    }

    /// Answers at once, with 503 and Retry-After, while the server is known to be away,
    /// instead of leaving a request waiting in the pool for a connection.
    package func checkAvailable() async throws(NotesError) {
        guard markedDown.withLock({ $0 }) else { return }
        try await checkReachable()
        markReachable(true)
    }

    // MARK: Migrations

    /// Applies the migrations the database lacks, each in its own transaction, under an
    /// advisory lock (two instances starting together migrate once). Refuses a database
    /// that a newer notesd has migrated past what this binary knows.
    /// - Returns: the versions applied now.
    @discardableResult
    public func migrate() async throws(NotesError) -> [Int] {
        do {
            // Under the lock too: two instances creating the table at once collide
            // in PostgreSQL's catalogue even with IF NOT EXISTS.
            try await client.withTransaction(logger: logger) { connection in
                try await Self.lockForMigrations(connection, logger: logger)
                try await Self.execute(
                    """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                    """, on: connection, logger: logger)
            }
            var applied: [Int] = []
            for migration in PostgresMigrations.all {
                let done: Bool = try await client.withTransaction(logger: logger) { connection in
                    try await Self.lockForMigrations(connection, logger: logger)
                    let newest = try await Self.schemaVersion(connection, logger: logger)
                    if newest > PostgresMigrations.latest { throw Self.tooNew(newest) }
                    if newest >= migration.version { return false }
                    for statement in PostgresMigrations.statements(migration.sql) {
                        try await Self.execute(PostgresQuery(unsafeSQL: statement), on: connection, logger: logger)
                    }
                    try await Self.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))", on: connection, logger: logger)
                    return true
                }
                if done {
                    logger.info("database migrated", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
                    applied.append(migration.version)
                }
            }
            if applied.isEmpty {
                let newest = try await schemaVersion()
                if newest > PostgresMigrations.latest { throw Self.tooNew(newest) }
            }
            return applied
        } catch {
            throw convert(error, doing: "migrate the database at \(location)")
        }
    }

    /// The newest migration applied (0 for an empty database).
    public func schemaVersion() async throws(NotesError) -> Int {
        do {
            return try await client.withConnection { connection in try await Self.schemaVersion(connection, logger: logger) }
        } catch {
            throw convert(error, doing: "read the schema version of \(location)")
        }
    }

    static func schemaVersion(_ connection: PostgresConnection, logger: Logger) async throws -> Int {
        let rows = try await connection.query(
            "SELECT COALESCE(MAX(version), 0)::INTEGER FROM schema_migrations", logger: logger)
        for try await version in rows.decode(Int.self) { return version }
        return 0
    }

    /// Runs a statement and reads its answer to the end: postgres-nio reports a failure
    /// (a timeout, a lock not granted) only as the rows are read, and a statement whose
    /// rows nobody read would fail the next one instead, as "transaction aborted".
    static func execute(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws {
        for try await _ in try await connection.query(query, logger: logger) {}
    }

    /// Takes the migrations' lock for the transaction. Migrations may take long on a big
    /// database, and another instance may wait for them: no statement timeout here.
    static func lockForMigrations(_ connection: PostgresConnection, logger: Logger) async throws {
        try await execute("SET LOCAL statement_timeout = 0", on: connection, logger: logger)
        try await execute("SELECT pg_advisory_xact_lock(\(migrationLock))", on: connection, logger: logger)
    }

    /// The key of the advisory lock that migrations take (any fixed number of our own).
    static let migrationLock: Int64 = 0x6E6F_7465_7364  // "notesd"

    static func tooNew(_ version: Int) -> NotesError {
        NotesError(
            .serviceUnavailable,
            "The database is at schema version \(version), newer than this notesd knows (\(PostgresMigrations.latest)): a newer notesd has used it. Run that version, or restore a backup made before the upgrade."
        )
    }

    // MARK: Errors

    /// The one place where driver errors become `NotesError`.
    /// Faults of the database are counted for `GET /metrics`.
    package func convert(_ error: any Error, doing what: String) -> NotesError {
        if let error = error as? NotesError { return error }
        return metrics.counted(translate(error, doing: what))
    }

    private func translate(_ error: any Error, doing what: String) -> NotesError {
        if let error = error as? NotesError { return error }
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError { return translate(inner, doing: what) }
            if let inner = error.beginError ?? error.commitError { return translate(inner, doing: what) }
        }
        if let error = error as? PSQLError {
            switch error.serverInfo?[.sqlState] {
            case "23505": return NotesError(.constraintViolation, "That name is already taken.")
            case "23503": return NotesError(.invalidArguments, "The request refers to something that does not exist.")
            case "22021", "22P05": return NotesError(.invalidArguments, "The request holds a character that cannot be stored (a NUL).")
            case "57014": return NotesError(.serviceUnavailable, "The database took too long to answer; try again.", retryAfter: 2)
            case "57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006":
                // Shutting down, crashed, starting up, or the connection failed: away for now.
                logger.warning("database unavailable", metadata: ["error": "\(String(reflecting: error))"])
                markReachable(false)
                return NotesError(.serviceUnavailable, "The database at \(location) is not accepting connections now (starting or stopping); try again.", retryAfter: 2)
            case "53100": return NotesError(.serviceUnavailable, "The database server's disk is full; free space and try again.")
            case "40001", "40P01": return NotesError(.serviceUnavailable, "The database is busy; try again.", retryAfter: 1)
            case "28P01", "28000":
                return NotesError(.serviceUnavailable, "PostgreSQL refused the login of \(location.user) to \(location.database): check the role, its password and pg_hba.conf.")
            case "3D000":
                return NotesError(.serviceUnavailable, "PostgreSQL has no database \(location.database): create it (createdb -O \(location.user) \(location.database)).")
            default: break
            }
            if error.code == .connectionError || error.code == .serverClosedConnection || error.code == .clientClosedConnection {
                logger.error("database unreachable", metadata: ["error": "\(String(reflecting: error))"])
                markReachable(false)
                return NotesError(.serviceUnavailable, "Cannot reach the database at \(location) to \(what); check that PostgreSQL is running.", retryAfter: 2)
            }
        }
        logger.error("storage fault", metadata: ["error": "\(String(reflecting: error))", "doing": "\(what)"])
        return NotesError(.internalError, "The server failed to \(what); the error is in its log.")
    }
}
