/// The pieces of JSON that the hot paths write by hand (pages of changes, modify
/// answers), byte for byte what `NotesJSON.encoder()` writes: sorted keys, no spaces,
/// UTF-8 as is, only quotes, backslashes and control characters escaped.
///
/// Why by hand: Foundation's `JSONEncoder` managed about 25 MB/s here, so a page of
/// 2,000 notes took 60 ms, twice the time of reading it from SQLite.
public enum JSONBytes {
    /// `"name":`
    public static func key(_ name: StaticString, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    /// A JSON string of `value`.
    public static func string(_ value: String, into out: inout [UInt8]) {
        var value = value
        value.withUTF8 { string(UnsafeRawBufferPointer($0), into: &out) }
    }

    /// A JSON string of UTF-8 bytes (a column straight from SQLite, say). Runs with
    /// nothing to escape (nearly all of a note) are found eight bytes at a time and
    /// copied whole.
    public static func string(_ bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        if let base = bytes.baseAddress {
            let count = bytes.count
            var start = 0
            var index = 0
            while index < count {
                if index + 8 <= count, !needsEscape(base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                    index += 8
                    continue
                }
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                    index += 1
                    continue
                }
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
                index += 1
                start = index
                escape(byte, into: &out)
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<count]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// How many bytes `string(_:into:)` writes for `bytes`, quotes included, without
    /// writing them: lets a client size a request to the server's limit before encoding.
    public static func escapedLength(_ bytes: [UInt8]) -> Int {
        var length = bytes.count + 2
        for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09: length += 1
            default: length += 5
            }
        }
        return length
    }

    /// Whether any of eight bytes is a control character, a quote or a backslash (the
    /// classic "has zero byte" and "has byte less than" tests: exact about whether,
    /// not about which).
    @inline(__always)
    public static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let control = (word &- ones &* 0x20) & ~word & highs
        return (control | hasZero(word ^ (ones &* 0x22)) | hasZero(word ^ (ones &* 0x5C))) != 0
    }

    private static func escape(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
        case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
        case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
        case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
        case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
        default:
            let hex = Array("0123456789abcdef".utf8)
            out += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
        }
    }

    /// `"name":"2026-11-22T14:05:09.123Z",`
    public static func date(_ name: StaticString, secondsSince1970 seconds: Double, into out: inout [UInt8]) {
        key(name, into: &out)
        out.append(UInt8(ascii: "\""))
        ISO8601.append(secondsSince1970: seconds, to: &out)
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ","))
    }

    /// `"name":"value",`
    public static func field(_ name: StaticString, _ value: String, into out: inout [UInt8]) {
        key(name, into: &out)
        string(value, into: &out)
        out.append(UInt8(ascii: ","))
    }

    /// `[a,b,c]` with each element written by `element`.
    public static func array<T>(_ values: [T], into out: inout [UInt8], element: (T, inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            element(value, &out)
        }
        out.append(UInt8(ascii: "]"))
    }
}
