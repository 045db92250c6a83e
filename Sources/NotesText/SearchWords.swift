/// How text becomes the words a search index holds, the same for the index and for a
/// query, so that both backends (and the offline replica) look up the same words.
///
/// A word is a run of letters, digits and combining marks, lowercased; every Han,
/// Hiragana and Katakana character is a word of its own, since those scripts are
/// written without spaces and most of their words are one or two characters: a
/// Chinese or Japanese word is then a phrase of its characters. Everything else (white
/// space, punctuation, symbols) separates words. A word longer than `longestWord`
/// characters (a hash, a blob of base64) is not a word anyone types, and is left out.
public enum SearchWords {
    public static let longestWord = 64
    /// Bytes of words kept per note (a note's words past it are not indexed): what
    /// PostgreSQL's `tsvector` of one note holds comfortably.
    public static let mostBytes = 512 * 1024

    /// The words of `text` (in Unicode's NFKC form already), in order.
    ///
    /// Read as UTF-8 bytes: ASCII (most of most notes) is judged and lowercased a byte
    /// at a time, and only other characters are decoded and looked up in Unicode's
    /// tables; building words a scalar at a time cost most of indexing's time.
    public static func tokens(_ text: String) -> [String] {
        var tokens: [String] = []
        var text = text
        text.withUTF8 { bytes in
            var word: [UInt8] = []
            word.reserveCapacity(4 * longestWord)
            var length = 0
            var onlyASCII = true
            func flush() {
                if !word.isEmpty && length <= longestWord {
                    let made = String(decoding: word, as: UTF8.self)
                    tokens.append(onlyASCII ? made : made.lowercased())
                }
                word.removeAll(keepingCapacity: true)
                length = 0
                onlyASCII = true
            }
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte < 0x80 {
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                        word.append(byte)
                        length += 1
                    case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                        // ASCII is lowercased here; other letters by the standard library at the end.
                        word.append(byte + 0x20)
                        length += 1
                    default:
                        flush()
                    }
                    index += 1
                    continue
                }
                let (scalar, size) = UTF8Scalar.decode(bytes, at: index)
                switch Kind(scalar) {
                case .letter:
                    word.append(contentsOf: bytes[index..<index + size])
                    onlyASCII = false
                    length += 1
                case .ideograph:
                    flush()
                    tokens.append(String(decoding: bytes[index..<index + size], as: UTF8.self))
                case .other:
                    flush()
                }
                index += size
            }
            flush()
        }
        return tokens
    }

    /// White space collapsed to single spaces, as results show text.
    public static func collapsed(_ text: String) -> String {
        var text = text
        return text.withUTF8 { bytes in
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            var space = false
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                var size = 1
                var isSpace = byte <= 0x20
                if byte >= 0x80 {
                    let scalar: Unicode.Scalar
                    (scalar, size) = UTF8Scalar.decode(bytes, at: index)
                    isSpace = scalar.properties.isWhitespace
                }
                if isSpace {
                    space = !out.isEmpty
                } else {
                    if space { out.append(ASCII.space) }
                    space = false
                    out.append(contentsOf: bytes[index..<index + size])
                }
                index += size
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// Whether `word` is one Han, Hiragana or Katakana character.
    public static func isIdeograph(_ word: String) -> Bool {
        word.unicodeScalars.count == 1 && word.unicodeScalars.first.map { Kind($0) == .ideograph } == true
    }

    enum Kind: Equatable {
        case letter, ideograph, other

        init(_ scalar: Unicode.Scalar) {
            // ASCII without the Unicode tables (a lookup each, the most of indexing's time).
            let value = scalar.value
            if value < 0x80 {
                self = (value >= 0x61 && value <= 0x7A) || (value >= 0x41 && value <= 0x5A) || (value >= 0x30 && value <= 0x39) ? .letter : .other
                return
            }
            let properties = scalar.properties
            if Self.isIdeograph(scalar) {
                self = .ideograph
            } else if properties.isAlphabetic || properties.numericType != nil || properties.generalCategory == .nonspacingMark
                || properties.generalCategory == .spacingMark
            {
                self = .letter
            } else {
                self = .other
            }
        }

        /// Han (with its extensions and compatibility forms), Hiragana and Katakana.
        static func isIdeograph(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x3041...0x3096, 0x30A1...0x30FA, 0x31F0...0x31FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0x20000...0x3FFFF:
                return true
            default:
                return false
            }
        }
    }
}

/// What the index keeps of one note: its title's and text's words (space-separated,
/// as `SearchWords` makes them), and the words a query may find inside (`vocabulary`:
/// distinct words of three characters or more).
public struct SearchDocument: Sendable, Equatable {
    public var titleWords: String
    public var words: String
    public var vocabulary: [String]

    /// The document of a note named `name` (its file name) holding `body`.
    public init(name: String, body: String) {
        let titleTokens = SearchWords.tokens(Self.title(name: name, body: body))
        var tokens: [String] = []
        var bytes = 0
        for token in SearchWords.tokens(SearchText.indexed(body)) {
            bytes += token.utf8.count + 1
            if bytes > SearchWords.mostBytes { break }
            tokens.append(token)
        }
        titleWords = titleTokens.joined(separator: " ")
        words = tokens.joined(separator: " ")
        // In the order first used: the same every time, without sorting.
        var seen = Set<String>()
        vocabulary = (titleTokens + tokens).filter { $0.unicodeScalars.count >= 3 && !SearchWords.isIdeograph($0) && seen.insert($0).inserted }
    }

    /// A note's title as search shows and indexes it: its first heading, else its name
    /// without `.md`.
    public static func title(name: String, body: String) -> String {
        SearchWords.collapsed(SearchText.normalized(MarkdownTitle.first(in: body) ?? (name.hasSuffix(".md") ? String(name.dropLast(3)) : name)))
    }

    /// The text a result's snippet is cut from: the indexed text of the note's first
    /// `SearchSnippet.scannedBytes` (cut at a line's end), white space collapsed.
    public static func shownText(_ body: String) -> String {
        shownText(body, upTo: SearchSnippet.scannedBytes).text
    }

    /// The shown text of the note's first `bytes` (cut at a line's end), and whether
    /// that is the whole note. A prefix cut at a line's end gives the start of the
    /// whole note's shown text: Markdown is read a line at a time, front to back.
    static func shownText(_ body: String, upTo bytes: Int) -> (text: String, isWhole: Bool) {
        let utf8 = body.utf8
        guard utf8.count > bytes else { return (SearchWords.collapsed(SearchText.indexed(body)), true) }
        var end = utf8.index(utf8.startIndex, offsetBy: bytes)
        while end > utf8.startIndex && utf8[end] != UInt8(ascii: "\n") { end = utf8.index(before: end) }
        return (SearchWords.collapsed(SearchText.indexed(String(body[..<end]))), false)
    }
}

/// One character of valid UTF-8 (a `String`'s bytes), decoded without the standard
/// library's general decoder.
enum UTF8Scalar {
    /// The scalar whose first byte is at `index`, and its length in bytes.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (Unicode.Scalar, Int) {
        let lead = UInt32(bytes[index])
        let size = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
        var value = size == 1 ? lead : lead & (0x7F >> UInt32(size))
        for offset in 1..<size {
            value = value << 6 | UInt32(bytes[index + offset] & 0x3F)
        }
        return (Unicode.Scalar(value) ?? "\u{FFFD}", size)
    }
}
