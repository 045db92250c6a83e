import Foundation
public import GRDB
import GRDBSQLite
public import NotesModel
public import NotesSearch
public import NotesText

/// The SQLite full-text index of notes, in a file of its own beside the file whose
/// notes it covers (notesd's store, a mount's replica), which is attached to it as the
/// source: what a hit shows (its title, who changed it, its place) is read from the
/// notes themselves, the index keeps only words.
///
/// - `docs`: one row per note, the words of its title and text (`SearchDocument`,
///   space-separated), and `docs_index`, an FTS5 index over them with positions
///   (phrases) and accents kept (`unicode61 remove_diacritics 0`); the default detail
///   level, since phrases need positions and a ranking by BM25 reads the columns.
/// - `vocabulary`: every word of three letters or more any note held, and
///   `vocabulary_index`, its FTS5 trigram index: a search inside words asks it for the
///   words holding the letters, then the main index for those words. Trigrams of the
///   distinct words, not of every note's text, keep the index near the text's size.
/// - `progress`: per key (an account), the last pending change taken in.
public enum SearchIndexFile {
    /// The schema of the index file; another number means rebuild.
    public static let schemaVersion: Int32 = 4
    /// Word starts up to this long have lists of their own (FTS5's `prefix` option):
    /// `plan*` is one list to read instead of the merge of every word it names (40 ms
    /// for one with 1,500 words). Each length costs about a third of the index again.
    static let indexedPrefixes = 2...4
    /// Segments of a level FTS5 lets gather before it merges them as notes are written
    /// (its default is 4): merging less often writes each word's list fewer times (a
    /// load of 100,000 notes took 7.7 s to write instead of 11.9); `tidy` merges them
    /// when the index is idle.
    static let automerge = 16

    /// What every connection to an index file sets: the index is derived data, so a
    /// commit need not wait for the disk (a crash keeps the file whole, and at worst
    /// loses the last notes taken in, which `progress` then asks for again).
    public static func configure(_ db: Database) throws {
        try db.execute(sql: "PRAGMA synchronous = NORMAL")
    }

    /// Runs `body` in a DEFERRED transaction of the index file. A pool's `write` opens
    /// IMMEDIATE ones, which take the write lock of every attached file too: the file the
    /// index covers (notesd's store, a mount's replica) would wait for each write of the
    /// index, and its own writes would stall the index's for a busy timeout. A deferred
    /// transaction locks only what it writes, the index file.
    public static func write<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            var result: T?
            try db.inTransaction(.deferred) {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    /// Makes the schema unless the file has this one; returns whether it did (and the
    /// index is empty: every note must be taken in again).
    public static func prepare(_ db: Database) throws -> Bool {
        let version = try Int32.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version != schemaVersion else { return false }
        try db.execute(
            sql: """
                DROP TABLE IF EXISTS docs_index;
                DROP TABLE IF EXISTS docs;
                DROP TABLE IF EXISTS vocabulary_index;
                DROP TABLE IF EXISTS vocabulary;
                DROP TABLE IF EXISTS progress;
                CREATE TABLE docs (
                    id INTEGER PRIMARY KEY,
                    owner TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    record_name TEXT NOT NULL,
                    title_words TEXT NOT NULL,
                    words TEXT NOT NULL,
                    UNIQUE (owner, zone, record_name)
                );
                CREATE VIRTUAL TABLE docs_index USING fts5(
                    title_words, words, tokenize = 'unicode61 remove_diacritics 0', content = 'docs', content_rowid = 'id',
                    prefix = '\(indexedPrefixes.map(String.init).joined(separator: " "))');
                INSERT INTO docs_index (docs_index, rank) VALUES ('automerge', \(automerge));
                \(deleteTrigger)
                CREATE TABLE vocabulary (id INTEGER PRIMARY KEY, word TEXT NOT NULL UNIQUE);
                CREATE VIRTUAL TABLE vocabulary_index USING fts5(word, tokenize = 'trigram', content = 'vocabulary', content_rowid = 'id');
                CREATE TABLE progress (owner TEXT PRIMARY KEY, indexed_through INTEGER NOT NULL);
                PRAGMA user_version = \(schemaVersion);
                """)
        return true
    }

    /// Keeps the index in step with a row of `docs` deleted.
    static let deleteTrigger = """
        CREATE TRIGGER docs_delete AFTER DELETE ON docs BEGIN
            INSERT INTO docs_index (docs_index, rowid, title_words, words) VALUES ('delete', OLD.id, OLD.title_words, OLD.words);
        END;
        """

    /// Empties the index, the whole of it at once ('delete-all'), not a note at a time.
    public static func empty(_ db: Database) throws {
        try db.execute(
            sql: """
                DROP TRIGGER docs_delete;
                DELETE FROM docs;
                INSERT INTO docs_index (docs_index) VALUES ('delete-all');
                DELETE FROM vocabulary;
                INSERT INTO vocabulary_index (vocabulary_index) VALUES ('delete-all');
                \(deleteTrigger)
                DELETE FROM progress;
                """)
    }

    /// Per key, the last pending change taken in.
    public static func progress(_ db: Database) throws -> [String: Int64] {
        let stored = try Row.fetchAll(db, sql: "SELECT owner, indexed_through FROM progress").map { ($0[0] as String, $0[1] as Int64) }
        return Dictionary(stored, uniquingKeysWith: max)
    }

    /// Keeps `documents` (nil: the note is gone) and the progress each key reached.
    ///
    /// The full-text tables are given the new rows in one statement each, after them:
    /// a trigger per row made the same writes take 1.8 times as long.
    public static func write(_ db: Database, _ notes: [PendingNote], _ documents: [SearchDocument?], reached: [String: Int64]) throws {
        for note in notes {
            try db.cachedStatement(sql: "DELETE FROM docs WHERE owner = ? AND zone = ? AND record_name = ?").execute(arguments: [
                note.owner, note.zone, note.recordName,
            ])
        }
        // New rows are numbered past the last one left.
        let firstDoc = (try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM docs") ?? 0) + 1
        for (note, document) in zip(notes, documents) {
            if let document {
                try db.cachedStatement(sql: "INSERT INTO docs (owner, zone, record_name, title_words, words) VALUES (?, ?, ?, ?, ?)").execute(
                    arguments: [note.owner, note.zone, note.recordName, document.titleWords, document.words])
            }
        }
        try db.cachedStatement(sql: "INSERT INTO docs_index (rowid, title_words, words) SELECT id, title_words, words FROM docs WHERE id >= ?").execute(
            arguments: [firstDoc])
        let vocabulary = Set(documents.flatMap { $0?.vocabulary ?? [] })
        let firstWord = (try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM vocabulary") ?? 0) + 1
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO vocabulary (word) SELECT value FROM json_each(?)").execute(arguments: [
            jsonArray(vocabulary)
        ])
        try db.cachedStatement(sql: "INSERT INTO vocabulary_index (rowid, word) SELECT id, word FROM vocabulary WHERE id >= ?").execute(arguments: [firstWord])
        for (owner, id) in reached {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO progress (owner, indexed_through) VALUES (?, ?)").execute(arguments: [owner, id])
        }
    }

    /// Words as a JSON array of strings, for `json_each`. Written by hand: Foundation's
    /// encoder took a twentieth of a batch's time for the vocabulary alone.
    static func jsonArray(_ words: some Sequence<String>) -> String {
        var json = "["
        for word in words {
            if json.utf8.count > 1 { json += "," }
            json += "\""
            for scalar in word.unicodeScalars {
                switch scalar {
                case "\"": json += "\\\""
                case "\\": json += "\\\\"
                case _ where scalar.value < 0x20: json += String(format: "\\u%04x", scalar.value)
                default: json.unicodeScalars.append(scalar)
                }
            }
            json += "\""
        }
        return json + "]"
    }

    /// An FTS5 expression: each clause's terms joined by OR, the clauses by `joinedBy`;
    /// nil for no clauses. With `reach` `.all`, a search inside words becomes the words
    /// that start with the letters or hold them (`SearchRules.mostInfixWords` of those,
    /// from the vocabulary); with `.wholeWords`, every term is its words as typed.
    public static func match(_ db: Database, _ clauses: [SearchQuery.Clause], joinedBy separator: String, reach: SearchRules.Reach) throws -> String? {
        guard !clauses.isEmpty else { return nil }
        func quoted(_ word: String) -> String { "\"" + word.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        return try clauses.map { clause in
            "("
                + (try clause.alternatives.map { term in
                    let expression: String
                    switch (term.match, reach) {
                    case (.word(let word), _), (.prefix(let word), .wholeWords), (.infix(let word), .wholeWords):
                        expression = quoted(word)
                    case (.phrase(let words), .wholeWords):
                        expression = quoted(words.joined(separator: " "))
                    case (.prefix(let word), .all):
                        expression = "(" + (try starting(db, word) ?? [quoted(word) + "*"]).joined(separator: " OR ") + ")"
                    case (.phrase(let words), .all):
                        expression = quoted(words.joined(separator: " ")) + "*"
                    case (.infix(let word), .all):
                        let holding = try String.fetchAll(
                            db.cachedStatement(
                                sql: "SELECT word FROM vocabulary WHERE id IN (SELECT rowid FROM vocabulary_index WHERE vocabulary_index MATCH ?) ORDER BY word LIMIT ?"),
                            arguments: [quoted(word), SearchRules.mostInfixWords])
                        let start = try starting(db, word) ?? [quoted(word) + "*"]
                        expression = "(" + Array(Set(start + holding.map(quoted))).sorted().joined(separator: " OR ") + ")"
                    }
                    return term.field == .title ? "title_words : " + expression : expression
                }).joined(separator: " OR ") + ")"
        }.joined(separator: separator)
    }

    /// The words of the vocabulary that start with `prefix`, quoted for FTS5, when it
    /// is longer than the index's own word starts (`indexedPrefixes`) and there are
    /// at most `SearchRules.mostInfixWords` of them; nil otherwise (`prefix*` then).
    /// FTS5 merges the lists of every word a `prefix*` names before it returns a first
    /// match; named words it reads as far as it needs.
    static func starting(_ db: Database, _ prefix: String) throws -> [String]? {
        guard prefix.unicodeScalars.count > indexedPrefixes.upperBound else { return nil }
        let words = try String.fetchAll(
            db.cachedStatement(sql: "SELECT word FROM vocabulary WHERE word >= ? AND word < ? ORDER BY word LIMIT ?"),
            arguments: [prefix, prefix + "\u{10FFFF}", SearchRules.mostInfixWords + 1])
        guard !words.isEmpty, words.count <= SearchRules.mostInfixWords else { return nil }
        return words.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
    }

    /// One step of merging the index's segments, about `pages` pages written: FTS5
    /// adds a segment with every write and looks a word up in each (a search inside
    /// words asks for hundreds of words), merging only when a level has several.
    /// Returns whether more is left to merge.
    public static func tidy(_ pool: DatabasePool, pages: Int = 256) throws -> Bool {
        try write(pool) { db in
            var merged = false
            for table in ["docs_index", "vocabulary_index"] {
                // A negative count merges across levels, as 'optimize' does, a step
                // at a time; fewer than two changes means there was nothing to do.
                let before = db.totalChangesCount
                try db.execute(sql: "INSERT INTO \(table) (\(table), rank) VALUES ('merge', ?)", arguments: [-pages])
                merged = merged || db.totalChangesCount - before >= 2
            }
            return merged
        }
    }

    /// Whether `match` has at most `SearchRules.mostRanked` matches (ranking reads
    /// every match: past that, the most recently indexed come first).
    public static func isRankable(_ db: Database, _ match: String) throws -> Bool {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT COUNT(*) FROM (SELECT 1 FROM docs_index WHERE docs_index MATCH ? LIMIT ?)"),
            arguments: [match, SearchRules.mostRanked + 1]) ?? 0 <= SearchRules.mostRanked
    }

    /// The `limit` best-ranked matches, best first, with their BM25 scores (lower is
    /// better; a title's words count four times).
    public static func bestRanked(_ db: Database, _ match: String, limit: Int) throws -> [(id: Int64, score: Double)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT rowid, bm25(docs_index, 4.0, 1.0) AS score FROM docs_index WHERE docs_index MATCH ? ORDER BY score LIMIT ?"),
            arguments: [match, limit]
        ).map { (id: $0[0], score: $0[1]) }
    }

    /// The first `count` bytes of a text or blob value, cut at a character's end, read
    /// with SQLite's incremental I/O: `substr` loads the whole value first (a note of
    /// 1 MiB for a snippet of 200 characters, four times a page for a common word). Nil
    /// when there is no such value (no row, or NULL).
    public static func leadingText(_ db: Database, _ schema: String, _ table: String, _ column: String, rowid: Int64, count: Int) -> String? {
        guard let connection = db.sqliteConnection else { return nil }
        var blob: OpaquePointer?
        guard sqlite3_blob_open(connection, schema, table, column, rowid, 0, &blob) == SQLITE_OK, let blob else {
            if let blob { sqlite3_blob_close(blob) }
            return nil
        }
        defer { sqlite3_blob_close(blob) }
        let size = min(Int(sqlite3_blob_bytes(blob)), count)
        var bytes = [UInt8](repeating: 0, count: size)
        guard size == 0 || sqlite3_blob_read(blob, &bytes, Int32(size), 0) == SQLITE_OK else { return nil }
        if size == count && size > 0 {
            // Without a character cut in two at the end: from the last one's first byte.
            var start = size - 1
            while start > 0 && bytes[start] & 0xC0 == 0x80 && size - start < 4 { start -= 1 }
            let lead = bytes[start]
            if start + (lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2) > size { bytes.removeSubrange(start...) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A note that matched, with what the source file says of it.
    public struct Match: Sendable {
        public var zone: ZoneID
        public var recordName: String
        public var shareID: String?
        public var modifiedAt: Double
        public var modifiedBy: String
    }

    /// The file whose notes the index covers, as the search reads it: the table of its
    /// records (`owner`, `zone`, `record_name`, `record_type`, `share_id`, `modified_at`,
    /// `modified_by`, `name`, `parent`, aliased `r`), and the condition that keeps what
    /// the caller may see.
    public struct Source: Sendable {
        public var records: String
        public var visible: String
        public var arguments: [String]

        public init(records: String, visible: String, arguments: [String]) {
            self.records = records
            self.visible = visible
            self.arguments = arguments
        }
    }

    /// The page of `request`'s matches in `folder` that `source` shows the caller,
    /// best first (one more than the page when another page follows), in the order
    /// `SearchRules.Reach` gives: the notes holding the whole words, ranked by BM25 up to
    /// `SearchRules.mostRanked` of them (newest first on ties), past that the most
    /// recently indexed first; then the notes holding the terms only as word starts or
    /// inside words, most recently indexed first.
    public static func matches(_ db: Database, _ request: SearchRules.Request, in folder: SearchFolder?, from source: Source, actor: String) throws -> [Match] {
        var filter = Filter(source: source)
        let query = request.query
        let wanted = query.clauses.filter { !$0.excluded }
        let unwanted = try match(db, query.clauses.filter(\.excluded), joinedBy: " OR ", reach: .all)
        if let author = query.author { filter.add("r.modified_by = ?", author) }
        if let since = query.modifiedSince { filter.add("r.modified_at >= ?", since.timeIntervalSince1970) }
        if let before = query.modifiedBefore { filter.add("r.modified_at < ?", before.timeIntervalSince1970) }
        switch folder {
        case nil: break
        case .owned: filter.add("r.owner = ?", actor)
        case .shared: filter.add("r.owner != ?", actor)
        case .owner(let owner): filter.add("r.owner = ?", owner)
        case .zone(let zone): filter.add("r.owner = ? AND r.zone = ?", zone.owner, zone.name)
        case .records(let zone, let names):
            filter.add(
                "r.owner = ? AND r.zone = ? AND r.record_name IN (SELECT value FROM json_each(?))", zone.owner, zone.name,
                String(decoding: try JSONEncoder().encode(names), as: UTF8.self))
        }
        let enough = request.offset + request.fetched
        let rows: [Row]
        if let whole = try match(db, wanted, joinedBy: " AND ", reach: .wholeWords) {
            // In the index's own expression: FTS5 skips the excluded notes as it merges
            // the lists, rather than a list of every excluded note being made.
            func without(_ expression: String) -> String { unwanted.map { "(\(expression)) NOT (\($0))" } ?? expression }
            var found = try filter.leading(db, without(whole), enough, ranked: isRankable(db, without(whole)))
            // The words that hold the letters are looked up only when the whole words
            // did not fill the page.
            if found.count < enough, SearchRules.reachesFurther(wanted), let all = try match(db, wanted, joinedBy: " AND ", reach: .all) {
                found += try filter.leading(db, without("(\(all)) NOT (\(whole))"), enough - found.count, ranked: false)
            }
            rows = Array(found.dropFirst(request.offset).prefix(request.fetched))
        } else {
            if let unwanted { filter.add("d.id NOT IN (SELECT rowid FROM docs_index WHERE docs_index MATCH ?)", unwanted) }
            rows = try filter.newest(db, offset: request.offset, limit: request.fetched)
        }
        return rows.map { row in
            Match(zone: ZoneID(owner: row[1], name: row[2]), recordName: row[3], shareID: row[4], modifiedAt: row[5], modifiedBy: row[6])
        }
    }

    /// The conditions a match must pass in the source, and the reads of matches
    /// through them.
    struct Filter {
        var conditions: [String]
        var arguments: [any DatabaseValueConvertible]
        let joined: String
        static let columns = "d.id, d.owner, d.zone, d.record_name, r.share_id, r.modified_at, r.modified_by"

        init(source: Source) {
            conditions = ["r.record_type = 'note'", source.visible]
            arguments = source.arguments
            joined = "JOIN \(source.records) r ON r.owner = d.owner AND r.zone = d.zone AND r.record_name = d.record_name"
        }

        mutating func add(_ condition: String, _ values: any DatabaseValueConvertible...) {
            conditions.append(condition)
            arguments.append(contentsOf: values)
        }

        /// The first `count` matches of `expression` that pass, best ranked first when
        /// `ranked`, else most recently indexed first; fewer when there are no more.
        func leading(_ db: Database, _ expression: String, _ count: Int, ranked: Bool) throws -> [Row] {
            ranked ? try bestPassing(db, expression, count) : try newestPassing(db, expression, count)
        }

        /// The rows of these notes that pass, newest indexed first.
        func passing(_ db: Database, _ ids: some Collection<Int64>) throws -> [Row] {
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.columns) FROM docs d \(joined)
                    WHERE d.id IN (SELECT value FROM json_each(?)) AND \(conditions.joined(separator: " AND ")) ORDER BY d.id DESC
                    """,
                arguments: StatementArguments([String(decoding: try JSONEncoder().encode(Array(ids)), as: UTF8.self)] + arguments))
        }

        /// The index ranks its matches alone (BM25 in C, cheap), and only the best few
        /// are looked up in the source, more only when too few of them pass.
        func bestPassing(_ db: Database, _ expression: String, _ count: Int) throws -> [Row] {
            var limit = max(64, count * 4)
            while true {
                let candidates = try bestRanked(db, expression, limit: limit)
                var scores: [Int64: Double] = [:]
                for candidate in candidates { scores[candidate.id] = candidate.score }
                let found = try passing(db, scores.keys)
                if found.count >= count || candidates.count < limit {
                    let sorted = found.sorted { left, right in
                        let (a, b) = (scores[left[0]] ?? 0, scores[right[0]] ?? 0)
                        if a != b { return a < b }
                        let (x, y): (Double, Double) = (left[5], right[5])
                        if x != y { return x > y }
                        return (left[0] as Int64) < (right[0] as Int64)
                    }
                    return Array(sorted.prefix(count))
                }
                limit *= 8
            }
        }

        /// Read from the index newest first a run at a time (FTS5 walks its lists
        /// backwards, without reading the rest), each run's notes checked in the source,
        /// until `count` pass.
        func newestPassing(_ db: Database, _ expression: String, _ count: Int) throws -> [Row] {
            var found: [Row] = []
            var below = Int64.max
            var run = max(64, count * 2)
            while found.count < count {
                let ids = try Int64.fetchAll(
                    db.cachedStatement(sql: "SELECT rowid FROM docs_index WHERE docs_index MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT ?"),
                    arguments: [expression, below, run])
                guard let last = ids.last else { break }
                found += try passing(db, ids)
                below = last
                run = min(run * 4, 16_384)
            }
            return Array(found.prefix(count))
        }

        /// Without words to look up: the notes that pass, most recently changed first.
        func newest(_ db: Database, offset: Int, limit: Int) throws -> [Row] {
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.columns) FROM docs d \(joined)
                    WHERE \(conditions.joined(separator: " AND "))
                    ORDER BY r.modified_at DESC, d.id
                    LIMIT ? OFFSET ?
                    """, arguments: StatementArguments(arguments + [limit, offset]))
        }
    }
}
