package import Foundation
import Crypto

/// What a browser keeps after typing a public link's password: a cookie value that
/// proves it, `EXPIRY.MAC`, so that the pages behind the link open without asking again.
///
/// The MAC is HMAC-SHA256 keyed by the link's stored password hash, over the link's URL
/// token and the pass's expiry. Nothing is stored per visitor, every notesd on one
/// database checks it alike, and it ends by itself when the link changes: a new URL
/// token (rotation) or a new password (a new salt and hash) makes every earlier pass
/// fail, and the link's own expiry is checked before the pass is.
package enum LinkPass {
    /// How long a pass lasts when the link does not expire sooner.
    package static let lifetime: TimeInterval = 30 * 86_400

    /// A pass for `urlToken` valid until `expires` (whole seconds).
    package static func make(urlToken: String, passwordHash: Data, expires: Date) -> String {
        let seconds = Int64(expires.timeIntervalSince1970.rounded(.down))
        return "\(seconds).\(mac(urlToken: urlToken, passwordHash: passwordHash, expires: seconds))"
    }

    /// When a pass made now should end: after `lifetime`, or with the link.
    package static func expiry(now: Date, linkExpires: Date?) -> Date {
        min(now.addingTimeInterval(lifetime), linkExpires ?? .distantFuture)
    }

    /// Whether `pass` was made for this link and password, and has not expired.
    package static func isValid(_ pass: String?, urlToken: String, passwordHash: Data, now: Date) -> Bool {
        guard let pass, pass.utf8.count <= 200 else { return false }
        let parts = pass.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let seconds = Int64(parts[0]), Double(seconds) > now.timeIntervalSince1970 else { return false }
        let expected = mac(urlToken: urlToken, passwordHash: passwordHash, expires: seconds)
        return TokenSecrets.constantTimeEqual(Array(expected.utf8), Array(parts[1].utf8))
    }

    private static func mac(urlToken: String, passwordHash: Data, expires: Int64) -> String {
        let message = Array("notes public page pass\u{0}\(urlToken)\u{0}\(expires)".utf8)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: passwordHash))
        return code.map { String(format: "%02x", $0) }.joined()
    }
}
