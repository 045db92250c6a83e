import Foundation

/// A few lines of a found note around its first match, with the matches marked: the
/// same for every backend and offline, since it is cut from the text the index keeps.
public enum SearchSnippet {
    /// One run of the snippet's text: a match or what lies between matches.
    public struct Part: Sendable, Equatable, Codable {
        public var text: String
        public var match: Bool
        public init(text: String, match: Bool) {
            self.text = text
            self.match = match
        }
    }

    /// How far into a note a match is looked for (a match further in gives the
    /// note's opening lines): the snippet's cost stays small for a note of any size.
    public static let scannedBytes = 32 * 1024
    /// Characters shown before the first match, and in all.
    public static let lead = 60
    public static let length = 200

    /// The snippet of a note (`body`, its text as stored) for the terms a match holds.
    /// The first match is looked for in the shown text of the note's first 2 KiB, then
    /// 8, then `scannedBytes`: making the shown text is most of what a result costs, and
    /// most first matches are near the start. The same snippet as from the whole.
    public static func make(body: String, terms: [SearchQuery.Term]) -> [Part] {
        var bytes = 2 << 10
        while true {
            let (text, isWhole) = SearchDocument.shownText(body, upTo: min(bytes, scannedBytes))
            let (parts, isShort) = make(text, terms: terms, knownToEnd: isWhole || bytes >= scannedBytes)
            if !isShort { return parts }
            bytes *= 4
        }
    }

    /// The snippet of `text` (a note's text as `SearchDocument` keeps it) for the terms
    /// a match holds: their words are marked wherever they occur.
    public static func make(_ text: String, terms: [SearchQuery.Term]) -> [Part] {
        make(text, terms: terms, knownToEnd: true).parts
    }

    /// The snippet, and whether it may be short of the whole text's: `text` is the start
    /// of a longer one (not `knownToEnd`) and no match was found, or the snippet reaches
    /// its end.
    static func make(_ text: String, terms: [SearchQuery.Term], knownToEnd: Bool) -> (parts: [Part], isShort: Bool) {
        let (text, cut) = bounded(text)
        let forms = Set(terms.map(\.marked)).filter { !$0.isEmpty }
        let finder = Finder(text)
        var first: Range<String.Index>?
        for term in forms {
            if let found = finder.range(of: term, from: text.startIndex, to: text.endIndex), first == nil || found.lowerBound < first!.lowerBound {
                first = found
            }
        }
        let center = first?.lowerBound ?? text.startIndex
        var start = text.index(center, offsetBy: -lead, limitedBy: text.startIndex) ?? text.startIndex
        if start != text.startIndex, let space = text[start..<center].firstIndex(of: " ") { start = text.index(after: space) }
        let end = text.index(start, offsetBy: length, limitedBy: text.endIndex) ?? text.endIndex
        if !knownToEnd && (first == nil || end == text.endIndex) { return ([], true) }
        let window = text[start..<end]

        var matches: [Range<String.Index>] = []
        for term in forms {
            var from = window.startIndex
            while from < window.endIndex, let found = finder.range(of: term, from: from, to: window.endIndex) {
                matches.append(found)
                from = found.upperBound
            }
        }
        matches.sort { $0.lowerBound < $1.lowerBound }
        var parts: [Part] = []
        var cursor = window.startIndex
        func append(_ slice: Substring, match: Bool) {
            let plain = String(slice)
            guard !plain.isEmpty else { return }
            if let last = parts.last, last.match == match {
                parts[parts.count - 1].text += plain
            } else {
                parts.append(Part(text: plain, match: match))
            }
        }
        if start != text.startIndex { parts.append(Part(text: "…", match: false)) }
        for match in matches where match.lowerBound >= cursor {
            append(window[cursor..<match.lowerBound], match: false)
            append(window[match], match: true)
            cursor = match.upperBound
        }
        append(window[cursor..<window.endIndex], match: false)
        if end != text.endIndex || cut { append("…", match: false) }
        return (parts, false)
    }

    /// Finds a term in a text without regard to case. For ASCII text and terms (most
    /// notes) it compares bytes: Foundation's case-insensitive search costs about a
    /// hundred times as much, and a page of results runs it for every hit.
    package struct Finder {
        let text: Substring
        /// The text's bytes in lower case; nil when the text is not all ASCII.
        let lowered: [UInt8]?

        package init(_ text: Substring) {
            self.text = text
            let bytes = Array(text.utf8)
            lowered = bytes.allSatisfy { $0 < 0x80 } ? bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 } : nil
        }

        package func range(of term: String, from: String.Index, to end: String.Index) -> Range<String.Index>? {
            let needle = Array(term.utf8)
            guard let lowered, needle.allSatisfy({ $0 < 0x80 }), !needle.isEmpty else {
                return text.range(of: term, options: [.caseInsensitive], range: from..<end)
            }
            let wanted = needle.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
            let utf8 = text.utf8
            let lower = utf8.distance(from: utf8.startIndex, to: from)
            let upper = utf8.distance(from: utf8.startIndex, to: end)
            guard upper - lower >= wanted.count else { return nil }
            var position = lower
            while position <= upper - wanted.count {
                if lowered[position] == wanted[0] {
                    var length = 1
                    while length < wanted.count && lowered[position + length] == wanted[length] { length += 1 }
                    if length == wanted.count {
                        let start = utf8.index(utf8.startIndex, offsetBy: position)
                        return start..<utf8.index(start, offsetBy: wanted.count)
                    }
                }
                position += 1
            }
            return nil
        }
    }

    /// At most `scannedBytes` of the text, cut at a character's end, and whether it was cut.
    static func bounded(_ form: String) -> (Substring, Bool) {
        let utf8 = form.utf8
        guard utf8.count > scannedBytes else { return (form[...], false) }
        var end = utf8.index(utf8.startIndex, offsetBy: scannedBytes)
        while end > utf8.startIndex && end.samePosition(in: form) == nil { end = utf8.index(before: end) }
        return (form[..<end], true)
    }
}

extension SearchQuery.Term {
    /// What a snippet marks for this term: its word, or the phrase as typed.
    var marked: String {
        switch match {
        case .word(let word), .prefix(let word), .infix(let word): word
        case .phrase: typed
        }
    }
}
