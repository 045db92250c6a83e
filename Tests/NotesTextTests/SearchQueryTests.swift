import Foundation
import NotesText
import Testing

/// The query language and the words of a note, checked the way both backends use them
/// (a word index with positions, and a vocabulary for matches inside words).
@Suite struct SearchQueryTests {
    static func holds(_ document: SearchDocument, _ term: SearchQuery.Term) -> Bool {
        let columns = (term.field == .title ? [document.titleWords] : [document.titleWords, document.words]).map {
            $0.split(separator: " ").map(String.init)
        }
        return columns.contains { words in
            switch term.match {
            case .word(let word): words.contains(word)
            case .prefix(let word): words.contains { $0.hasPrefix(word) }
            case .infix(let word): words.contains { $0.contains(word) }
            case .phrase(let phrase):
                words.indices.contains { start in
                    start + phrase.count <= words.count
                        && phrase.indices.allSatisfy { index in
                            index == phrase.count - 1 ? words[start + index].hasPrefix(phrase[index]) : words[start + index] == phrase[index]
                        }
                }
            }
        }
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
        ("**bold**", "**bold** words", true),
        ("\"plan\"", "The planning meeting", false),
        ("\"plan\"", "the plan", true),
        ("\"budget rev\"", "the budget review", true),
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
        #expect(SearchDocument.title(name: "Groceries.md", body: "milk") == "Groceries")
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

    @Test func eachKindOfWordIsLookedUpItsWay() throws {
        func match(_ query: String) throws -> SearchQuery.Term.Match? { try SearchQuery(parsing: query).wanted.first?.match }
        #expect(try match("plan") == .infix("plan"))
        #expect(try match("Go") == .prefix("go"))
        #expect(try match("plan*") == .prefix("plan"))
        #expect(try match("\"Plan\"") == .word("plan"))
        #expect(try match("京") == .word("京"))
        #expect(try match("東京") == .phrase(["東", "京"]))
        #expect(try match("e-mail") == .phrase(["e", "mail"]))
        #expect(try match("\u{1F}go\u{0}") == .prefix("go"))
    }

    @Test func snippetsMarkTheMatchesAroundTheFirst() {
        let body = String(repeating: "filler words here. ", count: 20) + "The **planning** meeting is on Monday; planning matters."
        let terms = (try? SearchQuery(parsing: "plan"))?.wanted ?? []
        let parts = SearchSnippet.make(SearchDocument.shownText(body), terms: terms)
        #expect(parts.first?.text.hasPrefix("…") == true)
        #expect(parts.filter(\.match).map(\.text) == ["plan", "plan"])
        let shown = parts.map(\.text).joined()
        #expect(shown.contains("The planning meeting is on Monday"))
        #expect(shown.count <= SearchSnippet.length + 2)
    }

    @Test func aSnippetOfAHugeNoteCostsItsBoundOnly() {
        let body = String(repeating: "a", count: 4 << 20) + " needle"
        let parts = SearchSnippet.make(SearchDocument.shownText(body), terms: (try? SearchQuery(parsing: "needle"))?.wanted ?? [])
        #expect(parts.allSatisfy { !$0.match })
        #expect(parts.map(\.text).joined().count <= SearchSnippet.length + 2)
    }

    /// The byte search that snippets use for ASCII text finds what Foundation's
    /// case-insensitive search finds, on generated texts and terms.
    @Test func snippetsFindWhatFoundationFinds() {
        var state: UInt64 = 7
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let letters = Array("aAbBcC xyZ.-é京")
        for _ in 0..<2_000 {
            let text = String((0..<next(40)).map { _ in letters[next(letters.count)] })
            let term = String((0..<1 + next(3)).map { _ in letters[next(8)] })
            let finder = SearchSnippet.Finder(text[...])
            let ours = finder.range(of: term, from: text.startIndex, to: text.endIndex)
            let theirs = text.range(of: term, options: [.caseInsensitive])
            #expect(ours == theirs, "\(term) in \(text)")
        }
    }

    /// A snippet made from a note's first kilobytes, as results make them, is the one
    /// made from the note's whole shown text: on generated notes of up to 48 KiB with
    /// Markdown, code blocks and matches at any depth (or none).
    @Test func snippetsFromTheStartAreTheSnippetsOfTheWhole() throws {
        var state: UInt64 = 11
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let lines = ["plain words and more words", "# A heading", "- a **bold** item", "```", "let code = 1", "> quoted", "", "a [link](https://x.org) here"]
        let queries = ["needle", "needle haystack", "\"red needle\"", "edl", "nee*", "-other needle"]
        for round in 0..<300 {
            var body = ""
            let size = [500, 3_000, 9_000, 48_000][round % 4]
            while body.utf8.count < size {
                switch next(40) {
                case 0: body += "the red needle is here\n"
                case 1: body += "haystack\n"
                default: body += lines[next(lines.count)] + "\n"
                }
            }
            let terms = try SearchQuery(parsing: queries[round % queries.count]).wanted
            #expect(SearchSnippet.make(body: body, terms: terms) == SearchSnippet.make(SearchDocument.shownText(body), terms: terms), "round \(round)")
        }
    }

    /// Words and collapsed white space, made from UTF-8 bytes, are what a plain reading
    /// of the text's scalars by the rules gives, on generated text of every kind.
    @Test func wordsFromBytesAreWordsFromScalars() {
        var state: UInt64 = 5
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let pieces = Array("aZ9 \t\n.-_ÄößÉ京東あカ한глаз\u{0301}\u{00A0}\u{2003}\u{3000}\u{1F600}€½\u{7F}")
        func reference(_ text: String) -> [String] {
            var tokens: [String] = []
            var word = ""
            var length = 0
            func flush() {
                if !word.isEmpty && length <= SearchWords.longestWord { tokens.append(word.lowercased()) }
                word = ""
                length = 0
            }
            for scalar in text.unicodeScalars {
                let properties = scalar.properties
                if SearchWords.isIdeograph(String(scalar)) {
                    flush()
                    tokens.append(String(scalar))
                } else if scalar.isASCII
                    ? (scalar.value >= 0x30 && scalar.value <= 0x39) || properties.isAlphabetic
                    : properties.isAlphabetic || properties.numericType != nil || properties.generalCategory == .nonspacingMark
                        || properties.generalCategory == .spacingMark
                {
                    word.unicodeScalars.append(scalar)
                    length += 1
                } else {
                    flush()
                }
            }
            flush()
            return tokens
        }
        for _ in 0..<2_000 {
            let text = String((0..<next(80)).map { _ in pieces[next(pieces.count)] })
            #expect(SearchWords.tokens(text) == reference(text), "\(text.debugDescription)")
            var collapsed = ""
            var space = false
            for scalar in text.unicodeScalars {
                if scalar.value <= 0x20 || scalar.properties.isWhitespace {
                    space = !collapsed.isEmpty
                    continue
                }
                if space { collapsed += " " }
                space = false
                collapsed.unicodeScalars.append(scalar)
            }
            #expect(SearchWords.collapsed(text) == collapsed, "\(text.debugDescription)")
        }
        let long = String(repeating: "x", count: SearchWords.longestWord + 1)
        #expect(SearchWords.tokens("a \(long) b") == ["a", "b"])
    }
}
