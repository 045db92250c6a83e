import Foundation
import NotesModel
import NotesPostgres
import NotesStore
import Testing

/// Full-text search through the store: what is found, by whom, and where it is.
@Suite struct SearchStoreTests {
    static let backends = Backend.allCases

    static func paths(_ f: Fixture, _ query: String, as actor: String = Fixture.alice) async throws -> [String] {
        try await search(f, API.Search(query: query), as: actor).results.map(\.path)
    }

    /// A search once the index holds every note saved so far (on a busy machine a search
    /// may answer before, saying so; the condition is waited for, not a time).
    static func search(_ f: Fixture, _ request: API.Search, as actor: String = Fixture.alice) async throws -> API.SearchResults {
        let deadline = ContinuousClock.now + .seconds(300)
        while true {
            let page = try await f.store.search(request, actor: actor)
            if page.complete || ContinuousClock.now > deadline { return page }
        }
    }

    /// A corpus in several languages and kinds of Markdown, with the notes each query
    /// must find, and no others.
    static let corpus: [(name: String, body: String)] = [
        ("english.md", "# Quarterly planning\n\nThe **budget** review is on Monday. See [the roadmap](https://example.com/roadmap).\n"),
        ("german.md", "# Einkaufsliste\n\nÄpfel, Größe L, und ein Blumenstrauß für die Straße.\n"),
        ("japanese.md", "# 会議\n\n東京都で会議があります。資料を準備してください。\n"),
        ("chinese.md", "# 计划\n\n我们下周在北京开会，讨论预算。\n"),
        ("code.md", "Notes on the parser:\n\n```swift\nlet tokenizer = Trigram(caseSensitive: false)\n```\n"),
        ("links.md", "Read [the manual](https://docs.example.org/guide) before the meeting.\n"),
        ("weekly digest.md", "Nothing here yet.\n"),
    ]

    static let expected: [(query: String, found: Set<String>)] = [
        ("budget", ["private/english.md"]),
        ("BUDGET", ["private/english.md"]),
        ("plann", ["private/english.md"]),
        ("\"budget review\"", ["private/english.md"]),
        ("roadmap", ["private/english.md"]),
        ("example.com", []),
        ("meeting", ["private/links.md"]),
        ("manual", ["private/links.md"]),
        ("docs.example.org", []),
        ("größe", ["private/german.md"]),
        ("äpfel", ["private/german.md"]),
        ("straße", ["private/german.md"]),
        ("blumen*", ["private/german.md"]),
        ("strauß*", []),
        ("東京", ["private/japanese.md"]),
        ("会議", ["private/japanese.md"]),
        ("資料", ["private/japanese.md"]),
        ("準備してください", ["private/japanese.md"]),
        ("北京", ["private/chinese.md"]),
        ("预算", ["private/chinese.md"]),
        ("京", ["private/japanese.md", "private/chinese.md"]),
        ("tokenizer", ["private/code.md"]),
        ("caseSensitive", ["private/code.md"]),
        ("Trigram(", ["private/code.md"]),
        ("title:会議", ["private/japanese.md"]),
        ("title:plan", ["private/english.md"]),
        ("title:budget", []),
        ("the -budget", ["private/links.md", "private/code.md"]),
        ("budget OR 预算", ["private/english.md", "private/chinese.md"]),
        ("the manual OR roadmap", ["private/english.md", "private/links.md"]),
        // A title taken from the name is searched with the text, and a phrase does not
        // run from the one into the other.
        ("links", ["private/links.md"]),
        ("meeting -links", []),
        ("\"links read\"", []),
        ("\"read the manual\"", ["private/links.md"]),
        ("\"weekly digest\"", ["private/weekly digest.md"]),
        ("\"digest nothing\"", []),
        ("\"quarterly planning\"", ["private/english.md"]),
        // A phrase whose last word is typed in part.
        ("\"budget revi\"", ["private/english.md"]),
        ("\"the budg\"", ["private/english.md"]),
        ("\"the bu\"", ["private/english.md"]),
        ("\"the manual before\"", ["private/links.md"]),
        ("\"the manual after\"", []),
    ]

    @Test(arguments: backends)
    func theCorpusFindsWhatItShould(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        for (index, note) in Self.corpus.enumerated() {
            try await f.note("n\(index)", note.name, body: note.body)
        }
        for item in Self.expected {
            #expect(Set(try await Self.paths(f, item.query)) == item.found, "\(item.query)")
        }
        let hit = try #require(try await Self.search(f, API.Search(query: "budget")).results.first)
        #expect(hit.title == "Quarterly planning")
        #expect(hit.modifiedBy == Fixture.alice)
        #expect(hit.shareID == nil)
        #expect(hit.snippet.filter(\.match).map(\.text) == ["budget"])
        #expect(hit.snippet.map(\.text).joined().contains("The budget review is on Monday."))
    }

    @Test(arguments: backends)
    func wholeWordsComeFirstAndPagesJoinUp(_ backend: Backend) async throws {
        // Given notes holding "plan" as a word, and later ones holding it only at the
        // start of a word or inside one
        let f = try await Fixture(backend)
        try await f.note("a", "a.md", body: "the plan for spring")
        try await f.note("b", "b.md", body: "plan, plan and plan again: the plan")
        try await f.note("c", "c.md", body: "planning ahead")
        try await f.note("d", "d.md", body: "an explanation")
        // When alice searches for it
        let all = try await Self.paths(f, "plan")
        // Then the whole words come first, the rest after them,
        #expect(Set(all.prefix(2)) == ["private/a.md", "private/b.md"])
        #expect(Set(all.suffix(2)) == ["private/c.md", "private/d.md"])
        // and page by page, one result a page, she sees the same ones once each in the
        // same order, across the turn from one kind to the other
        var paged: [String] = []
        var cursor: String?
        repeat {
            let page = try await Self.search(f, API.Search(query: "plan", limit: 1, cursor: cursor))
            paged += page.results.map(\.path)
            cursor = page.next
        } while cursor != nil && paged.count < 10
        #expect(paged == all)
        // A word start, a phrase and an excluded word keep the same order.
        #expect(Set(try await Self.paths(f, "plan*")) == ["private/a.md", "private/b.md", "private/c.md"])
        #expect(try await Self.paths(f, "plan* -spring") == ["private/b.md", "private/c.md"])
        #expect(Set(try await Self.paths(f, "\"the plan\"")) == ["private/a.md", "private/b.md"])
        // An excluded word is the word itself, or with `*` the words it starts.
        #expect(Set(try await Self.paths(f, "plan -planning")) == ["private/a.md", "private/b.md", "private/d.md"])
        #expect(try await Self.paths(f, "plan -plan*") == ["private/d.md"])
    }

    @Test(arguments: backends)
    func moreMatchesThanARankingReadsAreListedWholeAndOnce(_ backend: Backend) async throws {
        // Given more notes holding a word than PostgreSQL ranks (they are then listed
        // newest first), every tenth also holding a second word, one a phrase of both
        let f = try await Fixture(backend)
        for first in stride(from: 0, to: 1_100, by: 400) {
            try await f.save(
                (first..<min(first + 400, 1_100)).map { index in
                    let body = "the common word" + (index % 10 == 0 ? " and rare" : "") + (index == 555 ? " common rare" : "")
                    return RecordSave(recordName: "n\(index)", recordType: .note, name: "n\(index).md", body: body)
                })
        }
        // When alice pages through the word's results, a hundred at a time
        var paths: [String] = []
        var cursor: String?
        repeat {
            let page = try await Self.search(f, API.Search(query: "common", limit: 100, cursor: cursor))
            paths += page.results.map(\.path)
            cursor = page.next
        } while cursor != nil
        // Then she sees the first thousand once each (a search lists at most 1,000),
        #expect(paths.count == 1_000)
        #expect(Set(paths).count == 1_000)
        // and excluded words, phrases and word starts over as many find just theirs.
        #expect(try await Self.paths(f, "common -rare", as: Fixture.alice).count == 20)
        let withoutRare = try await Self.search(f, API.Search(query: "common -rare", limit: 100)).results.map(\.recordName)
        #expect(withoutRare.count == 100)
        #expect(withoutRare.allSatisfy { name in name != "n555" && Int(name.dropFirst())! % 10 != 0 })
        #expect(try await Self.paths(f, "\"common rare\"") == ["private/n555.md"])
        #expect(try await Self.paths(f, "\"common ra\"") == ["private/n555.md"])
        #expect(Set(try await Self.paths(f, "rare -and")) == ["private/n555.md"])
    }

    @Test(arguments: backends)
    func onlyWhatTheCallerMayReadIsFound(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.folder("work", "Work")
        try await f.note("plan", "plan.md", body: "the secret plan", parent: "work")
        try await f.note("diary", "diary.md", body: "my secret diary")
        // Another account finds nothing, and neither does a pending invitee.
        #expect(try await Self.paths(f, "secret", as: Fixture.bob).isEmpty)
        let share = try await f.store.createShare(
            NewShare(zone: f.aliceZone, rootRecordName: "work", participants: [Invitee(name: Fixture.bob, permission: .readOnly)]), actor: Fixture.alice)
        #expect(try await Self.paths(f, "secret", as: Fixture.bob).isEmpty)
        // Accepted: the shared folder's notes, at their mount path, and nothing else.
        _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.bob)
        let found = try await Self.search(f, API.Search(query: "secret"), as: Fixture.bob).results
        #expect(found.map(\.path) == ["shared/alice/Work/plan.md"])
        #expect(found.first?.shareID == share.id)
        #expect(try await Self.paths(f, "secret").sorted() == ["private/Work/plan.md", "private/diary.md"])
        // Removed: nothing again.
        _ = try await f.store.removeParticipant(shareID: share.id, name: Fixture.bob, actor: Fixture.alice)
        #expect(try await Self.paths(f, "secret", as: Fixture.bob).isEmpty)
        #expect(try await Self.paths(f, "secret", as: Fixture.carol).isEmpty)
    }

    @Test(arguments: backends)
    func aZoneWideShareIsUnderItsZoneFolder(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let team = ZoneID(owner: Fixture.alice, name: "Team")
        _ = try await f.store.createZone(team, actor: Fixture.alice)
        try await f.folder("docs", "Docs", in: team)
        try await f.note("guide", "guide.md", body: "onboarding guide", parent: "docs", in: team)
        let share = try await f.store.createShare(
            NewShare(zone: team, rootRecordName: nil, participants: [Invitee(name: Fixture.bob, permission: .readWrite)]), actor: Fixture.alice)
        _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.bob)
        #expect(try await Self.paths(f, "onboarding") == ["private/Team/Docs/guide.md"])
        #expect(try await Self.paths(f, "onboarding", as: Fixture.bob) == ["shared/alice/Team/Docs/guide.md"])
        #expect(try await Self.paths(f, "onboarding in:shared/alice/Team/Docs", as: Fixture.bob) == ["shared/alice/Team/Docs/guide.md"])
        #expect(try await Self.paths(f, "onboarding in:private/Team") == ["private/Team/Docs/guide.md"])
    }

    @Test(arguments: backends)
    func changedDeletedAndTrashedNotesAreFoundAsTheyAreNow(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let first = try await f.note("a", "a.md", body: "old words")
        #expect(try await Self.paths(f, "old") == ["private/a.md"])
        try await f.save([RecordSave(recordName: "a", recordType: .note, name: "renamed.md", body: "new words", changeTag: first.changeTag)])
        #expect(try await Self.paths(f, "old").isEmpty)
        #expect(try await Self.paths(f, "new") == ["private/renamed.md"])
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "a")]), actor: Fixture.alice)
        #expect(try await Self.paths(f, "new").isEmpty)
        _ = try await f.store.restoreFromTrash("a", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.alice)
        #expect(try await Self.paths(f, "new") == ["private/renamed.md"])
    }

    @Test(arguments: backends)
    func filtersNarrowTheHits(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.folder("work", "Work")
        try await f.folder("old", "Old", parent: "work")
        try await f.note("w", "w.md", body: "report draft", parent: "work")
        try await f.note("o", "o.md", body: "report archive", parent: "old")
        try await f.note("h", "h.md", body: "report at home")
        #expect(Set(try await Self.paths(f, "report in:private/Work")) == ["private/Work/w.md", "private/Work/Old/o.md"])
        #expect(try await Self.paths(f, "report in:private/Work/Old") == ["private/Work/Old/o.md"])
        #expect(try await Self.paths(f, "in:private/Work/Old") == ["private/Work/Old/o.md"])
        #expect(try await Self.paths(f, "report by:bob").isEmpty)
        #expect(try await Self.paths(f, "report by:alice").count == 3)
        let today = ISO8601DateFormatter().string(from: f.clock.now).prefix(10)
        #expect(try await Self.paths(f, "report modified:\(today)").count == 3)
        #expect(try await Self.paths(f, "report modified:<\(today)").isEmpty)
        await f.expectFailure(.unknownItem) { _ = try await Self.paths(f, "report in:private/Nowhere") }
        await f.expectFailure(.invalidArguments) { _ = try await Self.paths(f, "a") }
    }

    @Test(arguments: backends)
    func pagesFollowOneAnother(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.save((0..<25).map { RecordSave(recordName: "n\($0)", recordType: .note, name: "n\($0).md", body: "common word \($0)") })
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try await Self.search(f, API.Search(query: "common", limit: 10, cursor: cursor))
            #expect(page.complete)
            seen += page.results.map(\.path)
            cursor = page.next
        } while cursor != nil
        #expect(seen.count == 25)
        #expect(Set(seen).count == 25)
        await f.expectFailure(.invalidArguments) { _ = try await f.store.search(API.Search(query: "common", cursor: "x"), actor: Fixture.alice) }
        await f.expectFailure(.invalidArguments) { _ = try await f.store.search(API.Search(query: "common", limit: 0), actor: Fixture.alice) }
    }

    @Test(arguments: backends)
    func aRebuiltIndexFindsTheSameAndTellsItsProgress(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.save((0..<300).map { RecordSave(recordName: "n\($0)", recordType: .note, name: "n\($0).md", body: "item number\($0) here") })
        #expect(try await Self.paths(f, "number299") == ["private/n299.md"])
        var left: [Int] = []
        switch f.store {
        case let store as SQLiteStore: try await store.rebuildSearchIndex { left.append($0) }
        case let store as PostgresStore: try await store.rebuildSearchIndex { left.append($0) }
        default: Issue.record("a store of another kind")
        }
        #expect(left.first ?? 0 >= 300)
        #expect(left.last == 0)
        #expect(left == left.sorted(by: >))
        #expect(try await Self.paths(f, "number299") == ["private/n299.md"])
        #expect(try await Self.paths(f, "number0 here") == ["private/n0.md"])
    }

    /// The index holds nothing the store does not: deleted, it is built again.
    @Test func aLostIndexIsRebuilt() async throws {
        let f = try await Fixture(.sqlite)
        try await f.note("a", "a.md", body: "kept words")
        #expect(try await Self.paths(f, "kept") == ["private/a.md"])
        let index = f.location.replacingOccurrences(of: ".sqlite", with: "-search.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: index + suffix) }
        let reopened = try SQLiteStore(path: f.location)
        // (Built again in the background: on a busy machine, past a search's own wait.)
        var page = try await reopened.search(API.Search(query: "kept"), actor: Fixture.alice)
        while !page.complete { page = try await reopened.search(API.Search(query: "kept"), actor: Fixture.alice) }
        #expect(page.results.map(\.path) == ["private/a.md"])
    }
}
