import Crypto

/// SHA-256 of one row's values.
struct RowDigest {
    private var hasher = SHA256()

    mutating func add(_ bytes: [UInt8]) { hasher.update(data: bytes) }

    /// Length first, so that two columns cannot trade bytes and hash alike.
    mutating func addCounted(_ bytes: [UInt8]) {
        add(withUnsafeBytes(of: UInt64(bytes.count).littleEndian, Array.init))
        add(bytes)
    }

    consuming func finish() -> [UInt8] { Array(hasher.finalize()) }
}

/// A digest of a table's rows that does not depend on their order: the sum of the rows'
/// SHA-256 in four 64-bit lanes, and the count. Each database can then be read in its
/// own order (no ORDER BY that two engines would have to sort alike).
struct TableDigest: Equatable, CustomStringConvertible, Sendable {
    private(set) var rows = 0
    private var lanes: [UInt64] = [0, 0, 0, 0]

    mutating func add(_ row: [TransferValue]) {
        var digest = RowDigest()
        for value in row { value.feed(&digest) }
        let bytes = digest.finish()
        for lane in 0..<4 {
            var word: UInt64 = 0
            for index in 0..<8 { word = word << 8 | UInt64(bytes[lane * 8 + index]) }
            lanes[lane] &+= word
        }
        rows += 1
    }

    var description: String {
        "\(rows) rows, " + lanes.map { String($0, radix: 16) }.joined(separator: ":")
    }
}
