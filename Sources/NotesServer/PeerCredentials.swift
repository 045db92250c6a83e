#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import NIOCore

/// The Unix user at the other end of a Unix-socket connection, from `SO_PEERCRED`:
/// the kernel vouches for it, so no password or token is needed on the socket.
enum PeerCredentials {
    /// The peer's user ID, or `nil` when the channel is not a Unix socket.
    static func uid(of channel: any Channel) async -> uid_t? {
        try? await uidFuture(of: channel)?.get()
    }

    /// The same, as a future completed on the channel's event loop (for channel
    /// handlers); `nil` when the channel is not a Unix socket.
    static func uidFuture(of channel: any Channel) -> EventLoopFuture<uid_t>? {
        guard case .unixDomainSocket? = channel.localAddress, let provider = channel as? any SocketOptionProvider else {
            return nil
        }
        #if os(Linux)
            let credentials: EventLoopFuture<PeerCredential> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(peerCredentialOption))
            return credentials.map(\.uid)
        #else
            return nil
        #endif
    }

    /// Linux's `struct ucred` (`<sys/socket.h>`, hidden behind `_GNU_SOURCE` from Swift):
    /// three 32-bit fields, so this struct has the same size and layout.
    struct PeerCredential: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// `SO_PEERCRED` on Linux (asm-generic/socket.h).
    static let peerCredentialOption: Int32 = 17

    /// The login name of a user ID, from the password database.
    static func userName(of uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else {
            return nil
        }
        return String(cString: name)
    }
}
