import Foundation
import GRDB
public import NotesModel
import NotesSearch
import NotesSearchSQLite
import NotesStoreRules
import NotesText

extension SQLiteStore {
    public func search(_ request: API.Search, actor: String) async throws(NotesError) -> API.SearchResults {
        let parsed = try SearchRules.Request(request)
        guard let index = searchIndex, let indexer = searchIndexer else { throw SearchRules.turnedOff }
        let complete = try await indexer.waitForVisibleSaves(of: actor)
        var folder: SearchFolder?
        if let path = parsed.query.folder {
            folder = try await SearchRules.folder(path, actor: actor, lookup: SQLiteFolderLookup(store: self, index: index, actor: actor))
        }
        let scope = folder
        let hits = try await readSearch(index) { db in try SearchPage(db, parsed, actor: actor).hits(in: scope) }
        return API.SearchResults(results: Array(hits.prefix(parsed.limit)), next: parsed.next(found: hits.count), complete: complete)
    }

    /// Empties the search index and takes every note in again, in this task, telling
    /// `progress` how many notes are left (`notesd reindex`).
    public func rebuildSearchIndex(progress: (Int) -> Void) async throws(NotesError) {
        guard let index = searchIndex, let indexer = searchIndexer else {
            throw NotesError(.serviceUnavailable, "This store was opened without its search index.")
        }
        try await index.reset()
        try await indexer.catchUp(progress: progress)
    }

    /// A read of the index file (with the store's tables attached as `store`), in the
    /// caller's turn at the store's readers, on a thread of its own.
    func readSearch<T: Sendable>(_ index: SQLiteSearchIndex, _ body: @escaping @Sendable (Database) throws -> T) async throws(NotesError) -> T {
        metrics.calls.increment()
        defer { metrics.calls.decrement() }
        do {
            return try await readers.runBlocking { try index.pool.read(body) }
        } catch {
            throw convert(error)
        }
    }
}

/// One page of a search, read in one transaction over the index and the store.
private struct SearchPage {
    let db: Database
    let request: SearchRules.Request
    let actor: String
    /// Share ID → whether it is zone-wide (else the root record's name), for every share
    /// the caller takes part in and may read.
    var readable: [String: String?] = [:]

    init(_ db: Database, _ request: SearchRules.Request, actor: String) throws {
        self.db = db
        self.request = request
        self.actor = actor
        readable = try Self.readableShares(db, actor: actor)
    }

    static func readableShares(_ db: Database, actor: String) throws -> [String: String?] {
        var readable: [String: String?] = [:]
        for zone in try SQLiteStore.sharedZoneIDs(db, actor: actor) {
            readable.merge(SearchRules.readableShares(try ZoneAccess.load(db, zone: zone, actor: actor))) { first, _ in first }
        }
        return readable
    }

    /// The page's hits (one more than the page when another page follows).
    func hits(in folder: SearchFolder?) throws -> [API.SearchHit] {
        let source = SearchIndexFile.Source(
            records: "store.records",
            visible: "(r.owner = ? OR r.share_id IN (SELECT value FROM json_each(?))) AND \(SQLiteStore.shownRecord)",
            arguments: [actor, String(decoding: try JSONEncoder().encode(Array(readable.keys)), as: UTF8.self)])
        let query = request.query
        return try SearchIndexFile.matches(db, request, in: folder, from: source, actor: actor).map { match in
            let (zone, recordName, shareID) = (match.zone, match.recordName, match.shareID)
            // Only the start of a note is shown (`SearchSnippet.scannedBytes`).
            let note = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT name, rowid, content_id FROM store.records WHERE owner = ? AND zone = ? AND record_name = ?"),
                arguments: [zone.owner, zone.name, recordName])
            let body = note.flatMap { note -> String? in
                // The text is in the row, or in `contents` when written apart.
                if let content = note[2] as Int64? {
                    return SearchIndexFile.leadingText(db, "store", "contents", "body", rowid: content, count: SearchSnippet.scannedBytes)
                }
                return SearchIndexFile.leadingText(db, "store", "records", "body", rowid: note[1], count: SearchSnippet.scannedBytes)
            }
            let shown = SearchRules.shown(name: note?[0] ?? recordName, body: body ?? "", query)
            let zoneWide = shareID.map { readable[$0] == .some(nil) } ?? false
            let root = zone.owner == actor ? nil : shareID.flatMap { readable[$0] ?? nil }
            return API.SearchHit(
                zone: zone, recordName: recordName, shareID: zone.owner == actor ? nil : shareID,
                path: SearchRules.mountPath(zone: zone, actor: actor, zoneWide: zoneWide, names: try names(of: recordName, in: zone, upTo: root)),
                title: shown.title, modifiedBy: match.modifiedBy, modifiedAt: Date(stored: match.modifiedAt), snippet: shown.snippet)
        }
    }

    /// The names from the zone's root (or the share's root record `root`) down to the
    /// record, its own last.
    func names(of recordName: String, in zone: ZoneID, upTo root: String?) throws -> [String] {
        var names: [String] = []
        var cursor: String? = recordName
        while let current = cursor, names.count <= 10_000 {
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT name, parent FROM store.records WHERE owner = ? AND zone = ? AND record_name = ?"),
                    arguments: [zone.owner, zone.name, current])
            else { break }
            names.append(row[0])
            let parent: String = row[1]
            cursor = current == root || parent.isEmpty ? nil : parent
        }
        return names.reversed()
    }
}

/// `in:` paths resolved on the store's tables, a short read each.
private struct SQLiteFolderLookup: SearchFolderLookup {
    let store: SQLiteStore
    let index: SQLiteSearchIndex
    let actor: String

    func child(named name: String, of parent: String?, in zone: ZoneID) async throws(NotesError) -> String? {
        try await store.readSearch(index) { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT record_name FROM store.records WHERE owner = ? AND zone = ? AND parent = ? AND name = ?"),
                arguments: [zone.owner, zone.name, parent ?? "", name])
        }
    }

    func ownsZone(_ zone: ZoneID) async throws(NotesError) -> Bool {
        try await store.readSearch(index) { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM store.zones WHERE owner = ? AND name = ?", arguments: [zone.owner, zone.name]) == true
        }
    }

    func readableShares(of owner: String) async throws(NotesError) -> [(zone: String, root: (recordName: String, name: String)?)] {
        let actor = actor
        let found: [(String, String?, String?)] = try await store.readSearch(index) { db in
            let readable = try SearchPage.readableShares(db, actor: actor)
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT s.zone, s.root_record, r.name FROM store.shares s
                    LEFT JOIN store.records r ON r.owner = s.owner AND r.zone = s.zone AND r.record_name = s.root_record
                    WHERE s.owner = ? AND s.stopped = 0 AND s.id IN (SELECT value FROM json_each(?))
                    """, arguments: [owner, String(decoding: try JSONEncoder().encode(Array(readable.keys)), as: UTF8.self)]
            ).map { ($0[0], $0[1], $0[2]) }
        }
        return found.map { zone, root, name in (zone: zone, root: root.map { (recordName: $0, name: name ?? "") }) }
    }

    func below(_ recordName: String, in zone: ZoneID) async throws(NotesError) -> [String] {
        try await store.readSearch(index) { db in try StoredRecord.descendants(db, of: recordName, in: zone) }
    }
}
