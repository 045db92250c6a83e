import Foundation

/// A note's title for listings, without a parser: the text of its first heading (ATX
/// `# Title` or setext `Title` over `===`/`---`), outside fenced code, in its first
/// 64 KiB, with emphasis, code and link markup taken off. The same title as the page's
/// for notes as people write them, at a cost that a folder of thousands can pay on
/// every listing (the page itself is rendered by cmark-gfm, in a worker with a budget).
public enum MarkdownTitle {
    public static let scannedBytes = 64 * 1024

    public static func first(in text: String) -> String? {
        let head = text.utf8.count > scannedBytes ? String(decoding: text.utf8.prefix(scannedBytes), as: UTF8.self) : text
        var fence: String?
        var previous: Substring?
        for line in head.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            let indent = line.prefix { $0 == " " }.count
            let body = line.dropFirst(min(indent, 3))
            if let open = fence {
                if indent < 4, body.hasPrefix(open) { fence = nil }
                previous = nil
                continue
            }
            if indent < 4, body.hasPrefix("```") || body.hasPrefix("~~~") {
                fence = String(body.prefix(3))
                previous = nil
                continue
            }
            if indent < 4, let title = atx(body) { return title.isEmpty ? nil : plain(title) }
            if indent < 4, let paragraph = previous, !body.isEmpty, body.allSatisfy({ $0 == "=" }) || body.allSatisfy({ $0 == "-" }) {
                let title = plain(paragraph.trimmingCharacters(in: .whitespaces))
                if !title.isEmpty { return title }
            }
            let blank = line.allSatisfy { $0 == " " || $0 == "\t" }
            previous = blank || indent >= 4 ? nil : Substring(line)
        }
        return nil
    }

    /// The text of an ATX heading line, or nil if `line` is not one.
    static func atx(_ line: Substring) -> String? {
        let hashes = line.prefix { $0 == "#" }.count
        guard (1...6).contains(hashes) else { return nil }
        let rest = line.dropFirst(hashes)
        guard rest.isEmpty || rest.first == " " || rest.first == "\t" else { return nil }
        var text = rest.trimmingCharacters(in: .whitespaces)
        // A closing sequence of '#' (after a space) is not part of the text.
        if let last = text.lastIndex(where: { $0 != "#" }), text[text.index(after: last)...].count > 0, text[last] == " " {
            text = String(text[...last]).trimmingCharacters(in: .whitespaces)
        } else if text.allSatisfy({ $0 == "#" }) {
            text = ""
        }
        return text
    }

    /// `text` without inline markup: `[label](url)` → label, and `*` and `` ` `` dropped
    /// (`_` stays: in names like `snake_case` it is text).
    ///
    /// Linear in the text: where each `]` and `)` next comes is found in one backward
    /// pass, so that no `[` scans ahead on its own (a heading of 65,000 `[` took 45 s).
    static func plain(_ text: String) -> String {
        let bytes = Array(text.utf8)
        let count = bytes.count
        var nextOpening = [Int](repeating: count, count: count + 1)
        var nextBracket = [Int](repeating: count, count: count + 1)
        var nextParenthesis = [Int](repeating: count, count: count + 1)
        for index in stride(from: count - 1, through: 0, by: -1) {
            nextOpening[index] = bytes[index] == UInt8(ascii: "[") ? index : nextOpening[index + 1]
            nextBracket[index] = bytes[index] == UInt8(ascii: "]") ? index : nextBracket[index + 1]
            nextParenthesis[index] = bytes[index] == UInt8(ascii: ")") ? index : nextParenthesis[index + 1]
        }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        // Copies `range` without markup. A `]` closes the last `[` before it (as in
        // CommonMark, a link holds no link), so a label holds no bracket: its copy nests
        // one call deep, and every byte is looked at once.
        func copy(_ range: Range<Int>) {
            var index = range.lowerBound
            while index < range.upperBound {
                let byte = bytes[index]
                if byte == UInt8(ascii: "[") {
                    let close = nextBracket[index + 1]
                    if nextOpening[index + 1] > close, close + 1 < range.upperBound, bytes[close + 1] == UInt8(ascii: "("),
                        nextParenthesis[close + 1] < range.upperBound
                    {
                        copy(index + 1..<close)
                        index = nextParenthesis[close + 1] + 1
                        continue
                    }
                }
                if byte != UInt8(ascii: "*") && byte != UInt8(ascii: "`") { out.append(byte) }
                index += 1
            }
        }
        copy(0..<count)
        // (Only ASCII bytes were dropped, and only whole runs between them: still UTF-8.)
        return String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespaces)
    }
}
