/// Inline Markdown taken off a line's bytes: `[label](target)` becomes its label,
/// emphasis and code marks (`*`, `` ` ``) go (`_` stays: in names like `snake_case` it is
/// text), and so do control characters.
///
/// Linear in the line: where each `]` and `)` next comes is found in one backward pass,
/// so that no `[` scans ahead on its own (a heading of 65,000 `[` took 45 s).
enum MarkdownInline {
    static func plain(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, into out: inout [UInt8], tablePipes: Bool = false) {
        guard range.contains(where: { bytes[$0] == UInt8(ascii: "[") }) else {
            for index in range { append(bytes[index], to: &out, tablePipes: tablePipes) }
            return
        }
        let base = range.lowerBound
        let count = range.count
        // Offsets from `base`; `count` means none.
        var nextOpening = [Int](repeating: count, count: count + 1)
        var nextBracket = [Int](repeating: count, count: count + 1)
        var nextParenthesis = [Int](repeating: count, count: count + 1)
        for offset in stride(from: count - 1, through: 0, by: -1) {
            let byte = bytes[base + offset]
            nextOpening[offset] = byte == UInt8(ascii: "[") ? offset : nextOpening[offset + 1]
            nextBracket[offset] = byte == UInt8(ascii: "]") ? offset : nextBracket[offset + 1]
            nextParenthesis[offset] = byte == UInt8(ascii: ")") ? offset : nextParenthesis[offset + 1]
        }
        // Copies `span` without markup. A `]` closes the last `[` before it (as in
        // CommonMark, a link holds no link), so a label holds no bracket: its copy nests
        // one call deep, and every byte is looked at once.
        func copy(_ span: Range<Int>) {
            var offset = span.lowerBound
            while offset < span.upperBound {
                let byte = bytes[base + offset]
                if byte == UInt8(ascii: "[") {
                    let close = nextBracket[offset + 1]
                    if nextOpening[offset + 1] > close, close + 1 < span.upperBound, bytes[base + close + 1] == UInt8(ascii: "("),
                        nextParenthesis[close + 1] < span.upperBound
                    {
                        copy(offset + 1..<close)
                        offset = nextParenthesis[close + 1] + 1
                        continue
                    }
                }
                append(byte, to: &out, tablePipes: tablePipes)
                offset += 1
            }
        }
        copy(0..<count)
    }

    /// The bytes of `range` without control characters.
    static func copyText(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, into out: inout [UInt8]) {
        for index in range where !isControl(bytes[index]) { out.append(bytes[index]) }
    }

    private static func append(_ byte: UInt8, to out: inout [UInt8], tablePipes: Bool) {
        switch byte {
        case UInt8(ascii: "*"), UInt8(ascii: "`"): return
        case UInt8(ascii: "|") where tablePipes: out.append(ASCII.space)
        default: if !isControl(byte) { out.append(byte) }
        }
    }

    /// C0 controls but the tab, and DEL (bytes of a multi-byte character are all ≥ 0x80).
    private static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != ASCII.tab) || byte == 0x7F
    }
}
