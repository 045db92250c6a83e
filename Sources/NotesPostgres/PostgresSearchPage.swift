import Foundation
import NotesModel
import NotesSearch
import NotesStoreRules
import NotesText
import PostgresNIO

/// A query whose text is assembled with its values bound as `$1`, `$2`, ….
struct BoundQuery {
    var text = ""
    var bindings = PostgresBindings()

    mutating func bind(_ value: some PostgresNonThrowingEncodable & Sendable) -> String {
        bindings.append(value)
        return "$\(bindings.count)"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: bindings) }
}

/// One page of a search, in one snapshot.
struct PostgresSearchPage {
    let sql: SQL
    let request: SearchRules.Request
    let actor: String

    func hits(in folder: SearchFolder?) async throws -> [API.SearchHit] {
        let zones = try await PostgresRecords.sharedZoneIDs(sql, actor: actor)
        let readable = try await PostgresStore.readableShares(sql, actor: actor, in: zones)
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
        let unwanted = query.clauses.filter(\.excluded)
        let enough = request.offset + request.fetched
        var rows: [Row] = []
        if wanted.isEmpty {
            for clause in unwanted {
                var alternatives: [String] = []
                for term in clause.alternatives {
                    let words = try await PostgresSearchWords.tsquery(sql, term, reach: .all).text
                    alternatives.append("\(term.field == .title ? "d.title_words" : "d.words") @@ \(statement.bind(words))::tsquery")
                }
                conditions.append("NOT (" + alternatives.joined(separator: " OR ") + ")")
            }
            rows = try await Self.newest(sql, statement, conditions, enough)
        } else {
            // The notes' words, on `search_docs d`: the owners the caller reads notes of
            // first (so that the index answers for them alone), then the words.
            let words = PostgresSearchWords(sql: sql, owners: Array(Set([actor] + zones.map(\.owner))))
            // `SearchRules.Reach`: the notes holding the whole words first, ranked when
            // there are few enough, then those holding the terms only as word starts or
            // inside words, most recently indexed first.
            if let ranked = try await best(
                statement, conditions, wanted, enough,
                matching: { statement in
                    try await words.matching(wanted, reach: .wholeWords, excluding: unwanted, &statement)
                })
            {
                rows = ranked
            } else {
                var walking = statement
                let matching = try await words.matching(wanted, reach: .wholeWords, excluding: unwanted, &walking)
                rows = try await Self.newest(sql, walking, conditions, matching: matching, enough)
            }
            if rows.count < enough, SearchRules.reachesFurther(wanted) {
                var rest = statement
                let matching = try await words.matching(wanted, reach: .all, notAll: wanted, excluding: unwanted, &rest)
                rows += try await Self.newest(sql, rest, conditions, matching: matching, enough - rows.count)
            }
        }
        // The page's texts and paths in one statement, not two a result: a round trip
        // costs more than either read.
        let page = Array(rows.dropFirst(request.offset).prefix(request.fetched))
        let roots = page.map { row in row.owner == actor ? "" : (row.shareID.flatMap { readable[$0] ?? nil } ?? "") }
        let (paths, texts) = try await namesAndTexts(of: page, upTo: roots)
        return page.enumerated().map { index, row in
            let zone = ZoneID(owner: row.owner, name: row.zone)
            let text = texts[index]
            let shown = SearchRules.shown(name: text?.name ?? row.recordName, body: text?.body ?? "", query)
            let zoneWide = row.shareID.map { readable[$0] == .some(nil) } ?? false
            return API.SearchHit(
                zone: zone, recordName: row.recordName, shareID: row.owner == actor ? nil : row.shareID,
                path: SearchRules.mountPath(zone: zone, actor: actor, zoneWide: zoneWide, names: paths[index] ?? [row.recordName]),
                title: shown.title, modifiedBy: row.modifiedBy, modifiedAt: Date(stored: row.modifiedAt), snippet: shown.snippet)
        }
    }

    /// For each of `rows` (by its place in `rows`): the names from its zone's root (or
    /// its share's root record, from `roots`; empty for none) down to the note, the
    /// note's own last; and the note's name and first `SearchSnippet.scannedBytes`.
    func namesAndTexts(of rows: [Row], upTo roots: [String]) async throws -> ([Int: [String]], [Int: (name: String, body: String)]) {
        guard !rows.isEmpty else { return ([:], [:]) }
        var names: [Int: [String]] = [:]
        var texts: [Int: (name: String, body: String)] = [:]
        for row in try await sql.rows(
            """
            WITH RECURSIVE up(hit, owner, zone, record_name, name, parent, depth, root, text) AS (
                SELECT h.hit, r.owner, r.zone, r.record_name, r.name, r.parent, 0, h.root,
                    substring(\(unescaped: PostgresRecords.body("r")) FROM 1 FOR \(Int32(SearchSnippet.scannedBytes)))
                FROM unnest(\(rows.map(\.owner))::text[], \(rows.map(\.zone))::text[], \(rows.map(\.recordName))::text[], \(roots)::text[])
                    WITH ORDINALITY AS h(owner, zone, record_name, root, hit)
                JOIN records r ON r.owner = h.owner AND r.zone = h.zone AND r.record_name = h.record_name
                UNION ALL
                SELECT u.hit, r.owner, r.zone, r.record_name, r.name, r.parent, u.depth + 1, u.root, NULL::bytea FROM records r JOIN up u
                    ON r.owner = u.owner AND r.zone = u.zone AND r.record_name = u.parent
                WHERE u.record_name <> u.root AND u.parent <> '' AND u.depth < 10000
            )
            SELECT hit, name, depth, text FROM up ORDER BY hit, depth DESC
            """)
        {
            let (hit, name, depth, text) = try row.decode((Int, String, Int, Data?).self)
            names[hit - 1, default: []].append(name)
            if depth == 0 { texts[hit - 1] = (name, text.map { String(decoding: $0, as: UTF8.self) } ?? "") }
        }
        return (names, texts)
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

    /// The first `count` notes whose words are `matching` and that pass `conditions`
    /// (on `records r`), most recently indexed first (`pending_id`, which an index
    /// orders).
    ///
    /// Two ways, each bounded by what the other leaves: the newest notes are read in
    /// order and each checked until enough are found, within a window (narrower the
    /// more words the query names: checking a note against the hundreds of words
    /// holding some letters takes 14 µs, against one word 2 µs), which finds the
    /// matches of a word in most notes at once; when the window holds too few, the
    /// matches are few among all notes, and the words' index lists those older than
    /// the window, to be sorted. Reading in order until enough were found walked all
    /// 100,000 notes for a phrase that is in none.
    static func newest(_ sql: SQL, _ statement: BoundQuery, _ conditions: [String], matching: PostgresSearchWords.Matching, _ count: Int) async throws
        -> [Row]
    {
        var found: [Row] = []
        var below = Int64.max
        func take(_ rows: [PostgresRow]) throws {
            for row in rows {
                let (pendingID, passes, owner, zone, recordName, shareID, modifiedAt, modifiedBy) = try row.decode(
                    (Int64, Bool, String, String, String, String?, Double?, String?).self)
                below = pendingID
                if passes, let modifiedAt, let modifiedBy {
                    found.append(Row(owner: owner, zone: zone, recordName: recordName, shareID: shareID, modifiedAt: modifiedAt, modifiedBy: modifiedBy))
                }
            }
        }
        let passes = "COALESCE(r.owner IS NOT NULL AND \(conditions.joined(separator: " AND ")), false)"
        let window = min(2_048, max(256, 65_536 / max(1, matching.lexemes)))
        var walking = true
        var run = max(64, count * 2)
        while found.count < count {
            var statement = statement
            let limit = walking ? count - found.count : run
            if walking {
                // The window is read lazily: its rows stop coming once `limit` match.
                statement.text = """
                    SELECT d.pending_id, \(passes), d.owner, d.zone, d.record_name, r.share_id, r.modified_at, r.modified_by
                    FROM (SELECT d.owner, d.zone, d.record_name, d.pending_id, d.title_words, d.words FROM search_docs d
                        WHERE \(matching.owners) AND d.pending_id < \(statement.bind(below))
                        ORDER BY d.pending_id DESC LIMIT \(statement.bind(window))) d
                    LEFT JOIN records r ON r.owner = d.owner AND r.zone = d.zone AND r.record_name = d.record_name
                    WHERE \(matching.words.joined(separator: " AND "))
                    ORDER BY d.pending_id DESC LIMIT \(statement.bind(limit))
                    """
            } else {
                // `+ 0`: sorted from the words' index, not read in order from `pending_id`'s.
                statement.text = """
                    WITH c AS MATERIALIZED (
                        SELECT d.owner, d.zone, d.record_name, d.pending_id FROM search_docs d
                        WHERE \(matching.all) AND d.pending_id < \(statement.bind(below))
                        ORDER BY d.pending_id + 0 DESC LIMIT \(statement.bind(limit)))
                    SELECT d.pending_id, \(passes), d.owner, d.zone, d.record_name, r.share_id, r.modified_at, r.modified_by
                    FROM c d LEFT JOIN records r ON r.owner = d.owner AND r.zone = d.zone AND r.record_name = d.record_name
                    ORDER BY d.pending_id DESC
                    """
            }
            let rows = try await sql.rows(statement.query)
            try take(rows)
            if walking {
                // Fewer than asked: the window ran out, and every match in it was read.
                walking = rows.count == limit
            } else {
                guard rows.count == limit else { break }
                run = min(run * 4, 16_384)
            }
        }
        return Array(found.prefix(count))
    }

    /// The first `count` notes holding the whole words, best ranked first, or nil when
    /// more than `mostRanked` notes hold them. The matches are read once, counted and
    /// ranked in one statement (`ts_rank`, the title four times more; a phrase is
    /// checked in every note holding its words, which for two common words is most of
    /// the time the search takes), and only the best few are looked up in `records`,
    /// more when too few of them pass.
    func best(
        _ statement: BoundQuery, _ conditions: [String], _ wanted: [SearchQuery.Clause], _ count: Int,
        matching: (inout BoundQuery) async throws -> PostgresSearchWords.Matching
    ) async throws -> [Row]? {
        var terms: [String] = []
        for term in wanted.flatMap(\.alternatives) { terms.append(try await PostgresSearchWords.tsquery(sql, term, reach: .wholeWords).text) }
        var limit = max(64, count * 4)
        while true {
            var ranking = statement
            let words = try await matching(&ranking)
            let all = ranking.bind(terms.map { "(\($0))" }.joined(separator: " | "))
            ranking.text = """
                WITH m AS MATERIALIZED (
                    SELECT d.owner, d.zone, d.record_name, d.words, d.title_words FROM search_docs d WHERE \(words.all) LIMIT \(Self.mostRanked + 1)),
                n AS (SELECT COUNT(*) AS matched FROM m),
                c AS MATERIALIZED (
                    SELECT m.owner, m.zone, m.record_name, ts_rank(m.words, \(all)::tsquery) + 4 * ts_rank(m.title_words, \(all)::tsquery) AS score
                    FROM m WHERE (SELECT matched FROM n) <= \(Self.mostRanked) ORDER BY score DESC LIMIT \(ranking.bind(limit)))
                SELECT n.matched, (SELECT COUNT(*) FROM c), COALESCE(r.owner IS NOT NULL AND \(conditions.joined(separator: " AND ")), false),
                    c.owner, c.zone, c.record_name, c.score, r.share_id, r.modified_at, r.modified_by
                FROM n LEFT JOIN c ON true LEFT JOIN records r ON r.owner = c.owner AND r.zone = c.zone AND r.record_name = c.record_name
                """
            var candidates = 0
            var found: [(row: Row, score: Double)] = []
            for row in try await sql.rows(ranking.query) {
                let (matched, read, passes, owner, zone, recordName, score, shareID, modifiedAt, modifiedBy) = try row.decode(
                    (Int, Int, Bool, String?, String?, String?, Double?, String?, Double?, String?).self)
                guard matched <= Self.mostRanked else { return nil }
                candidates = read
                if passes, let owner, let zone, let recordName, let score, let modifiedAt, let modifiedBy {
                    let row = Row(owner: owner, zone: zone, recordName: recordName, shareID: shareID, modifiedAt: modifiedAt, modifiedBy: modifiedBy)
                    found.append((row, score))
                }
            }
            if found.count >= count || candidates < limit {
                return Array(
                    found.sorted { left, right in
                        if left.score != right.score { return left.score > right.score }
                        if left.row.modifiedAt != right.row.modifiedAt { return left.row.modifiedAt > right.row.modifiedAt }
                        return (left.row.owner, left.row.zone, left.row.recordName) < (right.row.owner, right.row.zone, right.row.recordName)
                    }.prefix(count).map(\.row))
            }
            limit *= 8
        }
    }
}

/// What a note's words must hold, as conditions on `search_docs d`.
///
/// `d.words` holds the title's words as well as the text's, so that the clauses that
/// look anywhere in a note, and the words it must not hold, fold into one `tsquery` on
/// it: one scan of its index answers them exactly (a note holding an excluded word is
/// left out by the index, not read to be checked, which for a word in most notes was
/// nearly every note), and the planner estimates the whole, not each part. Clauses
/// naming the title are conditions of their own on `d.title_words`.
struct PostgresSearchWords {
    let sql: SQL
    /// The accounts whose notes the caller may find.
    let owners: [String]

    /// Conditions on `search_docs d`.
    struct Matching {
        /// The owners' notes.
        var owners: String
        /// The words.
        var words: [String]
        /// The words the query names, counting those holding some letters: what checking
        /// one note against it costs.
        var lexemes: Int

        var all: String { ([owners] + words).joined(separator: " AND ") }
    }

    /// Notes holding `wanted`'s terms (each clause one of its alternatives) as far as
    /// `reach`; with `notAll`, not holding all of those clauses as whole words; holding
    /// none of `unwanted`'s terms.
    func matching(
        _ wanted: [SearchQuery.Clause], reach: SearchRules.Reach, notAll whole: [SearchQuery.Clause] = [], excluding unwanted: [SearchQuery.Clause],
        _ statement: inout BoundQuery
    ) async throws -> Matching {
        var folded = try await parts(wanted, reach: reach, &statement)
        if !whole.isEmpty {
            let holding = try await parts(whole, reach: .wholeWords, &statement)
            if holding.apart.isEmpty {
                folded.everywhere.append("!(" + holding.everywhere.joined(separator: " & ") + ")")
            } else {
                let words = holding.everywhere.isEmpty ? [] : ["d.words @@ \(statement.bind(holding.everywhere.joined(separator: " & ")))::tsquery"]
                folded.apart.append("NOT (" + (words + holding.apart).joined(separator: " AND ") + ")")
            }
            folded.lexemes += holding.lexemes
        }
        for clause in unwanted {
            let excluded = try await parts([clause], reach: .all, &statement)
            folded.everywhere += excluded.everywhere.map { "!" + $0 }
            folded.apart += excluded.apart.map { "NOT " + $0 }
            folded.lexemes += excluded.lexemes
        }
        var words = folded.apart
        if !folded.everywhere.isEmpty {
            words.insert("d.words @@ \(statement.bind(folded.everywhere.joined(separator: " & ")))::tsquery", at: 0)
        }
        return Matching(owners: "d.owner = ANY(\(statement.bind(owners))::text[])", words: words, lexemes: folded.lexemes)
    }

    /// Clauses as `tsquery` parts on `d.words` (those looking anywhere) and conditions
    /// of their own (those with a term naming the title).
    private func parts(_ clauses: [SearchQuery.Clause], reach: SearchRules.Reach, _ statement: inout BoundQuery) async throws
        -> (everywhere: [String], apart: [String], lexemes: Int)
    {
        var everywhere: [String] = []
        var apart: [String] = []
        var lexemes = 0
        for clause in clauses {
            var alternatives: [(field: SearchQuery.Field, words: String)] = []
            for term in clause.alternatives {
                let words = try await Self.tsquery(sql, term, reach: reach)
                lexemes += words.lexemes
                alternatives.append((term.field, words.text))
            }
            if alternatives.allSatisfy({ $0.field == .anywhere }) {
                everywhere.append("(" + alternatives.map(\.words).joined(separator: " | ") + ")")
            } else {
                let conditions = alternatives.map { "\($0.field == .title ? "d.title_words" : "d.words") @@ \(statement.bind($0.words))::tsquery" }
                apart.append("(" + conditions.joined(separator: " OR ") + ")")
            }
        }
        return (everywhere, apart, lexemes)
    }

    /// A term as a `tsquery` (its words are `SearchWords`, so they need no parsing), and
    /// how many words it names. With `reach` `.all`, a search inside words becomes the
    /// words that start with the letters or hold them (`SearchRules.mostInfixWords` of
    /// those, from the vocabulary); with `.wholeWords`, every term is its words as typed.
    static func tsquery(_ sql: SQL, _ term: SearchQuery.Term, reach: SearchRules.Reach) async throws -> (text: String, lexemes: Int) {
        func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "''").replacingOccurrences(of: "\\", with: "\\\\") + "'" }
        switch (term.match, reach) {
        case (.word(let word), _), (.prefix(let word), .wholeWords), (.infix(let word), .wholeWords):
            return (quoted(word), 1)
        case (.phrase(let words), .wholeWords):
            return (words.map(quoted).joined(separator: " <-> "), words.count)
        case (.prefix(let word), .all):
            return (quoted(word) + ":*", 1)
        case (.phrase(let words), .all):
            return (words.enumerated().map { index, word in quoted(word) + (index == words.count - 1 ? ":*" : "") }.joined(separator: " <-> "), words.count)
        case (.infix(let word), .all):
            let holding = try await sql.column(
                """
                SELECT word FROM search_vocabulary WHERE word LIKE \("%" + escapedForLike(word) + "%") ORDER BY word COLLATE "C" LIMIT \(SearchRules.mostInfixWords)
                """, as: String.self)
            return ("(" + ([quoted(word) + ":*"] + holding.map(quoted)).joined(separator: " | ") + ")", 1 + holding.count)
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
