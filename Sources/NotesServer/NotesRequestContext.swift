public import Foundation
public import Hummingbird
import NIOCore
public import NotesModel

/// Who is calling: resolved once per request by `IdentityMiddleware`.
public struct Identity: Sendable {
    /// The account acting; `nil` only for root without an account of its own, which
    /// may still call the admin endpoints.
    public var account: Account?
    /// May create accounts and issue tokens: the daemon's admin, or root on the socket.
    public var isAdmin: Bool
    /// The token the request presented (`nil` for peer credentials on the socket):
    /// revoking it ends what it opened.
    public var tokenID: String?
    /// When that token expires (`nil`: never, or no token).
    public var tokenExpiresAt: Date?
    /// The client's address, for counting guesses (`ClientAddress`); nil on the socket.
    public var client: String?

    public init(account: Account?, isAdmin: Bool, tokenID: String? = nil, client: String? = nil) {
        self.account = account
        self.isAdmin = isAdmin
        self.tokenID = tokenID
        self.client = client
    }
}

/// The one request context of the API: Hummingbird's core storage, the connection's
/// channel (for peer credentials on the Unix socket) and the caller's identity.
public struct NotesRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection: `SO_PEERCRED` on the Unix socket, the peer's address on TCP.
    let channel: any Channel
    public var identity: Identity?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
        self.identity = nil
    }

    public var maxUploadSize: Int { Limits.maxRequestBytes }

    /// The acting account, or `notAuthenticated` if the caller has none.
    func account() throws(NotesError) -> Account {
        guard let account = identity?.account else {
            throw NotesError(.notAuthenticated, "This call needs an account; present a token with --token or NOTES_TOKEN.")
        }
        return account
    }
}
