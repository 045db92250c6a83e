import Foundation

/// A note's title for listings, without a parser: the text of its first heading (ATX
/// `# Title` or setext `Title` over `===`/`---`), outside fenced code, in its first
/// 64 KiB, with emphasis, code and link markup taken off, at most `longestTitleBytes`.
/// The same title as the page's for notes as people write them, at a cost that a folder
/// of thousands can pay on every listing (the page itself is rendered by cmark-gfm, in a
/// worker with a budget).
///
/// Lines are found and judged on the UTF-8 bytes (every byte a rule looks at is ASCII);
/// only the heading's own text, at most `headingBytes` of it, becomes a string.
public enum MarkdownTitle {
    public static let scannedBytes = 64 * 1024
    /// A title longer than this is cut (at a character's end) and ends with "…": a
    /// heading of 65,000 characters is a paragraph, not a name to list.
    public static let longestTitleBytes = 512
    /// How much of a heading line is read for its title: enough for `longestTitleBytes`
    /// of text once link targets and markup are taken off.
    static let headingBytes = 4 * 1024

    public static func first(in text: String) -> String? {
        var text = text
        return text.withUTF8 { first(in: UnsafeBufferPointer(rebasing: $0.prefix(scannedBytes))) }
    }

    static func first(in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var fence: UInt8?
        var previous: Range<Int>?
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != ASCII.newline && bytes[end] != ASCII.carriageReturn { end += 1 }
            let next = end < bytes.count && bytes[end] == ASCII.carriageReturn && end + 1 < bytes.count && bytes[end + 1] == ASCII.newline ? end + 2 : end + 1
            defer { start = next }
            let line = start..<end
            var indent = 0
            while start + indent < end && bytes[start + indent] == ASCII.space { indent += 1 }
            let body = start + min(indent, 3)..<end
            if let open = fence {
                if indent < 4, hasPrefix(bytes, body, open) { fence = nil }
                previous = nil
                continue
            }
            if indent < 4, let opened = [ASCII.backtick, ASCII.tilde].first(where: { hasPrefix(bytes, body, $0) }) {
                fence = opened
                previous = nil
                continue
            }
            if indent < 4, let title = atx(bytes, body) {
                return title.isEmpty ? nil : plain(string(bytes, title))
            }
            if indent < 4, let paragraph = previous, !body.isEmpty,
                body.allSatisfy({ bytes[$0] == UInt8(ascii: "=") }) || body.allSatisfy({ bytes[$0] == UInt8(ascii: "-") })
            {
                let title = plain(string(bytes, trimmed(bytes, paragraph)))
                if !title.isEmpty { return title }
            }
            let blank = line.allSatisfy { bytes[$0] == ASCII.space || bytes[$0] == ASCII.tab }
            previous = blank || indent >= 4 ? nil : line
        }
        return nil
    }

    /// Whether `range` of `bytes` starts with three `byte`s (a fence).
    private static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ byte: UInt8) -> Bool {
        range.count >= 3 && (0..<3).allSatisfy { bytes[range.lowerBound + $0] == byte }
    }

    /// `range` without the spaces and tabs at either end.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper && (bytes[lower] == ASCII.space || bytes[lower] == ASCII.tab) { lower += 1 }
        while upper > lower && (bytes[upper - 1] == ASCII.space || bytes[upper - 1] == ASCII.tab) { upper -= 1 }
        return lower..<upper
    }

    /// The text of an ATX heading line (a range of `bytes`), or nil if `line` is not one.
    static func atx(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> Range<Int>? {
        var hashes = 0
        while line.lowerBound + hashes < line.upperBound && bytes[line.lowerBound + hashes] == ASCII.hash { hashes += 1 }
        guard (1...6).contains(hashes) else { return nil }
        let rest = line.lowerBound + hashes..<line.upperBound
        guard rest.isEmpty || bytes[rest.lowerBound] == ASCII.space || bytes[rest.lowerBound] == ASCII.tab else { return nil }
        let text = trimmed(bytes, rest)
        // A closing sequence of '#' (after a space) is not part of the text.
        var last = text.upperBound
        while last > text.lowerBound && bytes[last - 1] == ASCII.hash { last -= 1 }
        if last == text.lowerBound { return text.lowerBound..<text.lowerBound }
        if last < text.upperBound && (bytes[last - 1] == ASCII.space || bytes[last - 1] == ASCII.tab) { return trimmed(bytes, text.lowerBound..<last) }
        return text
    }

    /// At most `headingBytes` of `range` as a string, cut at a character's start.
    private static func string(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        var end = range.upperBound
        if range.count > headingBytes {
            end = range.lowerBound + headingBytes
            while end > range.lowerBound && bytes[end] & 0b1100_0000 == 0b1000_0000 { end -= 1 }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[range.lowerBound..<end]), as: UTF8.self)
    }

    /// `title` cut to `longestTitleBytes` at a character's end, with "…" if it was cut.
    public static func bounded(_ title: String) -> String {
        guard title.utf8.count > longestTitleBytes else { return title }
        var kept = ""
        for character in title {
            guard kept.utf8.count + character.utf8.count <= longestTitleBytes - "…".utf8.count else { break }
            kept.append(character)
        }
        return kept + "…"
    }

    /// `text` without inline markup (`MarkdownInline`), trimmed, at most
    /// `longestTitleBytes`.
    static func plain(_ text: String) -> String {
        var text = text
        var out: [UInt8] = []
        text.withUTF8 { MarkdownInline.plain($0, 0..<$0.count, into: &out) }
        // (Only ASCII bytes were dropped, and only whole runs between them: still UTF-8.)
        return bounded(String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespaces))
    }
}
