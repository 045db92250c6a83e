/// The form in which both the index and a query's words are written, so that one
/// trigram index answers substrings, word starts and Chinese and Japanese words alike.
///
/// A trigram index finds any string of three characters or more. Two kinds of search
/// need less: a word's start (`plan*`, or a two-letter word such as `go`) and a Chinese
/// or Japanese word, most of which are one or two characters. The search form writes a
/// marker (`wordStart`, a control character no note text keeps) before every word, and
/// around every Han, Hiragana and Katakana character, each of which counts as a word of
/// its own. A word start is then the marker and the word's first letters (`\u{1F}go`),
/// and a single character is the character between two markers: three characters for
/// the index in both cases. Runs of white space become one space, so that a phrase
/// matches across line breaks.
///
/// Letters keep their case: both backends compare without case (SQLite's trigram
/// tokenizer folds it, PostgreSQL's `ILIKE` too).
public enum SearchForm {
    public static let wordStart: Unicode.Scalar = "\u{1F}"
    /// The fewest characters a looked-up string may have: one trigram.
    public static let shortest = 3

    /// The search form of a note's indexed text (`SearchText.indexed`) or a query's words.
    public static func of(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var previous = Kind.space
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            let kind = Kind(scalar)
            switch kind {
            case .space:
                pendingSpace = !out.isEmpty
                previous = .space
                continue
            case .ideograph:
                if pendingSpace { out.append(" ") }
                if out.last != wordStart { out.append(wordStart) }
                out.append(scalar)
                out.append(wordStart)
            case .letter:
                if pendingSpace { out.append(" ") }
                if previous != .letter { out.append(wordStart) }
                out.append(scalar)
            case .other:
                if pendingSpace { out.append(" ") }
                out.append(scalar)
            }
            pendingSpace = false
            previous = kind
        }
        return String(out)
    }

    /// The text without its markers, as a reader sees it.
    public static func plain(_ form: Substring) -> String {
        String(String.UnicodeScalarView(form.unicodeScalars.filter { $0 != wordStart }))
    }

    /// Whether the string holds a Han, Hiragana or Katakana character.
    public static func hasIdeographs(_ text: String) -> Bool {
        text.unicodeScalars.contains { Kind($0) == .ideograph }
    }

    enum Kind: Equatable {
        case space, letter, ideograph, other

        init(_ scalar: Unicode.Scalar) {
            // (Control characters, the marker among them, are white space here: a note's
            // indexed text has none, and a query's must not forge a marker.)
            let properties = scalar.properties
            if properties.isWhitespace || scalar.value < 0x20 {
                self = .space
            } else if Self.isIdeograph(scalar) {
                self = .ideograph
            } else if properties.isAlphabetic || properties.numericType != nil || properties.generalCategory == .nonspacingMark
                || properties.generalCategory == .spacingMark
            {
                self = .letter
            } else {
                self = .other
            }
        }

        /// Han (with its extensions and compatibility forms), Hiragana and Katakana:
        /// scripts written without spaces, where a word is often one or two characters.
        static func isIdeograph(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x3040...0x30FF, 0x31F0...0x31FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0x20000...0x3FFFF:
                return true
            default:
                return false
            }
        }
    }
}

/// What the index keeps of one note: its title and its text, both in `SearchForm`.
public struct SearchDocument: Sendable, Equatable {
    public var title: String
    public var text: String

    /// The document of a note named `name` (its file name) holding `body`: the title is
    /// the note's first heading, else its name without `.md`.
    public init(name: String, body: String) {
        let title = MarkdownTitle.first(in: body) ?? (name.hasSuffix(".md") ? String(name.dropLast(3)) : name)
        self.title = SearchForm.of(title)
        self.text = SearchForm.of(SearchText.indexed(body))
    }

    /// The title as a reader sees it.
    public static func shownTitle(_ form: String) -> String { SearchForm.plain(form[...]) }
}
