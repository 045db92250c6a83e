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
            // walked every record of the account checking each note's words. And never
            // a scan of every note: the planner estimates a phrase, or the hundreds of
            // words holding some letters, as far more common than they are, and read
            // the whole table where the index holds a few hundred matches.
            try await sql.execute("SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('enable_seqscan', 'off', true)")
            return try await PostgresSearchPage(sql: sql, request: parsed, actor: actor).hits(in: scope)
        }
        return API.SearchResults(results: Array(hits.prefix(parsed.limit)), next: parsed.next(found: hits.count), complete: complete)
    }

    /// Empties the search index and takes every note in again, in this task, telling
    /// `progress` how many notes are left (`notesd reindex`). Instances serving
    /// meanwhile help take the notes in.
    public func rebuildSearchIndex(progress: (Int) -> Void) async throws(NotesError) {
        try await write { write in
            // The vocabulary is kept: instances leave out the words they wrote to it
            // before (`PostgresSearchIndex.knownWords`). A word no note holds any
            // longer only names nothing in a search inside words.
            try await write.sql.execute("TRUNCATE search_docs")
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
    static func readableShares(_ sql: SQL, actor: String, in zones: [ZoneID]? = nil) async throws -> [String: String?] {
        var readable: [String: String?] = [:]
        var shared = zones ?? []
        if zones == nil { shared = try await PostgresRecords.sharedZoneIDs(sql, actor: actor) }
        for zone in shared {
            readable.merge(SearchRules.readableShares(try await PostgresRecords.access(sql, zone: zone, actor: actor))) { first, _ in first }
        }
        return readable
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
    /// Words this instance wrote to `search_vocabulary`, left out of the next writes:
    /// most of a note's words are there already, and asking again for each cost a
    /// fifth of taking 100,000 notes in. Words are never taken out of the vocabulary.
    private let knownWords = Mutex(Set<String>())
    /// Past this many known words (about 10 MB), new ones are asked for each time.
    static let mostKnownWords = 262_144
    /// Notes taken in past which the tables' statistics are renewed (`tidy`).
    static let analyzedEvery = 10_000
    /// Put between a note's title and its text in `words` (which holds both) and taken
    /// out again, leaving a gap in the words' positions so that a phrase never runs
    /// from the title into the text. Longer than `SearchWords.longestWord`: no word of
    /// a note is ever this one.
    static let titleEnd = " " + String(repeating: "z", count: SearchWords.longestWord + 1) + " "

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
            // Each owner found through the index from the one before: `GROUP BY` read
            // every pending row (11 ms with 100,000 waiting, each time).
            let owners = try await sql.column(
                """
                WITH RECURSIVE o(owner) AS (
                    SELECT MIN(owner) FROM search_pending
                    UNION ALL SELECT (SELECT MIN(p.owner) FROM search_pending p WHERE p.owner > o.owner) FROM o WHERE o.owner IS NOT NULL)
                SELECT owner FROM o WHERE owner IS NOT NULL
                """, as: String.self)
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
        let vocabulary = knownWords.withLock { known in Set(kept.flatMap(\.1.vocabulary)).subtracting(known).sorted() }
        try await current().write { write in
            let sql = write.sql
            // Memory for merging the words' GIN pending list when this write fills it
            // (`gin_pending_list_limit`, migration 14): 4 MB merged it in many rounds.
            try await sql.execute("SET LOCAL work_mem = '64MB'")
            if !kept.isEmpty {
                try await sql.execute(
                    """
                    INSERT INTO search_docs AS d (owner, zone, record_name, pending_id, title_words, words)
                    SELECT t.owner, t.zone, t.record_name, t.pending_id, to_tsvector('simple', t.title_words),
                        ts_delete(to_tsvector('simple', t.title_words || \(Self.titleEnd) || t.words), \(Self.titleEnd.trimmingCharacters(in: .whitespaces)))
                    FROM unnest(\(kept.map(\.0.owner))::text[], \(kept.map(\.0.zone))::text[], \(kept.map(\.0.recordName))::text[],
                        \(kept.map(\.0.id))::int8[], \(kept.map(\.1.titleWords))::text[], \(kept.map(\.1.words))::text[])
                        AS t(owner, zone, record_name, pending_id, title_words, words)
                    ON CONFLICT (owner, zone, record_name) DO UPDATE
                        SET pending_id = EXCLUDED.pending_id, title_words = EXCLUDED.title_words, words = EXCLUDED.words
                        WHERE d.pending_id < EXCLUDED.pending_id
                    """)
                if !vocabulary.isEmpty {
                    try await sql.execute("INSERT INTO search_vocabulary (word) SELECT unnest(\(vocabulary)::text[]) ON CONFLICT DO NOTHING")
                }
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
        knownWords.withLock { known in
            if known.count + vocabulary.count <= Self.mostKnownWords { known.formUnion(vocabulary) }
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
