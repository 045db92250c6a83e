import Foundation
import GRDB
public import Logging
public import NotesModel
public import NotesSearch
import NotesSearchSQLite
import NotesText
import NotesWork
import Synchronization

/// The mount's own search index of what its replica holds, in a file beside it
/// (`alice.replica-search.sqlite`): `notes search` answers from it when notesd cannot be
/// reached, and the mount's `.search/` folders answer from it always, so neither waits
/// for the network.
///
/// It is the index notesd keeps on SQLite (`SearchIndexFile`), filled by the same
/// `SearchIndexer` from the replica's `search_pending` rows, at the lowest priority and
/// after the mount is up: a first mount of 100,000 notes is not delayed, and searches
/// find more as the index grows (`waitingCount` says how many are still to come).
/// Everything in the replica is the account's to read, so no rights are checked here:
/// the replica drops what the account may no longer read, and the index follows.
public final class ReplicaSearch: Sendable {
    /// The one key of `progress`: a replica's pending rows are numbered in one sequence.
    static let progressKey = "replica"

    let reader: any DatabaseReader
    private let writer: DatabasePool?
    private let replica: Replica?
    private let state = Mutex(State())
    /// Takes the replica's writes in; nil for an index opened only to read it.
    public let indexer: SearchIndexer?
    private let storage: Storage?

    struct State {
        var indexedThrough: Int64 = 0
        var cleanedThrough: Int64 = 0
        var closed = false
    }

    /// The index file of the replica at `replicaPath`.
    public static func path(besides replicaPath: String) -> String {
        (replicaPath.hasSuffix(".sqlite") ? String(replicaPath.dropLast(".sqlite".count)) : replicaPath) + "-search.sqlite"
    }

    /// Opens (or makes, or rebuilds) the index of a mount's replica and starts taking
    /// in what the replica holds and every later write of it.
    public init(replica: Replica, logger: Logger) throws(ReplicaError) {
        let path = Self.path(besides: replica.path)
        self.replica = replica
        do {
            try ReplicaLocation.ownerOnly(path)
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            configuration.prepareDatabase { db in
                try SearchIndexFile.configure(db)
                try db.execute(sql: "ATTACH DATABASE ? AS replica", arguments: [replica.path])
            }
            let pool = try DatabasePool(path: path, configuration: configuration)
            writer = pool
            reader = pool
            let (rebuilt, through) = try SearchIndexFile.write(pool) { db in
                var rebuilt = try SearchIndexFile.prepare(db)
                var through = try SearchIndexFile.progress(db)[Self.progressKey] ?? 0
                // A replica made anew numbers its notes from 1 again: an index that took
                // in more than it ever numbered belongs to an earlier one.
                let numbered = try Int64.fetchOne(db, sql: "SELECT seq FROM replica.sqlite_sequence WHERE name = 'search_pending'") ?? 0
                if through > numbered {
                    try SearchIndexFile.empty(db)
                    (rebuilt, through) = (true, 0)
                }
                return (rebuilt, through)
            }
            if rebuilt {
                try replica.write("ask the search index for every note") { db in
                    try db.execute(
                        sql: """
                            INSERT OR REPLACE INTO search_pending (owner, zone, record_name)
                            SELECT owner, zone, record_name FROM records WHERE record_type = 'note' AND deleted = 0
                            """)
                }
            }
            state.withLock { $0.indexedThrough = through }
        } catch {
            throw Replica.convert(error, "open the search index at \(path)")
        }
        let storage = Storage()
        let indexer = SearchIndexer(storage: storage, logger: logger)
        self.storage = storage
        self.indexer = indexer
        storage.search.withLock { $0.value = self }
        replica.writer.onCommit { [weak indexer] in indexer?.wake() }
        indexer.wake()
    }

    /// Opens the index of the replica at `replicaPath` to read it (`notes search`
    /// offline); nil when there is none.
    public init?(readingBesides replicaPath: String) throws(ReplicaError) {
        let path = Self.path(besides: replicaPath)
        guard FileManager.default.fileExists(atPath: path), FileManager.default.fileExists(atPath: replicaPath) else { return nil }
        do {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(10)
            configuration.prepareDatabase { db in try db.execute(sql: "ATTACH DATABASE ? AS replica", arguments: [replicaPath]) }
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            let through = try queue.read { db in
                guard try Int32.fetchOne(db, sql: "PRAGMA user_version") == SearchIndexFile.schemaVersion else { return nil as Int64? }
                return try SearchIndexFile.progress(db)[Self.progressKey] ?? 0
            }
            guard let through else { return nil }
            reader = queue
            writer = nil
            replica = nil
            indexer = nil
            storage = nil
            state.withLock { $0.indexedThrough = through }
        } catch {
            throw Replica.convert(error, "read the search index at \(path)")
        }
    }

    /// Stops taking writes in (the mount is ending).
    public func close() {
        state.withLock { $0.closed = true }
    }

    /// How many notes of the replica the index has not taken in yet.
    public func waitingCount() throws(ReplicaError) -> Int {
        let through = state.withLock { $0.indexedThrough }
        do {
            return try reader.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM replica.search_pending WHERE id > ?", arguments: [through]) ?? 0
            }
        } catch {
            throw Replica.convert(error, "read the search index")
        }
    }

    // MARK: Searching

    /// The page of `request`'s matches among the notes of `folder` (nil: all), best
    /// first, one more than the page when another follows; `account` owns the replica.
    public func search(_ request: SearchRules.Request, in folder: SearchFolder?, account: String) throws(ReplicaError) -> [API.SearchHit] {
        do {
            return try reader.read { db in
                let source = SearchIndexFile.Source(records: "replica.records", visible: "r.deleted = 0", arguments: [])
                let matches = try SearchIndexFile.matches(db, request, in: folder, from: source, actor: account)
                let shares = try Self.shares(db)
                return try matches.map { match in
                    let note = try Row.fetchOne(
                        db.cachedStatement(sql: "SELECT name, rowid FROM replica.records WHERE owner = ? AND zone = ? AND record_name = ?"),
                        arguments: [match.zone.owner, match.zone.name, match.recordName])
                    let body = note.flatMap { SearchIndexFile.leadingText(db, "replica", "records", "content", rowid: $0[1], count: SearchSnippet.scannedBytes) } ?? ""
                    let shown = SearchRules.shown(name: note?[0] ?? match.recordName, body: body, request.query)
                    let share = match.zone.owner == account ? nil : match.shareID.flatMap { shares[$0] }
                    let names = try Self.names(db, of: match.recordName, in: match.zone, upTo: share?.rootRecordName)
                    return API.SearchHit(
                        zone: match.zone, recordName: match.recordName, shareID: share?.id,
                        path: SearchRules.mountPath(zone: match.zone, actor: account, zoneWide: share?.isZoneWide ?? false, names: names),
                        title: shown.title, modifiedBy: match.modifiedBy, modifiedAt: Date(timeIntervalSince1970: match.modifiedAt),
                        snippet: shown.snippet)
                }
            }
        } catch {
            throw Replica.convert(error, "search this machine's copy of your notes")
        }
    }

    /// The shares the replica knows, by ID.
    static func shares(_ db: Database) throws -> [String: Share] {
        let decoder = NotesJSON.decoder()
        let shares = try Data.fetchAll(db, sql: "SELECT json FROM replica.shares").compactMap { try? decoder.decode(Share.self, from: $0) }
        return Dictionary(shares.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The names from the zone's root (or the share's root record `root`) down to the
    /// record, its own last.
    static func names(_ db: Database, of recordName: String, in zone: ZoneID, upTo root: String?) throws -> [String] {
        var names: [String] = []
        var cursor: String? = recordName
        while let current = cursor, names.count <= 10_000 {
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT name, parent FROM replica.records WHERE owner = ? AND zone = ? AND record_name = ?"),
                    arguments: [zone.owner, zone.name, current])
            else { break }
            names.append(row[0])
            let parent: String? = row[1]
            cursor = current == root || (parent ?? "").isEmpty ? nil : parent
        }
        return names.reversed()
    }

    /// `in:` paths resolved on the replica, as the mount lays it out.
    public func folderLookup(account: String) -> some SearchFolderLookup { FolderLookup(reader: reader, account: account) }

    private struct FolderLookup: SearchFolderLookup {
        let reader: any DatabaseReader
        let account: String

        func read<T>(_ body: (Database) throws -> T) throws(NotesError) -> T {
            do {
                return try reader.read(body)
            } catch {
                throw NotesError(.internalError, Replica.convert(error, "read this machine's copy of your notes").message)
            }
        }

        func child(named name: String, of parent: String?, in zone: ZoneID) async throws(NotesError) -> String? {
            try read { db in
                try String.fetchOne(
                    db,
                    sql: "SELECT record_name FROM replica.records WHERE owner = ? AND zone = ? AND COALESCE(parent, '') = ? AND name = ? AND deleted = 0",
                    arguments: [zone.owner, zone.name, parent ?? "", name])
            }
        }

        func ownsZone(_ zone: ZoneID) async throws(NotesError) -> Bool {
            try read { db in
                try Bool.fetchOne(db, sql: "SELECT 1 FROM replica.zones WHERE owner = ? AND name = ?", arguments: [zone.owner, zone.name]) == true
            }
        }

        func readableShares(of owner: String) async throws(NotesError) -> [(zone: String, root: (recordName: String, name: String)?)] {
            try read { db in
                try ReplicaSearch.shares(db).values.filter { $0.owner == owner }.map { share in
                    let root = try share.rootRecordName.map { name in
                        (
                            recordName: name,
                            name: try String.fetchOne(
                                db, sql: "SELECT name FROM replica.records WHERE owner = ? AND zone = ? AND record_name = ?",
                                arguments: [share.zone.owner, share.zone.name, name]) ?? ""
                        )
                    }
                    return (zone: share.zone.name, root: root)
                }
            }
        }

        func below(_ recordName: String, in zone: ZoneID) async throws(NotesError) -> [String] {
            try read { db in
                try String.fetchAll(
                    db,
                    sql: """
                        WITH RECURSIVE below(name) AS (
                            SELECT record_name FROM replica.records WHERE owner = ?1 AND zone = ?2 AND parent = ?3
                            UNION SELECT r.record_name FROM replica.records r JOIN below b ON r.owner = ?1 AND r.zone = ?2 AND r.parent = b.name
                        )
                        SELECT name FROM below
                        """, arguments: [zone.owner, zone.name, recordName])
            }
        }
    }

    // MARK: Taking notes in

    /// The indexer's side: the replica's pending notes in, the index's documents out.
    /// It holds the index weakly (the index holds its indexer, which holds this).
    final class Storage: SearchIndexStorage {
        struct Weak { weak var value: ReplicaSearch? }
        let search = Mutex(Weak())

        private func index() throws(NotesError) -> ReplicaSearch {
            guard let search = search.withLock({ $0.value }), search.writer != nil else {
                throw NotesError(.serviceUnavailable, "The mount's search index is closed.")
            }
            return search
        }

        private static func failure(_ error: any Error) -> NotesError {
            error as? NotesError ?? NotesError(.internalError, Replica.convert(error, "keep the search index").message)
        }

        func pending(limit: Int, bytes: Int) async throws(NotesError) -> [PendingNote] {
            let index = try index()
            let through = index.state.withLock { $0.indexedThrough }
            do {
                // (A short read, at the mount's own priority: a search waiting for the
                // index must not wait for a read starved at the lowest.)
                return try await index.reader.read { db in
                    let rows = try Row.fetchCursor(
                        db,
                        sql: """
                            SELECT p.id, p.owner, p.zone, p.record_name, r.record_type, r.name, r.content, r.deleted
                            FROM replica.search_pending p
                            LEFT JOIN replica.records r ON r.owner = p.owner AND r.zone = p.zone AND r.record_name = p.record_name
                            WHERE p.id > ? ORDER BY p.id LIMIT ?
                            """, arguments: [through, limit])
                    var notes: [PendingNote] = []
                    var taken = 0
                    while let row = try rows.next() {
                        let isNote = (row[4] as String?) == RecordType.note.rawValue && (row[7] as Bool?) == false
                        let body = isNote ? (row[6] as Data?).map { String(decoding: $0, as: UTF8.self) } ?? "" : nil
                        notes.append(PendingNote(id: row[0], owner: row[1], zone: row[2], recordName: row[3], name: row[5] ?? "", body: body))
                        taken += body?.utf8.count ?? 0
                        if taken >= bytes { break }
                    }
                    return notes
                }
            } catch {
                throw Self.failure(error)
            }
        }

        func takeIn(_ notes: [PendingNote], _ documents: [SearchDocument?], urgent: Bool) async throws(NotesError) {
            let index = try index()
            guard let writer = index.writer, let last = notes.map(\.id).max() else { return }
            do {
                try await (urgent ? Blocking.run : Blocking.idle) {
                    try SearchIndexFile.write(writer) { db in try SearchIndexFile.write(db, notes, documents, reached: [ReplicaSearch.progressKey: last]) }
                }
            } catch {
                throw Self.failure(error)
            }
            index.state.withLock { $0.indexedThrough = max($0.indexedThrough, last) }
        }

        func waitingMark(for actor: String) async throws(NotesError) -> [String: Int64]? {
            let index = try index()
            let through = index.state.withLock { $0.indexedThrough }
            do {
                let last = try await index.reader.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM replica.search_pending") ?? 0 }
                return last > through ? [ReplicaSearch.progressKey: last] : nil
            } catch {
                throw Self.failure(error)
            }
        }

        func isTakenIn(_ mark: [String: Int64]) async throws(NotesError) -> Bool {
            let index = try index()
            return index.state.withLock { $0.indexedThrough >= mark[ReplicaSearch.progressKey, default: 0] }
        }

        /// Deletes the replica's rows taken in, in bulk, with the replica's other writes.
        func cleanUp() async throws(NotesError) {
            let index = try index()
            guard let replica = index.replica else { return }
            let through: Int64? = index.state.withLock { state in
                guard state.indexedThrough - state.cleanedThrough >= 2_000 else { return nil }
                state.cleanedThrough = state.indexedThrough
                return state.indexedThrough
            }
            guard let through else { return }
            _ = replica.writeLater("forget notes the search index took in", onFailure: { _ in }) { db in
                try db.execute(sql: "DELETE FROM search_pending WHERE id <= ?", arguments: [through])
            }
        }

        func tidy() async throws(NotesError) -> Bool {
            let index = try index()
            guard let writer = index.writer else { return false }
            do {
                return try await Blocking.idle { try SearchIndexFile.tidy(writer) }
            } catch {
                throw Self.failure(error)
            }
        }

        func waitingCount() async throws(NotesError) -> Int {
            let index = try index()
            do {
                return try index.waitingCount()
            } catch {
                throw NotesError(.internalError, error.message)
            }
        }

        var isClosed: Bool { search.withLock { $0.value?.state.withLock(\.closed) ?? true } }
    }
}
