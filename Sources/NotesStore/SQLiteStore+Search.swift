import Foundation
import GRDB
public import NotesModel
import NotesStoreRules
import NotesText

extension SQLiteStore {
    public func search(_ request: API.Search, actor: String) async throws(NotesError) -> API.SearchResults {
        let parsed = try SearchRules.Request(request)
        guard let index = searchIndex else {
            throw NotesError(.serviceUnavailable, "This store was opened without its search index.")
        }
        let complete = try await index.waitForVisibleSaves(of: actor, self)
        let hits = try await readSearch(index) { db in try SearchPage(db, parsed, actor: actor).hits() }
        return API.SearchResults(results: Array(hits.prefix(parsed.limit)), next: parsed.next(found: hits.count), complete: complete)
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
        for zone in try SQLiteStore.sharedZoneIDs(db, actor: actor) {
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            if let wide = access.zoneWideShare, access.canRead(shareID: wide) { readable[wide] = .some(nil) }
            for (root, share) in access.rootShares where access.canRead(shareID: share) { readable[share] = .some(root) }
        }
    }

    /// The page's hits (one more than the page when another page follows).
    func hits() throws -> [API.SearchHit] {
        var conditions = ["r.record_type = 'note'", "(r.owner = ? OR r.share_id IN (SELECT value FROM json_each(?)))", SQLiteStore.shownRecord]
        var arguments: [any DatabaseValueConvertible] = [actor, String(decoding: try JSONEncoder().encode(Array(readable.keys)), as: UTF8.self)]
        let query = request.query
        let wanted = query.clauses.filter { !$0.excluded }
        let unwanted = query.clauses.filter(\.excluded)
        let source: String
        if wanted.isEmpty {
            source = "(SELECT id, 0.0 AS score FROM docs)"
        } else {
            source = "(SELECT rowid AS id, bm25(docs_index, 4.0, 1.0) AS score FROM docs_index WHERE docs_index MATCH ?)"
            arguments.insert(Self.match(wanted), at: 0)
        }
        if !unwanted.isEmpty {
            conditions.append("d.id NOT IN (SELECT rowid FROM docs_index WHERE docs_index MATCH ?)")
            arguments.append(Self.match(unwanted, joinedBy: " OR "))
        }
        if let author = query.author {
            conditions.append("r.modified_by = ?")
            arguments.append(author)
        }
        if let since = query.modifiedSince {
            conditions.append("r.modified_at >= ?")
            arguments.append(since.timeIntervalSince1970)
        }
        if let before = query.modifiedBefore {
            conditions.append("r.modified_at < ?")
            arguments.append(before.timeIntervalSince1970)
        }
        if let folder = query.folder {
            let (sql, values) = try folderCondition(folder)
            conditions.append(sql)
            arguments.append(contentsOf: values)
        }
        arguments.append(request.fetched)
        arguments.append(request.offset)
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT d.id, d.owner, d.zone, d.record_name, r.share_id, r.modified_at, r.modified_by
                FROM \(source) h JOIN docs d ON d.id = h.id
                JOIN store.records r ON r.owner = d.owner AND r.zone = d.zone AND r.record_name = d.record_name
                WHERE \(conditions.joined(separator: " AND "))
                ORDER BY h.score, r.modified_at DESC, d.id
                LIMIT ? OFFSET ?
                """, arguments: StatementArguments(arguments))
        return try rows.map { row in
            let zone = ZoneID(owner: row[1], name: row[2])
            let recordName: String = row[3]
            let shareID: String? = row[4]
            let document = try Row.fetchOne(db.cachedStatement(sql: "SELECT title, text FROM docs WHERE id = ?"), arguments: [row[0] as Int64])
            let zoneWide = shareID.map { readable[$0] == .some(nil) } ?? false
            let root = zone.owner == actor ? nil : shareID.flatMap { readable[$0] ?? nil }
            return API.SearchHit(
                zone: zone, recordName: recordName, shareID: zone.owner == actor ? nil : shareID,
                path: SearchRules.mountPath(zone: zone, actor: actor, zoneWide: zoneWide, names: try names(of: recordName, in: zone, upTo: root)),
                title: SearchRules.title(document?["title"] ?? ""), modifiedBy: row[6], modifiedAt: Date(stored: row[5]),
                snippet: SearchRules.snippet(document?["text"] ?? "", query))
        }
    }

    /// An FTS5 expression: each clause's terms joined by OR, the clauses by `joinedBy`.
    static func match(_ clauses: [SearchQuery.Clause], joinedBy separator: String = " AND ") -> String {
        clauses.map { clause in
            "("
                + clause.alternatives.map { term in
                    let phrase = "\"" + term.form.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                    return term.field == .title ? "title : " + phrase : phrase
                }.joined(separator: " OR ") + ")"
        }.joined(separator: separator)
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

    /// The SQL that keeps the hits to the folder at `path` (a mount path), and its values.
    func folderCondition(_ path: String) throws -> (String, [any DatabaseValueConvertible]) {
        let segments = path.split(separator: "/").map(String.init)
        func missing() -> NotesError {
            NotesError(.invalidArguments, "in:\(path): there is no such folder in your mount; give its path from the top, as private/… or shared/OWNER/….")
        }
        var zone: ZoneID
        var rest: ArraySlice<String>
        var start: String?
        switch segments.first {
        case "private":
            guard segments.count > 1 else { return ("r.owner = ?", [actor]) }
            let home = ZoneID(owner: actor, name: ZoneID.defaultZoneName)
            if try child(named: segments[1], of: nil, in: home) != nil {
                (zone, rest) = (home, segments.dropFirst())
            } else if try Bool.fetchOne(db, sql: "SELECT 1 FROM store.zones WHERE owner = ? AND name = ?", arguments: [actor, segments[1]]) == true {
                (zone, rest) = (ZoneID(owner: actor, name: segments[1]), segments.dropFirst(2))
            } else {
                throw missing()
            }
        case "shared":
            guard segments.count > 1 else { return ("r.owner != ?", [actor]) }
            let owner = segments[1]
            guard segments.count > 2 else { return ("r.owner = ?", [owner]) }
            let shares = try Row.fetchAll(
                db, sql: "SELECT id, zone, root_record FROM store.shares WHERE owner = ? AND stopped = 0 AND id IN (SELECT value FROM json_each(?))",
                arguments: [owner, String(decoding: try JSONEncoder().encode(Array(readable.keys)), as: UTF8.self)])
            if let wide = shares.first(where: { ($0["root_record"] as String?) == nil && ($0["zone"] as String) == segments[2] }) {
                (zone, rest) = (ZoneID(owner: owner, name: wide["zone"]), segments.dropFirst(3))
            } else {
                var found: (ZoneID, String)?
                for share in shares {
                    guard let root: String = share["root_record"] else { continue }
                    let shareZone = ZoneID(owner: owner, name: share["zone"])
                    if try Row.fetchOne(
                        db, sql: "SELECT 1 FROM store.records WHERE owner = ? AND zone = ? AND record_name = ? AND name = ?",
                        arguments: [owner, shareZone.name, root, segments[2]]) != nil
                    {
                        found = (shareZone, root)
                    }
                }
                guard let found else { throw missing() }
                (zone, rest, start) = (found.0, segments.dropFirst(3), found.1)
            }
        default:
            throw NotesError(.invalidArguments, "in:\(path): a folder's path starts with private/ or shared/, as the mount shows it.")
        }
        var folder = start
        for name in rest {
            guard let next = try child(named: name, of: folder, in: zone) else { throw missing() }
            folder = next
        }
        guard let folder else { return ("r.owner = ? AND r.zone = ?", [zone.owner, zone.name]) }
        let below = try StoredRecord.descendants(db, of: folder, in: zone) + [folder]
        return (
            "r.owner = ? AND r.zone = ? AND r.record_name IN (SELECT value FROM json_each(?))",
            [zone.owner, zone.name, String(decoding: try JSONEncoder().encode(below), as: UTF8.self)]
        )
    }

    private func child(named name: String, of parent: String?, in zone: ZoneID) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT record_name FROM store.records WHERE owner = ? AND zone = ? AND parent = ? AND name = ?"),
            arguments: [zone.owner, zone.name, parent ?? "", name])
    }
}
