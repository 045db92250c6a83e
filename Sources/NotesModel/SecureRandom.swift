/// Unguessable identifiers for tokens, share URLs and share IDs.
///
/// `SystemRandomNumberGenerator` reads the kernel's CSPRNG (`getrandom` on Linux),
/// which is what a bearer token or share URL needs; no seeded generator may be used.
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// `count` random bytes as unpadded base64url (URL- and file-name-safe).
    public static func token(bytes count: Int) -> String {
        base64URL(bytes(count))
    }

    /// `count` random bytes as lowercase hex.
    public static func hex(bytes count: Int) -> String {
        bytes(count).map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
        }.joined()
    }

    /// Unpadded base64url of `bytes`.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var out = ""
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let b0 = UInt32(bytes[index])
            let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let triple = b0 << 16 | b1 << 8 | b2
            let chars = bytes.count - index >= 3 ? 4 : bytes.count - index + 1
            for position in 0..<chars {
                out.append(alphabet[Int((triple >> UInt32(18 - 6 * position)) & 0x3F)])
            }
            index += 3
        }
        return out
    }
}
