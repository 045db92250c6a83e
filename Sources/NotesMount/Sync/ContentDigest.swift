import Crypto

/// SHA-256 of a file's content: what an upload sent, to know it again on notesd.
enum ContentDigest {
    static func of(_ content: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: content))
    }
}
