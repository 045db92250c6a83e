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

    public init(account: Account?, isAdmin: Bool) {
        self.account = account
        self.isAdmin = isAdmin
    }
}

/// The one request context of the API: Hummingbird's core storage, the connection's
/// channel (for peer credentials on the Unix socket) and the caller's identity.
public struct NotesRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection; used only to read `SO_PEERCRED` on the Unix socket.
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
