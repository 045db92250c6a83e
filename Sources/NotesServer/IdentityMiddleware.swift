#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Foundation
import Hummingbird
import NIOCore
import Synchronization
import NotesModel

/// Decides who the caller is, before any route runs.
///
/// A bearer token wins when present (socket or TCP). Otherwise, on the Unix socket,
/// the caller is the account named like its Unix user (peer credentials); root is
/// always admin. On TCP a token is required.
struct IdentityMiddleware: RouterMiddleware {
    typealias Context = NotesRequestContext
    let store: any RecordStore
    /// Unix users already resolved to accounts: saves a password-database lookup and
    /// a store read on every request of a busy client.
    let peers = PeerAccountCache()
    /// The peer user of each open connection: asked of the kernel once per connection.
    let connections = ConnectionPeers()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.identity = try await identify(request, channel: context.channel)
        return try await next(request, context)
    }

    func identify(_ request: Request, channel: any Channel) async throws(NotesError) -> Identity {
        if let header = request.headers[.authorization] {
            guard header.lowercased().hasPrefix("bearer "),
                  let account = try await store.authenticate(token: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces))
            else {
                throw NotesError(.notAuthenticated, "The token is not valid: it may be mistyped, revoked or expired. Ask your admin for a new one (`notes account token NAME`).")
            }
            return Identity(account: account, isAdmin: account.isAdmin)
        }
        let uid: uid_t?
        if let known = connections.uid(of: channel) {
            uid = known
        } else {
            uid = await PeerCredentials.uid(of: channel)
            if let uid { connections.remember(uid, for: channel) }
        }
        guard let uid else {
            throw NotesError(.notAuthenticated, "Connections over TCP need a token: pass --token or set NOTES_TOKEN.")
        }
        if let known = peers.identity(of: uid) { return known }
        let identity = try await identifyPeer(uid)
        peers.remember(identity, for: uid)
        return identity
    }

    func identifyPeer(_ uid: uid_t) async throws(NotesError) -> Identity {
        guard let user = PeerCredentials.userName(of: uid) else {
            throw NotesError(.notAuthenticated, "Unix user ID \(uid) has no name on this machine; use a token instead.")
        }
        let account = try await store.account(named: user)
        if account == nil && uid != 0 {
            throw NotesError(.notAuthenticated, "There is no account for the Unix user \(user); ask the admin to run `notes account create \(user)`.")
        }
        return Identity(account: account, isAdmin: uid == 0 || account?.isAdmin == true)
    }
}

/// Resolved peer identities by Unix user ID, each kept for 30 seconds: long enough to
/// spare a busy client's requests the lookups, short enough that a changed account
/// (admin flag, a new account for that user) is seen soon.
final class PeerAccountCache: Sendable {
    private let entries = Mutex<[uid_t: (identity: Identity, until: ContinuousClock.Instant)]>([:])
    static let lifetime = Duration.seconds(30)

    func identity(of uid: uid_t) -> Identity? {
        entries.withLock { entries in
            guard let entry = entries[uid], entry.until > .now else { return nil }
            return entry.identity
        }
    }

    func remember(_ identity: Identity, for uid: uid_t) {
        guard identity.account != nil else { return }
        entries.withLock { entries in
            if entries.count > 10_000 { entries.removeAll() }
            entries[uid] = (identity, .now + Self.lifetime)
        }
    }
}

/// The peer user ID of each open Unix-socket connection, so that `SO_PEERCRED` (a
/// round trip to the connection's event loop) is read once per connection, not once
/// per request. An entry holds its channel, so the channel's identity cannot be
/// reused by another connection while the entry exists; it is removed on close.
final class ConnectionPeers: Sendable {
    private let entries = Mutex<[ObjectIdentifier: (channel: any Channel, uid: uid_t)]>([:])

    func uid(of channel: any Channel) -> uid_t? {
        entries.withLock { $0[ObjectIdentifier(channel)]?.uid }
    }

    func remember(_ uid: uid_t, for channel: any Channel) {
        let key = ObjectIdentifier(channel)
        entries.withLock { $0[key] = (channel, uid) }
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.entries.withLock { _ = $0.removeValue(forKey: key) }
        }
    }
}
