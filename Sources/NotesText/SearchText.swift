import Foundation

/// The text of a note that search indexes: what a reader sees, without the Markdown
/// that only marks it up, so that `**plan**` is found as `plan` and a link as its label.
///
/// Block markers go (heading hashes, quote marks, list bullets and numbers, task boxes,
/// fence lines, rules and table separators, table pipes); code inside blocks stays as
/// written, since people search for names in it; inline emphasis and code marks go and a
/// link or image keeps its label, not its target. Control characters (NUL included: a
/// body is bytes, and may hold them) are dropped, and the result is in Unicode's NFKC
/// form, so that full-width letters, ligatures and decomposed accents match what people
/// type. One pass over the bytes, whatever the note holds.
public enum SearchText {
    public static func indexed(_ markdown: String) -> String {
        var markdown = markdown
        let bytes = markdown.withUTF8 { prepare($0) }
        return normalized(String(decoding: bytes, as: UTF8.self))
    }

    /// NFKC, which ASCII text already is (most notes: the normalizer costs more than
    /// the rest of the indexing).
    public static func normalized(_ text: String) -> String {
        text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCompatibilityMapping
    }

    static func prepare(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var fence: UInt8?
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != ASCII.newline { end += 1 }
            var lineEnd = end
            if lineEnd > start && bytes[lineEnd - 1] == ASCII.carriageReturn { lineEnd -= 1 }
            defer { start = end + 1 }
            var indent = 0
            while start + indent < lineEnd && bytes[start + indent] == ASCII.space { indent += 1 }
            let body = start + min(indent, 3)..<lineEnd
            if indent < 4, let marker = fenceMarker(bytes, body) {
                if fence == nil {
                    fence = marker
                } else if fence == marker {
                    fence = nil
                }
                continue
            }
            if fence != nil || indent >= 4 {
                // Code, as written.
                MarkdownInline.copyText(bytes, start..<lineEnd, into: &out)
                out.append(ASCII.newline)
                continue
            }
            if onlyMarkup(bytes, body) { continue }
            MarkdownInline.plain(bytes, afterBlockMarkers(bytes, body)..<lineEnd, into: &out, tablePipes: true)
            out.append(ASCII.newline)
        }
        return out
    }

    /// The character of a fence line (three or more of '`' or '~'), or nil.
    private static func fenceMarker(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> UInt8? {
        guard line.count >= 3, let first = line.first.map({ bytes[$0] }), first == ASCII.backtick || first == ASCII.tilde else { return nil }
        return (line.lowerBound..<line.lowerBound + 3).allSatisfy { bytes[$0] == first } ? first : nil
    }

    /// Whether a line holds nothing to read: a rule, a setext underline, a table's
    /// separator row.
    private static func onlyMarkup(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> Bool {
        !line.isEmpty && line.allSatisfy { Self.ruleBytes.contains(bytes[$0]) }
    }
    private static let ruleBytes: Set<UInt8> = Set("-=*_|: \t".utf8)

    /// Where a line's text starts after its quote marks, heading hashes, list marker and
    /// task box.
    private static func afterBlockMarkers(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> Int {
        var index = line.lowerBound
        func skipSpaces() {
            while index < line.upperBound && (bytes[index] == ASCII.space || bytes[index] == ASCII.tab) { index += 1 }
        }
        func spaceAfter(_ position: Int) -> Bool {
            position == line.upperBound || bytes[position] == ASCII.space || bytes[position] == ASCII.tab
        }
        skipSpaces()
        while index < line.upperBound && bytes[index] == UInt8(ascii: ">") {
            index += 1
            skipSpaces()
        }
        var hashes = 0
        while index + hashes < line.upperBound && bytes[index + hashes] == UInt8(ascii: "#") { hashes += 1 }
        if (1...6).contains(hashes) && spaceAfter(index + hashes) {
            index += hashes
            skipSpaces()
            return index
        }
        if index < line.upperBound, [UInt8(ascii: "-"), UInt8(ascii: "*"), UInt8(ascii: "+")].contains(bytes[index]), spaceAfter(index + 1) {
            index += 1
            skipSpaces()
        } else {
            var digits = 0
            while index + digits < line.upperBound && digits < 9 && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + digits]) { digits += 1 }
            let mark = index + digits
            if digits > 0 && mark < line.upperBound && (bytes[mark] == UInt8(ascii: ".") || bytes[mark] == UInt8(ascii: ")")) && spaceAfter(mark + 1) {
                index = mark + 1
                skipSpaces()
            }
        }
        // A task box: "[ ] ", "[x] ".
        if index + 3 <= line.upperBound, bytes[index] == UInt8(ascii: "["), bytes[index + 2] == UInt8(ascii: "]"),
            [ASCII.space, UInt8(ascii: "x"), UInt8(ascii: "X")].contains(bytes[index + 1]), spaceAfter(index + 3)
        {
            index += 3
            skipSpaces()
        }
        return index
    }
}

/// Bytes the Markdown rules look at: all ASCII, so a rule never splits a character.
enum ASCII {
    static let newline = UInt8(ascii: "\n")
    static let carriageReturn = UInt8(ascii: "\r")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let hash = UInt8(ascii: "#")
    static let backtick = UInt8(ascii: "`")
    static let tilde = UInt8(ascii: "~")
}
