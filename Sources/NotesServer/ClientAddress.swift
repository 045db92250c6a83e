import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Who is on the other end, for counting guesses: the peer's IP address, or behind a
/// proxy that notesd was told to trust (`--trusted-proxy`), the address that proxy
/// put last in `X-Forwarded-For`. Anyone can send that header, so it is believed only
/// from a trusted proxy. Unix-socket callers have no address (`nil`): they are counted
/// by account.
public struct ClientAddress: Sendable {
    /// IP addresses of the reverse proxies in front of notesd.
    public let trustedProxies: Set<String>

    public init(trustedProxies: Set<String> = []) {
        self.trustedProxies = trustedProxies
    }

    func of(_ request: Request, channel: any Channel) -> String? {
        guard let peer = channel.remoteAddress?.ipAddress else { return nil }
        guard trustedProxies.contains(peer), let header = request.headers[.xForwardedFor] else { return peer }
        // The rightmost address that is not one of our proxies is the one a trusted
        // proxy saw; addresses to its left were written by the client and prove nothing.
        let hops = header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return hops.last { !trustedProxies.contains($0) } ?? peer
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
