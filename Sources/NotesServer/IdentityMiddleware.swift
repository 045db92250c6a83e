import Hummingbird
import NIOCore
import NotesModel

/// Decides who the caller is, before any route runs.
///
/// A bearer token wins when present (socket or TCP). Otherwise, on the Unix socket,
/// the caller is the account named like its Unix user (peer credentials); root is
/// always admin. On TCP a token is required.
struct IdentityMiddleware: RouterMiddleware {
    typealias Context = NotesRequestContext
    let store: any RecordStore

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
        guard let uid = await PeerCredentials.uid(of: channel) else {
            throw NotesError(.notAuthenticated, "Connections over TCP need a token: pass --token or set NOTES_TOKEN.")
        }
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
