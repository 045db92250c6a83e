public import Foundation

/// A search as people type it, parsed once for every backend and the offline replica.
///
/// Words match inside words too (`lann` finds "planning"); `"two words"` is a phrase
/// (a quoted single word matches that word only); `plan*` matches words that start with
/// "plan"; a word of two letters matches the starts of words; `-word` excludes the word
/// (`-word*` the words starting with it); `a OR b` takes either (OR binds tighter than
/// the words around it: `budget draft OR final` is budget and either of the two).
/// Filters: `in:FOLDER` (a mount path such as `private/projects`), `title:WORD`,
/// `by:ACCOUNT` (who changed the note last), `modified:>2026-11-01` (also `>=`, `<`,
/// `<=`, or a day; days are UTC). Markdown markup is not indexed: `**bold**` is not
/// found, `bold` is.
public struct SearchQuery: Sendable, Equatable {
    public static let longestQueryBytes = 1024
    public static let mostTerms = 16

    public enum Field: String, Sendable, Equatable {
        case anywhere, title
    }

    /// One word or phrase of a query, as the index looks it up.
    public struct Term: Sendable, Equatable {
        public enum Match: Sendable, Equatable {
            /// A whole word: a quoted word, or one Chinese or Japanese character.
            case word(String)
            /// Words that start with it: `plan*`, or a word of two letters.
            case prefix(String)
            /// Words that hold it anywhere (three letters or more).
            case infix(String)
            /// Words one after the other, the last one's start enough: a quoted phrase,
            /// a word with punctuation inside (`e-mail`), a run of Chinese characters.
            case phrase([String])
        }
        public var match: Match
        public var field: Field
        /// The words as typed (NFKC, white space collapsed): what a snippet marks.
        public var typed: String
    }

    /// Terms of which a note must hold one (or, excluded, none).
    public struct Clause: Sendable, Equatable {
        public var alternatives: [Term]
        public var excluded: Bool
    }

    /// A query that cannot be run, with what to change.
    public struct Problem: Error, Equatable {
        public let message: String
        public init(_ message: String) { self.message = message }
    }

    public var clauses: [Clause] = []
    /// A folder's mount path (`private/…`, `shared/OWNER/…`) without surrounding slashes.
    public var folder: String?
    public var author: String?
    /// Modified at or after this instant.
    public var modifiedSince: Date?
    /// Modified before this instant.
    public var modifiedBefore: Date?

    /// The terms a matching note holds (those not excluded), for snippets.
    public var wanted: [Term] { clauses.filter { !$0.excluded }.flatMap(\.alternatives) }
    public var hasWords: Bool { !clauses.isEmpty }

    public init(parsing text: String) throws(Problem) {
        guard text.utf8.count <= Self.longestQueryBytes else {
            throw Problem("The query is \(text.utf8.count) bytes long; the most is \(Self.longestQueryBytes).")
        }
        var pendingOr = false
        for token in Self.tokens(text) {
            if token.text == "OR" && !token.quoted && !token.excluded && token.filter == nil {
                guard let last = clauses.last, !last.excluded, !pendingOr else {
                    throw Problem("OR goes between two words, as in `draft OR final`.")
                }
                pendingOr = true
                continue
            }
            if let filter = token.filter {
                guard !pendingOr else { throw Problem("OR goes between two words, not before `\(filter):`.") }
                if filter == "title" {
                    try add(Self.term(token, field: .title), excluded: token.excluded, joining: false)
                } else {
                    guard !token.excluded else { throw Problem("`-\(filter):` cannot exclude: write the filter without the minus.") }
                    try apply(filter: filter, token.text)
                }
                continue
            }
            try add(Self.term(token, field: .anywhere), excluded: token.excluded, joining: pendingOr)
            pendingOr = false
        }
        if pendingOr { throw Problem("OR goes between two words: the query ends with it.") }
        guard clauses.contains(where: { !$0.excluded }) || folder != nil || author != nil || modifiedSince != nil || modifiedBefore != nil else {
            throw Problem(
                clauses.isEmpty
                    ? "Say what to look for: a word, a \"phrase\", or a filter such as in:private/projects."
                    : "A query needs a word to look for besides the excluded ones, or a filter.")
        }
    }

    private mutating func add(_ term: Term, excluded: Bool, joining: Bool) throws(Problem) {
        var term = term
        // An excluded word excludes the word itself (`-draft*` the words that start
        // with it), not every word holding its letters: "-plan" keeping out notes that
        // say "explanation" would surprise, and each note would be tested against the
        // hundreds of words holding them.
        if excluded, case .infix(let word) = term.match { term.match = .word(word) }
        if joining {
            guard !excluded else { throw Problem("OR cannot join an excluded word: write `-a -b` to exclude both.") }
            clauses[clauses.count - 1].alternatives.append(term)
        } else {
            clauses.append(Clause(alternatives: [term], excluded: excluded))
        }
        guard clauses.reduce(0, { $0 + $1.alternatives.count }) <= Self.mostTerms else {
            throw Problem("The query has more than \(Self.mostTerms) words; narrow it down.")
        }
    }

    private mutating func apply(filter: String, _ value: String) throws(Problem) {
        switch filter {
        case "in":
            let path = value.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
            guard !path.isEmpty else { throw Problem("in: needs a folder, as in in:private/projects.") }
            folder = path
        case "by":
            guard !value.isEmpty else { throw Problem("by: needs an account name, as in by:alice.") }
            author = value
        case "modified":
            try applyModified(value)
        default:
            break
        }
    }

    private mutating func applyModified(_ value: String) throws(Problem) {
        var rest = Substring(value)
        var comparison = ""
        while let first = rest.first, "<>=".contains(first) {
            comparison.append(first)
            rest = rest.dropFirst()
        }
        guard let day = Self.day(String(rest)) else {
            throw Problem("modified: needs a day as YYYY-MM-DD, as in modified:>2026-11-01 (\(value) is not one).")
        }
        let next = day.addingTimeInterval(86_400)
        switch comparison {
        case ">": modifiedSince = next
        case ">=": modifiedSince = day
        case "<": modifiedBefore = day
        case "<=": modifiedBefore = next
        case "", "=":
            modifiedSince = day
            modifiedBefore = next
        default:
            throw Problem("modified: compares with >, >=, < or <=, as in modified:>=2026-11-01.")
        }
    }

    /// Midnight UTC of a `YYYY-MM-DD` day.
    static func day(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day)
        guard components.isValidDate(in: calendar) else { return nil }
        return calendar.date(from: components)
    }

    /// How the index looks up a word or phrase. A word ending in `*` matches words that
    /// start with it; a quoted single word matches itself only; other words match
    /// inside words, unless they are too short for that (two letters): then they match
    /// the starts of words.
    static func term(_ token: Token, field: Field) throws(Problem) -> Term {
        var text = token.text
        var prefix = false
        if !token.quoted {
            while text.hasSuffix("*") {
                text.removeLast()
                prefix = true
            }
        }
        // The same normal form as the index (`SearchText`): full-width letters match.
        text = SearchWords.collapsed(SearchText.normalized(text))
        let words = SearchWords.tokens(text)
        let shown = token.quoted ? "\"\(token.text)\"" : token.text
        guard let first = words.first else { throw Problem("`\(shown)` has no letters or digits to look for.") }
        let match: Term.Match
        if words.count > 1 {
            match = .phrase(words)
        } else if SearchWords.isIdeograph(first) {
            match = .word(first)
        } else if first.unicodeScalars.count < 2 {
            throw Problem("`\(shown)` is too short to look up: use two letters or more (one is enough in Chinese or Japanese).")
        } else if token.quoted {
            match = .word(first)
        } else if prefix || first.unicodeScalars.count == 2 {
            match = .prefix(first)
        } else {
            match = .infix(first)
        }
        return Term(match: match, field: field, typed: text)
    }

    struct Token: Equatable {
        var text: String
        var quoted: Bool
        var excluded: Bool
        var filter: String?
    }

    static let filters: Set<String> = ["in", "title", "by", "modified"]

    /// Splits at white space outside quotes; reads a leading `-` and a known `filter:`.
    static func tokens(_ text: String) -> [Token] {
        var tokens: [Token] = []
        var characters = Substring(text)
        func skipSpace() {
            while let first = characters.first, first.isWhitespace { characters = characters.dropFirst() }
        }
        func quoted() -> String {
            characters = characters.dropFirst()
            let end = characters.firstIndex(of: "\"") ?? characters.endIndex
            let value = String(characters[..<end])
            characters = end == characters.endIndex ? characters[end...] : characters[characters.index(after: end)...]
            return value
        }
        func bare() -> String {
            let end = characters.firstIndex(where: \.isWhitespace) ?? characters.endIndex
            let value = String(characters[..<end])
            characters = characters[end...]
            return value
        }
        skipSpace()
        while !characters.isEmpty {
            var excluded = false
            if characters.first == "-", let next = characters.dropFirst().first, !next.isWhitespace {
                excluded = true
                characters = characters.dropFirst()
            }
            var filter: String?
            if let colon = characters.prefix(while: { !$0.isWhitespace && $0 != "\"" }).firstIndex(of: ":") {
                let name = characters[..<colon].lowercased()
                if Self.filters.contains(name) {
                    filter = name
                    characters = characters[characters.index(after: colon)...]
                }
            }
            if characters.first == "\"" {
                tokens.append(Token(text: quoted(), quoted: true, excluded: excluded, filter: filter))
            } else {
                tokens.append(Token(text: bare(), quoted: false, excluded: excluded, filter: filter))
            }
            skipSpace()
        }
        return tokens
    }
}
