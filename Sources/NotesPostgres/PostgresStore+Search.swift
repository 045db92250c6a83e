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
        let hits = try await read { sql in
            // Planned for the words searched: a generic plan (which the connections
            // use, for saves) cannot tell a rare word from one in every note, and
            // walked every record of the account checking each note's words.
            try await sql.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            return try await PostgresSearchPage(sql: sql, request: parsed, actor: actor).hits(in: scope)
        }
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
        let zones = try await PostgresRecords.sharedZoneIDs(sql, actor: actor)
        let readable = try await PostgresStore.readableShares(sql, actor: actor)
        let query = request.query
        // What a note's record must pass (rights, filters), on `records r`.
        var statement = BoundQuery()
        var conditions = [
            "r.record_type = 'note'",
            "(r.owner = \(statement.bind(actor)) OR r.share_id = ANY(\(statement.bind(Array(readable.keys)))::text[]))",
            PostgresStore.shownRecord,
        ]
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
        let wanted = query.clauses.filter { !$0.excluded }
        let enough = request.offset + request.fetched
        var rows: [Row] = []
        if wanted.isEmpty {
            for clause in query.clauses where clause.excluded {
                conditions.append("NOT " + (try await Self.condition(sql, clause, reach: .all, &statement)))
            }
            rows = try await Self.newest(sql, statement, conditions, enough)
        } else {
            // The notes' words, on `search_docs d`: the owners the caller reads notes of
            // first (so that the index answers for them alone), then the words.
            let owners = Array(Set([actor] + zones.map(\.owner)))
            func words(_ reach: SearchRules.Reach, _ statement: inout BoundQuery) async throws -> [String] {
                var words = ["d.owner = ANY(\(statement.bind(owners))::text[])"]
                for clause in wanted { words.append(try await Self.condition(sql, clause, reach: reach, &statement)) }
                return words
            }
            // Excluded words are checked only on notes that hold the others: a note is
            // tested against every word an exclusion names, and read from the table.
            func excluded(_ statement: inout BoundQuery) async throws -> [String] {
                var excluded: [String] = []
                for clause in query.clauses where clause.excluded {
                    excluded.append("NOT " + (try await Self.condition(sql, clause, reach: .all, &statement)))
                }
                return excluded
            }
            // `SearchRules.Reach`: the notes holding the whole words first, ranked when
            // there are few enough, then those holding the terms only as word starts or
            // inside words, most recently indexed first.
            var counting = BoundQuery()
            let wholeWords = try await words(.wholeWords, &counting)
            counting.text = "SELECT COUNT(*) FROM (SELECT 1 FROM search_docs d WHERE \(wholeWords.joined(separator: " AND ")) LIMIT \(Self.mostRanked + 1)) m"
            if try await sql.value(counting.query, as: Int.self) ?? 0 <= Self.mostRanked {
                rows = try await best(statement, conditions, wanted, enough) { statement in
                    try await words(.wholeWords, &statement) + (try await excluded(&statement))
                }
            } else {
                var whole = statement
                let matching = try await words(.wholeWords, &whole)
                let unwanted = try await excluded(&whole)
                rows = try await Self.newest(sql, whole, conditions + unwanted, matching: matching, enough)
            }
            if rows.count < enough, SearchRules.reachesFurther(wanted) {
                var rest = statement
                var matching = try await words(.all, &rest)
                var holding: [String] = []
                for clause in wanted { holding.append(try await Self.condition(sql, clause, reach: .wholeWords, &rest)) }
                matching.append("NOT (" + holding.joined(separator: " AND ") + ")")
                let unwanted = try await excluded(&rest)
                rows += try await Self.newest(sql, rest, conditions + unwanted, matching: matching, enough - rows.count)
            }
        }
        // The page's texts and paths in two statements, not two a result: a round trip
        // costs more than either read.
        let page = Array(rows.dropFirst(request.offset).prefix(request.fetched))
        let roots = page.map { row in row.owner == actor ? "" : (row.shareID.flatMap { readable[$0] ?? nil } ?? "") }
        let texts = try await self.texts(of: page)
        let paths = try await names(of: page, upTo: roots)
        return page.enumerated().map { index, row in
            let zone = ZoneID(owner: row.owner, name: row.zone)
            let text = texts["\(row.owner)\u{0}\(row.zone)\u{0}\(row.recordName)"]
            let shown = SearchRules.shown(name: text?.name ?? row.recordName, body: text?.body ?? "", query)
            let zoneWide = row.shareID.map { readable[$0] == .some(nil) } ?? false
            return API.SearchHit(
                zone: zone, recordName: row.recordName, shareID: row.owner == actor ? nil : row.shareID,
                path: SearchRules.mountPath(zone: zone, actor: actor, zoneWide: zoneWide, names: paths[index] ?? [row.recordName]),
                title: shown.title, modifiedBy: row.modifiedBy, modifiedAt: Date(stored: row.modifiedAt), snippet: shown.snippet)
        }
    }

    /// The names and first `SearchSnippet.scannedBytes` of the notes of `rows`, by
    /// owner, zone and record name joined with NUL.
    func texts(of rows: [Row]) async throws -> [String: (name: String, body: String)] {
        guard !rows.isEmpty else { return [:] }
        var texts: [String: (name: String, body: String)] = [:]
        for row in try await sql.rows(
            """
            SELECT r.owner, r.zone, r.record_name, r.name, substring(\(unescaped: PostgresRecords.body("r")) FROM 1 FOR \(Int32(SearchSnippet.scannedBytes)))
            FROM records r JOIN unnest(\(rows.map(\.owner))::text[], \(rows.map(\.zone))::text[], \(rows.map(\.recordName))::text[]) AS h(owner, zone, record_name)
                ON r.owner = h.owner AND r.zone = h.zone AND r.record_name = h.record_name
            """)
        {
            let (owner, zone, recordName, name, body) = try row.decode((String, String, String, String, Data?).self)
            texts["\(owner)\u{0}\(zone)\u{0}\(recordName)"] = (name, body.map { String(decoding: $0, as: UTF8.self) } ?? "")
        }
        return texts
    }

    /// For each of `rows`, the names from its zone's root (or its share's root record,
    /// from `roots`; empty for none) down to the note, the note's own last.
    func names(of rows: [Row], upTo roots: [String]) async throws -> [Int: [String]] {
        guard !rows.isEmpty else { return [:] }
        var names: [Int: [String]] = [:]
        for row in try await sql.rows(
            """
            WITH RECURSIVE up(hit, owner, zone, record_name, name, parent, depth, root) AS (
                SELECT h.hit, r.owner, r.zone, r.record_name, r.name, r.parent, 0, h.root
                FROM unnest(\(rows.map(\.owner))::text[], \(rows.map(\.zone))::text[], \(rows.map(\.recordName))::text[], \(roots)::text[])
                    WITH ORDINALITY AS h(owner, zone, record_name, root, hit)
                JOIN records r ON r.owner = h.owner AND r.zone = h.zone AND r.record_name = h.record_name
                UNION ALL
                SELECT u.hit, r.owner, r.zone, r.record_name, r.name, r.parent, u.depth + 1, u.root FROM records r JOIN up u
                    ON r.owner = u.owner AND r.zone = u.zone AND r.record_name = u.parent
                WHERE u.record_name <> u.root AND u.parent <> '' AND u.depth < 10000
            )
            SELECT hit, name FROM up ORDER BY hit, depth DESC
            """)
        {
            let (hit, name) = try row.decode((Int, String).self)
            names[hit - 1, default: []].append(name)
        }
        return names
    }

    /// A found note: its keys, and what its record says of it.
    struct Row {
        var owner: String
        var zone: String
        var recordName: String
        var shareID: String?
        var modifiedAt: Double
        var modifiedBy: String
    }

    /// Whole-word matches past this many are listed newest first rather than ranked:
    /// PostgreSQL reads each match's `tsvector` from the table to rank it (about 10 ms
    /// for 1,000 notes of 1 KiB), where SQLite's index ranks 5,000 in that time.
    static let mostRanked = 1_000

    /// The first `count` notes passing `conditions` (on `records r`), most recently
    /// changed first: a listing without words.
    static func newest(_ sql: SQL, _ statement: BoundQuery, _ conditions: [String], _ count: Int) async throws -> [Row] {
        var statement = statement
        statement.text = """
            SELECT d.owner, d.zone, d.record_name, r.share_id, r.modified_at, r.modified_by
            FROM search_docs d JOIN records r ON r.owner = d.owner AND r.zone = d.zone AND r.record_name = d.record_name
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY r.modified_at DESC, d.owner, d.zone, d.record_name
            LIMIT \(statement.bind(count))
            """
        return try await sql.rows(statement.query).map { row in
            let (owner, zone, recordName, shareID, modifiedAt, modifiedBy) = try row.decode((String, String, String, String?, Double, String).self)
            return Row(owner: owner, zone: zone, recordName: recordName, shareID: shareID, modifiedAt: modifiedAt, modifiedBy: modifiedBy)
        }
    }

    /// The first `count` notes matching the words `matching` (on `search_docs d`) that
    /// pass `conditions` (on `records r`, and on `d` for excluded words), most recently
    /// indexed first (`pending_id`, which an index orders): read from the index a run
    /// at a time, newest first, and only each run's notes checked, so that for a word
    /// in most notes the newest few are read, not every match.
    static func newest(_ sql: SQL, _ statement: BoundQuery, _ conditions: [String], matching: [String], _ count: Int) async throws -> [Row] {
        var found: [Row] = []
        var below = Int64.max
        var run = max(64, count * 2)
        while found.count < count {
            var statement = statement
            statement.text = """
                WITH c AS MATERIALIZED (
                    SELECT d.owner, d.zone, d.record_name, d.pending_id, d.title_words, d.words FROM search_docs d
                    WHERE \(matching.joined(separator: " AND ")) AND d.pending_id < \(statement.bind(below))
                    ORDER BY d.pending_id DESC LIMIT \(statement.bind(run)))
                SELECT d.pending_id, COALESCE(r.owner IS NOT NULL AND \(conditions.joined(separator: " AND ")), false),
                    d.owner, d.zone, d.record_name, r.share_id, r.modified_at, r.modified_by
                FROM c d LEFT JOIN records r ON r.owner = d.owner AND r.zone = d.zone AND r.record_name = d.record_name
                ORDER BY d.pending_id DESC
                """
            let rows = try await sql.rows(statement.query)
            guard !rows.isEmpty else { break }
            for row in rows {
                let (pendingID, passes, owner, zone, recordName, shareID, modifiedAt, modifiedBy) = try row.decode(
                    (Int64, Bool, String, String, String, String?, Double?, String?).self)
                below = pendingID
                if passes, let modifiedAt, let modifiedBy {
                    found.append(Row(owner: owner, zone: zone, recordName: recordName, shareID: shareID, modifiedAt: modifiedAt, modifiedBy: modifiedBy))
                }
            }
            run = min(run * 4, 16_384)
        }
        return Array(found.prefix(count))
    }

    /// The first `count` notes holding the whole words, best ranked first: the index
    /// ranks its matches alone (`ts_rank`, the title four times the text), and only
    /// the best few are looked up in `records`, more when too few of them pass.
    func best(
        _ statement: BoundQuery, _ conditions: [String], _ wanted: [SearchQuery.Clause], _ count: Int,
        words: (inout BoundQuery) async throws -> [String]
    ) async throws -> [Row] {
        var terms: [String] = []
        for term in wanted.flatMap(\.alternatives) { terms.append(try await Self.tsquery(sql, term, reach: .wholeWords)) }
        var limit = max(64, count * 4)
        while true {
            var ranking = BoundQuery()
            let matching = try await words(&ranking)
            let all = ranking.bind(terms.map { "(\($0))" }.joined(separator: " | "))
            ranking.text = """
                SELECT d.owner, d.zone, d.record_name, ts_rank(d.words, \(all)::tsquery) + 4 * ts_rank(d.title_words, \(all)::tsquery) AS score
                FROM search_docs d WHERE \(matching.joined(separator: " AND ")) ORDER BY score DESC LIMIT \(ranking.bind(limit))
                """
            let candidates = try await sql.rows(ranking.query).map { try $0.decode((String, String, String, Double).self) }
            var scores: [String: Double] = [:]
            for candidate in candidates { scores["\(candidate.0)\u{0}\(candidate.1)\u{0}\(candidate.2)"] = candidate.3 }
            var passing = statement
            passing.text = """
                SELECT r.owner, r.zone, r.record_name, r.share_id, r.modified_at, r.modified_by
                FROM records r JOIN unnest(\(passing.bind(candidates.map(\.0)))::text[], \(passing.bind(candidates.map(\.1)))::text[],
                    \(passing.bind(candidates.map(\.2)))::text[]) AS c(owner, zone, record_name)
                    ON r.owner = c.owner AND r.zone = c.zone AND r.record_name = c.record_name
                WHERE \(conditions.joined(separator: " AND "))
                """
            let found = try await sql.rows(passing.query).map { row in
                let (owner, zone, recordName, shareID, modifiedAt, modifiedBy) = try row.decode((String, String, String, String?, Double, String).self)
                return Row(owner: owner, zone: zone, recordName: recordName, shareID: shareID, modifiedAt: modifiedAt, modifiedBy: modifiedBy)
            }
            if found.count >= count || candidates.count < limit {
                func score(_ row: Row) -> Double { scores["\(row.owner)\u{0}\(row.zone)\u{0}\(row.recordName)"] ?? 0 }
                return Array(
                    found.sorted { left, right in
                        let (a, b) = (score(left), score(right))
                        if a != b { return a > b }
                        if left.modifiedAt != right.modifiedAt { return left.modifiedAt > right.modifiedAt }
                        return (left.owner, left.zone, left.recordName) < (right.owner, right.zone, right.recordName)
                    }.prefix(count))
            }
            limit *= 8
        }
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
    /// Notes this instance took in since it last tidied the index, and since it last
    /// had the search's tables analyzed.
    private let sinceTidied = Mutex((tidy: 0, analyze: 0))
    /// Notes taken in past which the tables' statistics are renewed (`tidy`).
    static let analyzedEvery = 10_000

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
        sinceTidied.withLock { counts in
            counts.tidy += notes.count
            counts.analyze += notes.count
        }
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

    /// Once notes were taken in: the GIN indexes' pending lists merged into the index
    /// (GIN adds rows to an unsorted list that every search reads through until it is;
    /// 4 ms of a rare word's 6 after a load), and, after many notes, the statistics of
    /// `search_docs` and `records` renewed. A search joins the two, and with the
    /// statistics from before a bulk import (autovacuum renews them a minute or more
    /// later) the planner walked every record of an account checking each note's words
    /// (0.4 s instead of 10 ms).
    func tidy() async throws(NotesError) -> Bool {
        let (tidy, analyze) = sinceTidied.withLock { counts in
            defer {
                counts.tidy = 0
                if counts.analyze >= Self.analyzedEvery { counts.analyze = 0 }
            }
            return (counts.tidy > 0, counts.analyze >= Self.analyzedEvery)
        }
        guard tidy else { return false }
        try await current().readOne { sql in
            try await sql.execute(
                """
                SELECT gin_clean_pending_list('search_docs_words'::regclass), gin_clean_pending_list('search_docs_title_words'::regclass),
                    gin_clean_pending_list('search_vocabulary_trigrams'::regclass)
                """)
            if analyze {
                // Two instances analyzing a table at once may fail one of them; the
                // statistics are renewed all the same.
                try? await sql.execute("ANALYZE search_docs")
                try? await sql.execute("ANALYZE records")
            }
        }
        return false
    }

    func waitingCount() async throws(NotesError) -> Int {
        try await current().readOne { sql in try await sql.value("SELECT COUNT(*) FROM search_pending", as: Int.self) ?? 0 }
    }
}
