import Foundation
import GRDB
import Logging
import NotesModel
import NotesSearch
import NotesSearchSQLite
import NotesText
import NotesWork
import Synchronization

/// The full-text index of every note, in a SQLite file of its own beside the store's
/// (`notes-search.sqlite` for `notes.sqlite`), which `SearchIndexer` fills from the
/// store's `search_pending` rows.
///
/// Why a file of its own: indexing a note costs tens of nanoseconds a byte (a batch of
/// 400 notes of 40 KB, half a second), and in the store's file it would hold the one
/// writer every account's saves wait for; here it holds only this file's.
/// A save is found once the index took it in, usually within milliseconds; a search
/// first waits for the saves of the accounts whose notes the caller reads, at most a
/// bound (`SearchIndexer.waitForVisibleSaves`).
///
/// Each batch takes in notes of every account with notes waiting, in turn, so that one
/// account's import of thousands never holds back the index of the others' notes. The
/// index keeps, per account, the last `search_pending` id it took in.
///
/// The index is derived data: it is not backed up, and a file of another schema (or
/// none) is rebuilt from the store's notes.
final class SQLiteSearchIndex: SearchIndexStorage {
    /// Rows of `search_pending` already taken in, past which they are deleted.
    static let cleanupRows: Int64 = 2_000

    /// The index file, with the store's attached as `store`.
    let pool: DatabasePool
    let path: String
    private let storePool: DatabasePool
    private let readers: FairGate
    private let writer: FairGate
    private let progress = Mutex(Progress())

    /// Per account, the last `search_pending` id taken in, and the last deleted.
    private struct Progress {
        var indexedThrough: [String: Int64] = [:]
        var cleanedThrough: [String: Int64] = [:]
    }

    /// Each account with rows in `search_pending` and its last id, found with one index
    /// seek per account (a GROUP BY would read every row, those already taken in too).
    static let ownersWithLastID = """
        WITH RECURSIVE owners(owner) AS (
            SELECT MIN(owner) FROM search_pending
            UNION ALL
            SELECT (SELECT MIN(owner) FROM search_pending WHERE owner > owners.owner) FROM owners WHERE owners.owner IS NOT NULL
        )
        SELECT owner, (SELECT MAX(id) FROM search_pending WHERE owner = owners.owner) FROM owners WHERE owner IS NOT NULL
        """

    /// Empties the index and asks the store for every note again.
    func reset() async throws(NotesError) {
        do {
            try await Blocking.background {
                try SearchIndexFile.write(self.pool) { db in try SearchIndexFile.empty(db) }
            }
            try await writer.runBlocking(for: WorkCaller.notesd) {
                try self.storePool.write { db in
                    try db.execute(
                        sql: """
                            INSERT OR REPLACE INTO search_pending (owner, zone, record_name)
                            SELECT owner, zone, record_name FROM records WHERE record_type = 'note'
                            """)
                }
            }
        } catch {
            throw Self.failure(error)
        }
        progress.withLock { $0 = Progress() }
    }

    /// The index file for the store at `storePath`.
    static func path(besides storePath: String) -> String {
        let url = URL(fileURLWithPath: storePath)
        return url.deletingPathExtension().path + "-search.sqlite"
    }

    /// Opens (or makes, or rebuilds) the index of the store at `storePath`; a new
    /// index asks the store for every note again. Reads and writes of the store's
    /// file take their turns at the store's gates.
    init(storePath: String, storePool: DatabasePool, readers: FairGate, writer: FairGate) throws {
        path = Self.path(besides: storePath)
        self.storePool = storePool
        self.readers = readers
        self.writer = writer
        SQLiteStore.makeOwnerOnly(path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try SearchIndexFile.configure(db)
            // The store's tables, read in the same statement as the index: who may
            // read a note is decided on the live rows, never on a copy.
            try db.execute(sql: "ATTACH DATABASE ? AS store", arguments: [storePath])
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        let rebuilt = try SearchIndexFile.write(pool) { db in try SearchIndexFile.prepare(db) }
        if rebuilt {
            try storePool.write { db in
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO search_pending (owner, zone, record_name)
                        SELECT owner, zone, record_name FROM records WHERE record_type = 'note'
                        """)
            }
        }
        let stored = try pool.read { db in try SearchIndexFile.progress(db) }
        progress.withLock { $0.indexedThrough = stored }
    }

    private func readStore<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(NotesError) -> T {
        do {
            return try await readers.runBlocking(for: WorkCaller.notesd) { try self.storePool.read(body) }
        } catch {
            throw Self.failure(error)
        }
    }

    private static func failure(_ error: any Error) -> NotesError {
        error as? NotesError ?? NotesError(.serviceUnavailable, "The search index could not be read or written: \(error).")
    }

    /// Of each account with notes waiting, its oldest, as many of each as the batch has
    /// room for (whole runs of one account: its progress is the last id taken in).
    func pending(limit: Int, bytes: Int) async throws(NotesError) -> [PendingNote] {
        let through = progress.withLock { $0.indexedThrough }
        return try await readStore { db in
            let owners = try Row.fetchAll(db.cachedStatement(sql: Self.ownersWithLastID))
                .map { ($0[0] as String, $0[1] as Int64) }
                .filter { $0.1 > through[$0.0, default: 0] }
                .map(\.0)
            guard !owners.isEmpty else { return [] }
            let each = max(1, limit / owners.count)
            var notes: [PendingNote] = []
            var taken = 0
            for owner in owners.shuffled() {
                let rows = try Row.fetchAll(
                    db.cachedStatement(sql: "SELECT id, zone, record_name FROM search_pending WHERE owner = ? AND id > ? ORDER BY id LIMIT ?"),
                    arguments: [owner, through[owner, default: 0], each])
                for row in rows {
                    let zone = ZoneID(owner: owner, name: row[1])
                    let record = try StoredRecord.fetch(db, row[2], in: zone)
                    let body = record?.recordType == .note ? (record?.body ?? "") : nil
                    notes.append(PendingNote(id: row[0], owner: owner, zone: zone.name, recordName: row[2], name: record?.name ?? "", body: body))
                    taken += body?.utf8.count ?? 0
                    if taken >= bytes { return notes }
                }
            }
            return notes
        }
    }

    func takeIn(_ notes: [PendingNote], _ documents: [SearchDocument?], urgent: Bool) async throws(NotesError) {
        let reached: [String: Int64]
        do {
            reached = try await (urgent ? Blocking.run : Blocking.idle) {
                try SearchIndexFile.write(self.pool) { db in
                    let reached = notes.reduce(into: [String: Int64]()) { reached, note in reached[note.owner] = max(reached[note.owner] ?? 0, note.id) }
                    try SearchIndexFile.write(db, notes, documents, reached: reached)
                    return reached
                }
            }
        } catch {
            throw Self.failure(error)
        }
        progress.withLock { progress in
            for (owner, id) in reached { progress.indexedThrough[owner] = max(progress.indexedThrough[owner, default: 0], id) }
        }
    }

    func waitingMark(for actor: String) async throws(NotesError) -> [String: Int64]? {
        let through = progress.withLock { $0.indexedThrough }
        let targets = try await readStore { db in
            let owners = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT DISTINCT s.owner FROM participants p JOIN shares s ON s.id = p.share_id
                        WHERE p.account = ? AND p.status = 'accepted' AND s.stopped = 0
                        """), arguments: [actor])
            var targets: [String: Int64] = [:]
            for owner in Set(owners + [actor]) {
                let last = try Int64.fetchOne(
                    db.cachedStatement(sql: "SELECT MAX(id) FROM search_pending WHERE owner = ? AND id > ?"), arguments: [owner, through[owner, default: 0]])
                if let last { targets[owner] = last }
            }
            return targets
        }
        return targets.isEmpty ? nil : targets
    }

    func isTakenIn(_ mark: [String: Int64]) async throws(NotesError) -> Bool {
        progress.withLock { progress in mark.allSatisfy { progress.indexedThrough[$0.key, default: 0] >= $0.value } }
    }

    /// Deletes the store's rows the index took in, once there are enough of them to be
    /// worth a write of the store's.
    func cleanUp() async throws(NotesError) {
        let (through, cleaned) = progress.withLock { ($0.indexedThrough, $0.cleanedThrough) }
        let done = through.filter { $0.value > cleaned[$0.key, default: 0] }
        guard done.reduce(0, { $0 + $1.value - cleaned[$1.key, default: 0] }) >= Self.cleanupRows else { return }
        do {
            try await writer.runBlocking(for: WorkCaller.notesd) {
                try self.storePool.write { db in
                    for (owner, id) in done {
                        try db.cachedStatement(sql: "DELETE FROM search_pending WHERE owner = ? AND id <= ?").execute(arguments: [owner, id])
                    }
                }
            }
        } catch {
            throw Self.failure(error)
        }
        progress.withLock { progress in
            for (owner, id) in done { progress.cleanedThrough[owner] = id }
        }
    }

    func tidy() async throws(NotesError) -> Bool {
        do {
            return try await Blocking.idle { try SearchIndexFile.tidy(self.pool) }
        } catch {
            throw Self.failure(error)
        }
    }

    /// The index owns what it reads and writes (the pools), so it never closes under
    /// its indexer.
    var isClosed: Bool { false }

    func waitingCount() async throws(NotesError) -> Int {
        let through = progress.withLock { $0.indexedThrough }
        return try await readStore { db in
            try String.fetchAll(db.cachedStatement(sql: Self.ownersWithLastID)).reduce(0) { sum, owner in
                sum
                    + (try Int.fetchOne(
                        db.cachedStatement(sql: "SELECT COUNT(*) FROM search_pending WHERE owner = ? AND id > ?"), arguments: [owner, through[owner, default: 0]]) ?? 0)
            }
        }
    }
}
