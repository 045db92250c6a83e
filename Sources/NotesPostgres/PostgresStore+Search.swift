import Foundation
public import NotesModel
import NotesSearch
import NotesStoreRules
import NotesText
import PostgresNIO
import Synchronization

extension PostgresStore {
    public func search(_ request: API.Search, actor: String) async throws(NotesError) -> API.SearchResults {
        let parsed = try SearchRules.Request(request)
        guard searchable else { throw SearchRules.turnedOff }
        let complete = try await searchIndexer.waitForVisibleSaves(of: actor)
        var folder: SearchFolder?
        if let path = parsed.query.folder {
            folder = try await SearchRules.folder(path, actor: actor, lookup: PostgresFolderLookup(store: self, actor: actor))
        }
        let scope = folder
        let hits = try await read { sql in try await PostgresSearchPage(sql: sql, request: parsed, actor: actor).hits(in: scope) }
        return API.SearchResults(results: Array(hits.prefix(parsed.limit)), next: parsed.next(found: hits.count), complete: complete)
    }

    /// Empties the search index and takes every note in again, in this task, telling
    /// `progress` how many notes are left (`notesd reindex`). Instances serving
    /// meanwhile help take the notes in.
    public func rebuildSearchIndex(progress: (Int) -> Void) async throws(NotesError) {
        try await write { write in
            try await write.sql.execute("TRUNCATE search_docs, search_vocabulary")
            try await write.sql.execute(
                """
                INSERT INTO search_pending (owner, zone, record_name) SELECT owner, zone, record_name FROM records WHERE record_type = 'note'
                ON CONFLICT (owner, zone, record_name) DO UPDATE SET id = nextval('search_pending_id_seq')
                """)
        }
        try await searchIndexer.catchUp(progress: progress)
    }

    /// The shares the caller takes part in and may read (share ID → root record, nil
    /// for zone-wide), in the current transaction.
    static func readableShares(_ sql: SQL, actor: String) async throws -> [String: String?] {
        var readable: [String: String?] = [:]
        for zone in try await PostgresRecords.sharedZoneIDs(sql, actor: actor) {
            readable.merge(SearchRules.readableShares(try await PostgresRecords.access(sql, zone: zone, actor: actor))) { first, _ in first }
        }
        return readable
    }
}

/// A query whose text is assembled with its values bound as `$1`, `$2`, ….
private struct BoundQuery {
    var text = ""
    var bindings = PostgresBindings()

    mutating func bind(_ value: some PostgresNonThrowingEncodable & Sendable) -> String {
        bindings.append(value)
        return "$\(bindings.count)"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: bindings) }
}

/// One page of a search, in one snapshot.
private struct PostgresSearchPage {
    let sql: SQL
    let request: SearchRules.Request
    let actor: String

    func hits(in folder: SearchFolder?) async throws -> [API.SearchHit] {
        let readable = try await PostgresStore.readableShares(sql, actor: actor)
        let query = request.query
        var statement = BoundQuery()
        var conditions = [
            "r.record_type = 'note'",
            "(r.owner = \(statement.bind(actor)) OR r.share_id = ANY(\(statement.bind(Array(readable.keys)))::text[]))",
            PostgresStore.shownRecord,
        ]
        for clause in query.clauses where clause.excluded {
            conditions.append("NOT " + (try await Self.condition(sql, clause, reach: .all, &statement)))
        }
        if let author = query.author { conditions.append("r.modified_by = \(statement.bind(author))") }
        if let since = query.modifiedSince { conditions.append("r.modified_at >= \(statement.bind(since.timeIntervalSince1970))") }
        if let before = query.modifiedBefore { conditions.append("r.modified_at < \(statement.bind(before.timeIntervalSince1970))") }
        switch folder {
        case nil: break
        case .owned: conditions.append("r.owner = \(statement.bind(actor))")
        case .shared: conditions.append("r.owner <> \(statement.bind(actor))")
        case .owner(let owner): conditions.append("r.owner = \(statement.bind(owner))")
        case .zone(let zone): conditions.append("r.owner = \(statement.bind(zone.owner)) AND r.zone = \(statement.bind(zone.name))")
        case .records(let zone, let names):
            conditions.append(
                "r.owner = \(statement.bind(zone.owner)) AND r.zone = \(statement.bind(zone.name)) AND r.record_name = ANY(\(statement.bind(names))::text[])")
        }
        // `SearchRules.Reach`: the notes holding the whole words first, ranked (up to
        // `mostRanked` of them: ranking reads every match), then those holding the terms
        // only as word starts or inside words, most recently changed first.
        let wanted = query.clauses.filter { !$0.excluded }
        let enough = request.offset + request.fetched
        var rows: [PostgresRow] = []
        if wanted.isEmpty {
            rows = try await Self.leading(sql, statement, conditions, rank: nil, enough)
        } else {
            var whole = statement
            var wholeConditions = conditions
            for clause in wanted { wholeConditions.append(try await Self.condition(sql, clause, reach: .wholeWords, &whole)) }
            var counting = whole
            counting.text = """
                SELECT COUNT(*) FROM (SELECT 1 FROM search_docs d JOIN records r ON r.owner = d.owner AND r.zone = d.zone AND r.record_name = d.record_name
                WHERE \(wholeConditions.joined(separator: " AND ")) LIMIT \(SearchRules.mostRanked + 1)) m
                """
            var rank: String?
            if try await sql.value(counting.query, as: Int.self) ?? 0 <= SearchRules.mostRanked {
                var words: [String] = []
                for term in wanted.flatMap(\.alternatives) { words.append(try await Self.tsquery(sql, term, reach: .wholeWords)) }
                let all = whole.bind(words.map { "(\($0))" }.joined(separator: " | "))
                rank = "ts_rank_cd(d.words, \(all)::tsquery) + 4 * ts_rank_cd(d.title_words, \(all)::tsquery) DESC"
            }
            rows = try await Self.leading(sql, whole, wholeConditions, rank: rank, enough)
            if rows.count < enough, SearchRules.reachesFurther(wanted) {
                var rest = statement
                var restConditions = conditions
                var holding: [String] = []
                for clause in wanted {
                    restConditions.append(try await Self.condition(sql, clause, reach: .all, &rest))
                    holding.append(try await Self.condition(sql, clause, reach: .wholeWords, &rest))
                }
                restConditions.append("NOT (" + holding.joined(separator: " AND ") + ")")
                rows += try await Self.leading(sql, rest, restConditions, rank: nil, enough - rows.count)
            }
        }
        var hits: [API.SearchHit] = []
        for row in rows.dropFirst(request.offset).prefix(request.fetched) {
            let (owner, zoneName, recordName, shareID, modifiedAt, modifiedBy) = try row.decode((String, String, String, String?, Double, String).self)
            let zone = ZoneID(owner: owner, name: zoneName)
            // Only the start of a note is shown (`SearchSnippet.scannedBytes`).
            let note = try await sql.row(
                """
                SELECT name, substring(\(unescaped: PostgresRecords.body("records")) FROM 1 FOR \(Int32(SearchSnippet.scannedBytes)))
                FROM records WHERE owner = \(owner) AND zone = \(zoneName) AND record_name = \(recordName)
                """
            ).map { try $0.decode((String, Data?).self) }
            let shown = SearchRules.shown(name: note?.0 ?? recordName, body: note?.1.map { String(decoding: $0, as: UTF8.self) } ?? "", query)
            let root = owner == actor ? nil : shareID.flatMap { readable[$0] ?? nil }
            let zoneWide = shareID.map { readable[$0] == .some(nil) } ?? false
            hits.append(
                API.SearchHit(
                    zone: zone, recordName: recordName, shareID: owner == actor ? nil : shareID,
                    path: SearchRules.mountPath(zone: zone, actor: actor, zoneWide: zoneWide, names: try await names(of: recordName, in: zone, upTo: root)),
                    title: shown.title, modifiedBy: modifiedBy, modifiedAt: Date(stored: modifiedAt), snippet: shown.snippet))
        }
        return hits
    }

    /// The first `count` notes passing `conditions`, by `rank` when given, then the most
    /// recently changed first.
    static func leading(_ sql: SQL, _ statement: BoundQuery, _ conditions: [String], rank: String?, _ count: Int) async throws -> [PostgresRow] {
        var statement = statement
        statement.text = """
            SELECT d.owner, d.zone, d.record_name, r.share_id, r.modified_at, r.modified_by
            FROM search_docs d JOIN records r ON r.owner = d.owner AND r.zone = d.zone AND r.record_name = d.record_name
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY \(rank.map { $0 + ", " } ?? "")r.modified_at DESC, d.owner, d.zone, d.record_name
            LIMIT \(statement.bind(count))
            """
        return try await sql.rows(statement.query)
    }

    /// A clause as a condition on a note's words: one of its terms, each in the title
    /// (`title:`) or anywhere.
    static func condition(_ sql: SQL, _ clause: SearchQuery.Clause, reach: SearchRules.Reach, _ statement: inout BoundQuery) async throws -> String {
        var alternatives: [String] = []
        for term in clause.alternatives {
            let bound = statement.bind(try await tsquery(sql, term, reach: reach))
            alternatives.append(
                term.field == .title ? "d.title_words @@ \(bound)::tsquery" : "(d.title_words @@ \(bound)::tsquery OR d.words @@ \(bound)::tsquery)")
        }
        return "(" + alternatives.joined(separator: " OR ") + ")"
    }

    /// The names from the zone's root (or the share's root record `root`) down to the
    /// record, its own last, in one statement.
    func names(of recordName: String, in zone: ZoneID, upTo root: String?) async throws -> [String] {
        try await sql.column(
            """
            WITH RECURSIVE up(record_name, name, parent, depth) AS (
                SELECT record_name, name, parent, 0 FROM records
                WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(recordName)
                UNION ALL
                SELECT r.record_name, r.name, r.parent, u.depth + 1 FROM records r JOIN up u
                    ON r.owner = \(zone.owner) AND r.zone = \(zone.name) AND r.record_name = u.parent
                WHERE u.record_name <> \(root ?? "") AND u.parent <> '' AND u.depth < 10000
            )
            SELECT name FROM up ORDER BY depth DESC
            """, as: String.self)
    }

    /// A term as a `tsquery` (its words are `SearchWords`, so they need no parsing). With
    /// `reach` `.all`, a search inside words becomes the words that start with the
    /// letters or hold them (`SearchRules.mostInfixWords` of those, from the
    /// vocabulary); with `.wholeWords`, every term is its words as typed.
    static func tsquery(_ sql: SQL, _ term: SearchQuery.Term, reach: SearchRules.Reach) async throws -> String {
        func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "''").replacingOccurrences(of: "\\", with: "\\\\") + "'" }
        switch (term.match, reach) {
        case (.word(let word), _), (.prefix(let word), .wholeWords), (.infix(let word), .wholeWords):
            return quoted(word)
        case (.phrase(let words), .wholeWords):
            return words.map(quoted).joined(separator: " <-> ")
        case (.prefix(let word), .all):
            return quoted(word) + ":*"
        case (.phrase(let words), .all):
            return words.enumerated().map { index, word in quoted(word) + (index == words.count - 1 ? ":*" : "") }.joined(separator: " <-> ")
        case (.infix(let word), .all):
            let holding = try await sql.column(
                """
                SELECT word FROM search_vocabulary WHERE word LIKE \("%" + escapedForLike(word) + "%") ORDER BY word COLLATE "C" LIMIT \(SearchRules.mostInfixWords)
                """, as: String.self)
            return "(" + ([quoted(word) + ":*"] + holding.map(quoted)).joined(separator: " | ") + ")"
        }
    }

    /// `%`, `_` and `\\` taken literally by `LIKE`.
    static func escapedForLike(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }
}

/// `in:` paths resolved on the store's tables, a short read each.
private struct PostgresFolderLookup: SearchFolderLookup {
    let store: PostgresStore
    let actor: String

    func child(named name: String, of parent: String?, in zone: ZoneID) async throws(NotesError) -> String? {
        try await store.readOne { sql in
            try await sql.value(
                "SELECT record_name FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND parent = \(parent ?? "") AND name = \(name)",
                as: String.self)
        }
    }

    func ownsZone(_ zone: ZoneID) async throws(NotesError) -> Bool {
        try await store.readOne { sql in try await sql.exists("SELECT 1 FROM zones WHERE owner = \(zone.owner) AND name = \(zone.name)") }
    }

    func readableShares(of owner: String) async throws(NotesError) -> [(zone: String, root: (recordName: String, name: String)?)] {
        let actor = actor
        let found: [(String, String?, String?)] = try await store.read { sql in
            let readable = Array(try await PostgresStore.readableShares(sql, actor: actor).keys)
            return try await sql.rows(
                """
                SELECT s.zone, s.root_record, r.name FROM shares s
                LEFT JOIN records r ON r.owner = s.owner AND r.zone = s.zone AND r.record_name = s.root_record
                WHERE s.owner = \(owner) AND NOT s.stopped AND s.id = ANY(\(readable)::text[])
                """
            ).map { try $0.decode((String, String?, String?).self) }
        }
        return found.map { zone, root, name in (zone: zone, root: root.map { (recordName: $0, name: name ?? "") }) }
    }

    func below(_ recordName: String, in zone: ZoneID) async throws(NotesError) -> [String] {
        try await store.read { sql in try await PostgresRecords.descendants(sql, of: recordName, in: zone) }
    }
}

/// The search index's storage on PostgreSQL: `search_pending` and `search_docs`, in the
/// store's database, written in transactions of their own. Several instances may take
/// in the same note at once: a document is replaced only by one made from a later
/// write (`pending_id`), and a pending row is deleted only if no write came since.
final class PostgresSearchIndex: SearchIndexStorage {
    /// The store, held weakly: it holds this index's indexer.
    private let store = Mutex<WeakStore>(WeakStore())

    private struct WeakStore {
        weak var value: PostgresStore?
    }

    var isClosed: Bool { store.withLock { $0.value == nil } }

    func attach(_ store: PostgresStore) {
        self.store.withLock { $0.value = store }
    }

    private func current() throws(NotesError) -> PostgresStore {
        guard let store = store.withLock({ $0.value }) else { throw NotesError(.serviceUnavailable, "The store has closed.") }
        return store
    }

    func pending(limit: Int, bytes: Int) async throws(NotesError) -> [PendingNote] {
        try await current().read { sql in
            let owners = try await sql.column("SELECT owner FROM search_pending GROUP BY owner", as: String.self)
            guard !owners.isEmpty else { return [] }
            let each = max(1, limit / owners.count)
            var notes: [PendingNote] = []
            var taken = 0
            for owner in owners.shuffled() {
                let rows = try await sql.rows(
                    """
                    SELECT p.id, p.zone, p.record_name, r.record_type, r.name, \(unescaped: PostgresRecords.body("r"))
                    FROM search_pending p LEFT JOIN records r ON r.owner = p.owner AND r.zone = p.zone AND r.record_name = p.record_name
                    WHERE p.owner = \(owner) ORDER BY p.id LIMIT \(each)
                    """)
                for row in rows {
                    let (id, zone, recordName, type, name, body) = try row.decode((Int64, String, String, String?, String?, Data?).self)
                    let text = type == RecordType.note.rawValue ? String(decoding: body ?? Data(), as: UTF8.self) : nil
                    notes.append(PendingNote(id: id, owner: owner, zone: zone, recordName: recordName, name: name ?? "", body: text))
                    taken += text?.utf8.count ?? 0
                    if taken >= bytes { return notes }
                }
            }
            return notes
        }
    }

    func takeIn(_ notes: [PendingNote], _ documents: [SearchDocument?], urgent: Bool) async throws(NotesError) {
        let kept = zip(notes, documents).compactMap { note, document in document.map { (note, $0) } }
        let gone = zip(notes, documents).filter { $0.1 == nil }.map(\.0)
        try await current().write { write in
            let sql = write.sql
            if !kept.isEmpty {
                try await sql.execute(
                    """
                    INSERT INTO search_docs AS d (owner, zone, record_name, pending_id, title_words, words)
                    SELECT t.owner, t.zone, t.record_name, t.pending_id, to_tsvector('simple', t.title_words), to_tsvector('simple', t.words)
                    FROM unnest(\(kept.map(\.0.owner))::text[], \(kept.map(\.0.zone))::text[], \(kept.map(\.0.recordName))::text[],
                        \(kept.map(\.0.id))::int8[], \(kept.map(\.1.titleWords))::text[], \(kept.map(\.1.words))::text[])
                        AS t(owner, zone, record_name, pending_id, title_words, words)
                    ON CONFLICT (owner, zone, record_name) DO UPDATE
                        SET pending_id = EXCLUDED.pending_id, title_words = EXCLUDED.title_words, words = EXCLUDED.words
                        WHERE d.pending_id < EXCLUDED.pending_id
                    """)
                let vocabulary = Array(Set(kept.flatMap(\.1.vocabulary))).sorted()
                try await sql.execute("INSERT INTO search_vocabulary (word) SELECT unnest(\(vocabulary)::text[]) ON CONFLICT DO NOTHING")
            }
            if !gone.isEmpty {
                try await sql.execute(
                    """
                    DELETE FROM search_docs d USING unnest(\(gone.map(\.owner))::text[], \(gone.map(\.zone))::text[], \(gone.map(\.recordName))::text[],
                        \(gone.map(\.id))::int8[]) AS t(owner, zone, record_name, pending_id)
                    WHERE d.owner = t.owner AND d.zone = t.zone AND d.record_name = t.record_name AND d.pending_id < t.pending_id
                    """)
            }
            try await sql.execute(
                """
                DELETE FROM search_pending p USING unnest(\(notes.map(\.owner))::text[], \(notes.map(\.zone))::text[], \(notes.map(\.recordName))::text[],
                    \(notes.map(\.id))::int8[]) AS t(owner, zone, record_name, id)
                WHERE p.owner = t.owner AND p.zone = t.zone AND p.record_name = t.record_name AND p.id = t.id
                """)
        }
    }

    func waitingMark(for actor: String) async throws(NotesError) -> [String: Int64]? {
        let rows: [(String, Int64)] = try await current().readOne { sql in
            try await sql.rows(
                """
                SELECT owner, MAX(id) FROM search_pending
                WHERE owner = \(actor) OR owner IN (
                    SELECT s.owner FROM participants p JOIN shares s ON s.id = p.share_id
                    WHERE p.account = \(actor) AND p.status = 'accepted' AND NOT s.stopped)
                GROUP BY owner
                """
            ).map { try $0.decode((String, Int64).self) }
        }
        return rows.isEmpty ? nil : Dictionary(rows, uniquingKeysWith: max)
    }

    func isTakenIn(_ mark: [String: Int64]) async throws(NotesError) -> Bool {
        let owners = Array(mark.keys)
        let ids = owners.map { mark[$0] ?? 0 }
        return try await !current().readOne { sql in
            try await sql.exists(
                """
                SELECT 1 FROM search_pending p JOIN unnest(\(owners)::text[], \(ids)::int8[]) AS m(owner, id)
                    ON p.owner = m.owner AND p.id <= m.id
                LIMIT 1
                """)
        }
    }

    func cleanUp() async throws(NotesError) {}

    func waitingCount() async throws(NotesError) -> Int {
        try await current().readOne { sql in try await sql.value("SELECT COUNT(*) FROM search_pending", as: Int.self) ?? 0 }
    }
}
