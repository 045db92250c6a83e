import Foundation
import NotesText
import Testing

/// The query language and the search form, checked the way both backends use them: a
/// note matches a term when the note's search form holds the term's, ignoring case.
@Suite struct SearchQueryTests {
    static func holds(_ document: SearchDocument, _ term: SearchQuery.Term) -> Bool {
        let field = term.field == .title ? document.title : document.title + " " + document.text
        return field.range(of: term.form, options: .caseInsensitive) != nil
    }

    static func matches(_ query: String, _ body: String, name: String = "note.md") throws -> Bool {
        let parsed = try SearchQuery(parsing: query)
        let document = SearchDocument(name: name, body: body)
        return parsed.clauses.allSatisfy { clause in
            clause.alternatives.contains { holds(document, $0) } != clause.excluded
        }
    }

    static let cases: [(query: String, body: String, found: Bool)] = [
        ("plan", "The planning meeting", true),
        ("lann", "The planning meeting", true),
        ("PLANNING", "the planning meeting", true),
        ("plan*", "The planning meeting", true),
        ("lann*", "The planning meeting", false),
        ("go", "Written in Go, of course", true),
        ("go", "an ergonomic chair", false),
        ("\"planning meeting\"", "The planning\n\n  meeting", true),
        ("\"meeting planning\"", "The planning meeting", false),
        ("budget -draft", "budget final", true),
        ("budget -draft", "budget draft", false),
        ("budget draft OR final", "budget final", true),
        ("budget draft OR final", "budget other", false),
        ("e-mail", "send an e-mail", true),
        ("e-mail", "send an email", false),
        ("**bold**", "**bold** words", false),
        ("bold", "**bold** words", true),
        ("docs", "[the docs](https://example.com/x)", true),
        ("example.com", "[the docs](https://example.com/x)", false),
        ("Größe", "Die Größe der Straße", true),
        ("straße", "Die Größe der Straße", true),
        ("東京", "東京都に住んでいます", true),
        ("京都", "東京都に住んでいます", true),
        ("都", "東京都に住んでいます", true),
        ("住んで", "東京都に住んでいます", true),
        ("大阪", "東京都に住んでいます", false),
        ("北京", "我住在北京市。", true),
        ("北", "我住在北京市。", true),
        ("ｐｌａｎ", "plan", true),
        ("let answer", "```swift\nlet answer = 42\n```", true),
        ("title:plan", "# Plan for Q3\n\nbody", true),
        ("title:body", "# Plan for Q3\n\nbody", false),
        ("title:notes", "no heading here", false),
    ]

    @Test func termsMatchAsDocumented() throws {
        for item in Self.cases {
            #expect(try Self.matches(item.query, item.body) == item.found, "\(item.query) in \(item.body.debugDescription)")
        }
    }

    @Test func aNoteWithoutHeadingIsTitledByItsName() throws {
        #expect(try Self.matches("title:groceries", "milk, eggs", name: "Groceries.md"))
        #expect(SearchDocument.shownTitle(SearchDocument(name: "Groceries.md", body: "milk").title) == "Groceries")
    }

    @Test func filtersAreRead() throws {
        let query = try SearchQuery(parsing: "in:/private/projects/ by:alice modified:>2026-11-01 \"road map\"")
        #expect(query.folder == "private/projects")
        #expect(query.author == "alice")
        #expect(query.modifiedSince == ISO8601DateFormatter().date(from: "2026-11-02T00:00:00Z"))
        #expect(query.modifiedBefore == nil)
        #expect(query.wanted.map(\.typed) == ["road map"])
        let day = try SearchQuery(parsing: "modified:2026-02-28")
        #expect(day.modifiedSince == ISO8601DateFormatter().date(from: "2026-02-28T00:00:00Z"))
        #expect(day.modifiedBefore == ISO8601DateFormatter().date(from: "2026-03-01T00:00:00Z"))
        #expect(try SearchQuery(parsing: "modified:<=2026-11-01").modifiedBefore == ISO8601DateFormatter().date(from: "2026-11-02T00:00:00Z"))
        // A colon in a word that is not a filter is part of the word.
        #expect(try SearchQuery(parsing: "10:30").wanted.map(\.typed) == ["10:30"])
    }

    @Test func queriesThatCannotRunSayWhy() {
        let refused = ["", "   ", "a", "-draft", "OR plan", "plan OR", "plan OR -draft", "modified:yesterday", "modified:2026-02-30", "in:", "\"\"", "-in:x plan"]
        for query in refused {
            #expect(throws: SearchQuery.Problem.self, "\(query)") { try SearchQuery(parsing: query) }
        }
        #expect(throws: SearchQuery.Problem.self) { try SearchQuery(parsing: String(repeating: "word ", count: 17)) }
        #expect(throws: SearchQuery.Problem.self) { try SearchQuery(parsing: String(repeating: "x", count: 1025)) }
        // A filter alone is a query: every note it lets through.
        #expect(throws: Never.self) { try SearchQuery(parsing: "in:private/projects") }
    }

    @Test func aQueryCannotForgeTheMarker() throws {
        let query = try SearchQuery(parsing: "\u{1F}go")
        #expect(query.wanted.first?.form == "\u{1F}go")
        #expect(!(try Self.matches("\u{1F}\u{1F}go", "ergonomic")))
    }

    @Test func snippetsMarkTheMatchesAroundTheFirst() {
        let body = String(repeating: "filler words here. ", count: 20) + "The **planning** meeting is on Monday; planning matters."
        let document = SearchDocument(name: "n.md", body: body)
        let terms = (try? SearchQuery(parsing: "plan"))?.wanted ?? []
        let parts = SearchSnippet.make(document.text, terms: terms)
        #expect(parts.first?.text.hasPrefix("…") == true)
        #expect(parts.filter(\.match).map(\.text) == ["plan", "plan"])
        #expect(!parts.contains { $0.text.unicodeScalars.contains(SearchForm.wordStart) })
        let shown = parts.map(\.text).joined()
        #expect(shown.contains("The planning meeting is on Monday"))
        #expect(shown.count <= SearchSnippet.length + 2)
    }

    @Test func aSnippetOfAHugeNoteCostsItsBoundOnly() {
        let body = String(repeating: "a", count: 4 << 20) + " needle"
        let document = SearchDocument(name: "n.md", body: body)
        let parts = SearchSnippet.make(document.text, terms: (try? SearchQuery(parsing: "needle"))?.wanted ?? [])
        #expect(parts.allSatisfy { !$0.match })
        #expect(parts.map(\.text).joined().count <= SearchSnippet.length + 2)
    }
}
