#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import Hummingbird
import NIOCore
import Synchronization
import NotesModel
import NotesWork

/// Decides who the caller is, before any route runs.
///
/// A bearer token wins when present (socket or TCP). Otherwise, on the Unix socket,
/// the caller is the account named like its Unix user (peer credentials); root is
/// always admin. On TCP a token is required.
struct IdentityMiddleware: RouterMiddleware {
    typealias Context = NotesRequestContext
    let store: any RecordStore
    /// Unix users already resolved to accounts: saves a password-database lookup and
    /// a store read on every request of a busy client. Shared with the account routes,
    /// which empty it when an account is disabled.
    let peers: PeerAccountCache
    /// The peer user of each open connection: asked of the kernel once per connection.
    let connections = ConnectionPeers()
    /// Where requests come from, for counting bad tokens.
    let clients: ClientAddress
    /// Bad tokens per client address in the current minute.
    let badTokens = FailureCounter(limit: Limits.tokenFailuresPerClient, window: .seconds(60))

    init(store: any RecordStore, peers: PeerAccountCache, clients: ClientAddress) {
        self.store = store
        self.peers = peers
        self.clients = clients
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let client = clients.of(request, channel: context.channel)
        // (The token's check is charged to where it came from: no account is known yet.)
        context.identity = try await WorkCaller.$bound.withValue("client:\(client ?? "socket")") {
            try await identify(request, channel: context.channel, client: client)
        }
        context.identity?.client = client
        return try await next(request, context)
    }

    func identify(_ request: Request, channel: any Channel, client: String?) async throws(NotesError) -> Identity {
        if let header = request.headers[.authorization] {
            // A client that keeps presenting bad tokens is guessing: until the minute is
            // over, its bad tokens get 429 instead of 401 (a valid token still passes:
            // neighbours behind one NAT are not locked out). On the socket each Unix user
            // is counted apart.
            let counted: String
            if let client { counted = client } else { counted = "uid:\(await peerUID(channel).map(String.init) ?? "unknown")" }
            guard header.lowercased().hasPrefix("bearer "),
                let authenticated = try await store.authenticate(token: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces))
            else {
                if let wait = badTokens.wait(for: counted) {
                    throw NotesError(.requestRateLimited, "Too many invalid tokens from this address; try again in \(wait) seconds.", retryAfter: wait)
                }
                badTokens.fail(counted)
                throw NotesError(
                    .notAuthenticated,
                    "The token is not valid: it may be mistyped, revoked or expired, or its account disabled. Ask your admin for a new one (`notes account token NAME`).")
            }
            var identity = Identity(account: authenticated.account, isAdmin: authenticated.account.isAdmin, tokenID: authenticated.tokenID)
            identity.tokenExpiresAt = authenticated.expiresAt
            return identity
        }
        guard let uid = await peerUID(channel) else {
            throw NotesError(.notAuthenticated, "Connections over TCP need a token: pass --token or set NOTES_TOKEN.")
        }
        if let known = peers.identity(of: uid) { return known }
        let identity = try await identifyPeer(uid)
        peers.remember(identity, for: uid)
        return identity
    }

    /// The Unix user on the other end of a socket connection (nil on TCP), asked of the
    /// kernel once per connection.
    func peerUID(_ channel: any Channel) async -> uid_t? {
        if let known = connections.uid(of: channel) { return known }
        let uid = await PeerCredentials.uid(of: channel)
        if let uid { connections.remember(uid, for: channel) }
        return uid
    }

    func identifyPeer(_ uid: uid_t) async throws(NotesError) -> Identity {
        guard let user = PeerCredentials.userName(of: uid) else {
            throw NotesError(.notAuthenticated, "Unix user ID \(uid) has no name on this machine; use a token instead.")
        }
        let account = try await store.account(named: user)
        if account == nil && uid != 0 {
            throw NotesError(.notAuthenticated, "There is no account for the Unix user \(user); ask the admin to run `notes account create \(user)`.")
        }
        if let account, account.isDisabled {
            throw NotesError(.notAuthenticated, "The account \(account.name) is disabled; ask the admin to enable it.")
        }
        return Identity(account: account, isAdmin: uid == 0 || account?.isAdmin == true)
    }
}

/// Failures per key in fixed windows, in memory: over `limit` in a window, `wait` says
/// how many seconds are left of it. Bounded: it forgets everything past 100,000 keys.
final class FailureCounter: Sendable {
    private let entries = Mutex<[String: (start: ContinuousClock.Instant, count: Int)]>([:])
    let limit: Int
    let window: Duration

    init(limit: Int, window: Duration) {
        self.limit = limit
        self.window = window
    }

    func wait(for key: String) -> Int? {
        entries.withLock { entries in
            guard let entry = entries[key], entry.count >= limit else { return nil }
            let left = entry.start + window - .now
            guard left > .zero else {
                entries[key] = nil
                return nil
            }
            return max(1, Int(left.components.seconds) + 1)
        }
    }

    func fail(_ key: String) {
        entries.withLock { entries in
            if entries.count > 100_000 { entries.removeAll() }
            let now = ContinuousClock.now
            if let entry = entries[key], entry.start + window > now {
                entries[key] = (entry.start, entry.count + 1)
            } else {
                entries[key] = (now, 1)
            }
        }
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

    /// Forgets every entry of `account` (disabled, or changed by the admin), so that
    /// its next request is decided afresh.
    func forget(account: String) {
        entries.withLock { entries in entries = entries.filter { $0.value.identity.account?.name != account } }
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
