#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
public import NotesModel
public import Foundation
import GRDB
public import Logging
package import NotesStoreRules
import NotesSearch
import NotesWork

/// The embedded store: one SQLite file in WAL mode, one `DatabasePool` per process.
///
/// Each mutating call is one write transaction (`synchronous = FULL`), so a write that
/// returned is on disk, and a crash (even `kill -9`) mid-call leaves all or nothing.
public final class SQLiteStore: RecordStore {
    let pool: DatabasePool
    let logger: Logger
    let onChange: @Sendable ([ChangeNotice]) -> Void
    /// The time of day for expiries and record times; tests pass a clock they move.
    let clock: @Sendable () -> Date
    /// Quota and version retention.
    public let storage: StoragePolicy
    let metrics: StoreMetrics
    /// SQLite's one writer, and its reader connections, shared fairly between accounts.
    let writer: FairGate
    let readers: FairGate
    /// Checkpoints as turns of their own at the writer, charged to who filled the log.
    let checkpoints: CheckpointSchedule
    /// Link-password guesses this process saw refused.
    package let guessRefusals = GuessRefusals()
    /// The full-text index, in a file of its own, and what fills it (`nil`: opened for
    /// a copy or a migration, which never search).
    let searchIndex: SQLiteSearchIndex?
    let searchIndexer: SearchIndexer?

    /// Opens (creating if needed) the database at `path` and migrates it.
    /// - Parameter onChange: called after each commit with the accounts to notify.
    /// - Parameter clock: what "now" is (token and link expiry, record times).
    /// - Parameter searchable: keep the full-text index (`SQLiteSearchIndex`) beside it.
    public init(
        path: String, logger: Logger = Logger(label: "notes.store"), clock: @escaping @Sendable () -> Date = { Date() },
        storage: StoragePolicy = StoragePolicy(), searchable: Bool = true,
        onChange: @escaping @Sendable ([ChangeNotice]) -> Void = { _ in }
    ) throws(NotesError) {
        var configuration = Configuration()
        metrics = StoreMetrics(backend: "sqlite", maximumConnections: 1 + configuration.maximumReaderCount)
        writer = FairGate(name: "the database writer", permits: 1)
        readers = FairGate(name: "the database readers", permits: configuration.maximumReaderCount)
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        let checkpoints = CheckpointSchedule()
        self.checkpoints = checkpoints
        Self.makeOwnerOnly(path)
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // After opening: GRDB sets its pools' writer to `synchronous = NORMAL` once
            // `prepareDatabase` has run, which would let a power cut take the last
            // acknowledged writes. The writer connection keeps this for its lifetime.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                checkpoints.install(on: db)
            }
            try Migrations.migrator.migrate(pool)
        } catch {
            throw NotesError(.serviceUnavailable, "Cannot open the database at \(path): \(error). Check that the data directory exists and is writable.")
        }
        do {
            searchIndex = searchable ? try SQLiteSearchIndex(storePath: path, storePool: pool, readers: readers, writer: writer) : nil
        } catch {
            throw NotesError(
                .serviceUnavailable,
                "Cannot open the search index at \(SQLiteSearchIndex.path(besides: path)): \(error). It holds nothing that is not in the database: delete it and start notesd again to rebuild it."
            )
        }
        searchIndexer = searchIndex.map { SearchIndexer(storage: $0, logger: logger) }
        self.logger = logger
        self.clock = clock
        self.storage = storage
        self.onChange = onChange
    }

    /// Creates `path` if missing and makes it readable by notesd's user only: every
    /// account's notes, token hashes and link-password hashes (which key the unlock
    /// cookies) are in a database file or a backup of one. SQLite gives the file's
    /// -wal, -shm and -journal files the same mode.
    static func makeOwnerOnly(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            _ = fchmod(descriptor, 0o600)
            _ = close(descriptor)
        }
    }

    /// Runs `body` in one write transaction with a context that hands out change
    /// sequence numbers and collects notices, which are sent only after the commit.
    ///
    /// Callers take the writer in turns by account (`writer`), and the transaction runs
    /// on a thread of its own (`Blocking`), never on the event loop or cooperative
    /// thread that called: a caller waiting there for the writer held every connection
    /// of that loop (four clients sending 40 KB batches took others' saves to p99 267 ms).
    ///
    /// - Parameter small: the caller knows the transaction takes a millisecond or less
    ///   (a save of a few small notes). Then, if the writer is free and nobody waits,
    ///   it runs right here: a thread hop costs about as much as such a transaction.
    func write<T: Sendable>(small: Bool = false, _ body: @escaping @Sendable (WriteContext) throws -> T) async throws(NotesError) -> T {
        metrics.calls.increment()
        defer { metrics.calls.decrement() }
        let outcome: (T, Set<ChangeNotice>, checkpointFor: String?, held: ContinuousClock.Instant)
        let caller = WorkCaller.current
        let transaction: @Sendable () throws -> (T, Set<ChangeNotice>, checkpointFor: String?, held: ContinuousClock.Instant) = {
            let start = ContinuousClock.now
            let (value, notices) = try self.writeNow { db in
                let context = try WriteContext(db: db, now: self.clock())
                let value = try body(context)
                try context.finish()
                return (value, context.notices)
            }
            return (value, notices, self.checkpoints.wrote(caller), start)
        }
        do {
            try await WorkPace.waitBeforeWrite()
        } catch {
            throw NotesError(.serviceUnavailable, "The request was cancelled while it waited for its turn to write; try again.")
        }
        do {
            if small && writer.tryAcquire() {
                defer { writer.release() }
                outcome = try transaction()
            } else {
                outcome = try await writer.runBlocking(transaction)
            }
        } catch {
            throw convert(error)
        }
        WorkPace.held(since: outcome.held)
        if !outcome.1.isEmpty {
            onChange(Array(outcome.1))
        }
        searchIndexer?.wake()
        if let charged = outcome.checkpointFor {
            Task { await WorkCaller.$bound.withValue(charged) { await self.checkpoint() } }
        }
        return outcome.0
    }

    /// Copies the log back into the database (`CheckpointSchedule`), in the turn of the
    /// caller bound to this task. Passive: readers are never waited for; what they still
    /// read stays in the log for the next one.
    private func checkpoint() async {
        do {
            let frames = try await writer.runBlocking { try self.pool.writeWithoutTransaction { db in try db.checkpoint(.passive).walFrameCount } }
            checkpoints.checkpointed(logFrames: Int32(clamping: frames))
        } catch {
            checkpoints.checkpointed(logFrames: nil)
            logger.warning("the write-ahead log was not checkpointed; the next write tries again", metadata: ["error": "\(error)"])
        }
    }

    /// A read of a few rows (a token, an account, a share) on one of SQLite's reader
    /// connections: right here when one is free and nobody waits (microseconds, less
    /// than a thread hop), else in the caller's turn as `readAside`.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(NotesError) -> T {
        guard readers.tryAcquire() else { return try await readAside(body) }
        defer { readers.release() }
        metrics.calls.increment()
        defer { metrics.calls.decrement() }
        do {
            return try readNow(body)
        } catch {
            throw convert(error)
        }
    }

    /// A read that may take milliseconds (a page of thousands of changes, a lookup, a
    /// trash), on a reader connection taken in turns by account (`readers`) and a thread
    /// of its own: the caller's thread may be the event loop that is still sending the
    /// previous page, which the client is waiting to read.
    func readAside<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(NotesError) -> T {
        metrics.calls.increment()
        defer { metrics.calls.decrement() }
        do {
            return try await readers.runBlocking { try self.readNow(body) }
        } catch {
            throw convert(error)
        }
    }

    /// A synchronous write transaction, on the calling thread when the writer is free.
    private func writeNow<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.write { db in
            metrics.connectionsInUse.increment()
            defer { metrics.connectionsInUse.decrement() }
            return try body(db)
        }
    }

    /// A synchronous read, on the calling thread when a reader is free.
    private func readNow<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.read { db in
            metrics.connectionsInUse.increment()
            defer { metrics.connectionsInUse.decrement() }
            return try body(db)
        }
    }

    public func checkReady() async throws(NotesError) {
        let current = try await read { db in try Migrations.migrator.hasCompletedMigrations(db) }
        guard current else {
            throw NotesError(.serviceUnavailable, "The database's schema is not the one this notesd knows; restart notesd to migrate it.")
        }
    }

    /// The one place where driver errors become `NotesError`.
    func convert(_ error: any Error) -> NotesError {
        if let error = error as? NotesError { return error }
        if let error = error as? DatabaseError {
            switch error.extendedResultCode {
            case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY:
                return NotesError(.constraintViolation, "That name is already taken.")
            case .SQLITE_CONSTRAINT_FOREIGNKEY:
                return NotesError(.invalidArguments, "The request refers to something that does not exist.")
            default:
                break
            }
            switch error.resultCode {
            case .SQLITE_FULL:
                logger.error("database full", metadata: ["error": "\(error)"])
                return metrics.counted(NotesError(.serviceUnavailable, "The server's disk is full; free space and try again."))
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return metrics.counted(NotesError(.serviceUnavailable, "The database is busy; try again."))
            default:
                break
            }
        }
        // A caller that gave up while it waited for the writer or a reader (its client went away).
        if error is CancellationError {
            return NotesError(.serviceUnavailable, "The request was cancelled while it waited for the database; try again.")
        }
        logger.error("storage fault", metadata: ["error": "\(error)"])
        return metrics.counted(NotesError(.internalError, "The server failed to store or read data; the error is in its log."))
    }
}

/// The state of one write transaction.
///
/// Only ever used on GRDB's writer queue inside one `write` call, never shared.
final class WriteContext: @unchecked Sendable {
    let db: Database
    let now: Date
    private(set) var seq: Int64
    private let startSeq: Int64
    var notices: Set<ChangeNotice> = []

    init(db: Database, now: Date) throws {
        self.db = db
        self.now = now
        let current = try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM counters WHERE name = 'seq'")) ?? 0
        self.seq = current
        self.startSeq = current
    }

    /// The next change sequence number (also used as a change tag).
    func nextSeq() -> Int64 {
        seq += 1
        return seq
    }

    func finish() throws {
        if seq != startSeq {
            try db.cachedStatement(sql: "UPDATE counters SET value = ? WHERE name = 'seq'").execute(arguments: [seq])
        }
    }

    /// Notes that `zone` changed, for its owner and every accepted participant.
    func zoneChanged(_ zone: ZoneID) throws {
        try db.cachedStatement(sql: "UPDATE zones SET changed_seq = ? WHERE owner = ? AND name = ?").execute(arguments: [seq, zone.owner, zone.name])
        notices.insert(ChangeNotice(account: zone.owner, scope: .private, zone: zone))
        let participants = try String.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT DISTINCT p.account FROM participants p JOIN shares s ON s.id = p.share_id
                    WHERE s.owner = ? AND s.zone = ? AND s.stopped = 0 AND p.status = 'accepted' AND p.account IS NOT NULL AND p.role != 'owner'
                    """), arguments: [zone.owner, zone.name])
        for account in participants {
            notices.insert(ChangeNotice(account: account, scope: .shared, zone: zone))
        }
    }
}

extension Date {
    var storedValue: Double { timeIntervalSince1970 }
    init(stored value: Double) { self.init(timeIntervalSince1970: value) }
}
