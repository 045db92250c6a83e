import Hummingbird
import NotesModel

/// Accounts and tokens: `whoami` for everyone, creation and tokens for the admin.
struct AccountController {
    let store: any RecordStore

    func addRoutes(to group: RouterGroup<NotesRequestContext>) {
        group.get("whoami") { _, context in
            JSONResponse.make(try context.account())
        }
        group.post("accounts") { request, context in
            try requireAdmin(context)
            var request = request
            let body = try await request.decodeJSON(API.CreateAccount.self)
            let account = try await store.createAccount(name: body.name, email: body.email, isAdmin: false)
            let token = try await store.issueToken(for: account.name, lifetime: nil)
            context.logger.notice("account created", metadata: ["account": "\(account.name)"])
            return JSONResponse.make(API.TokenIssued(name: account.name, token: token), status: .created)
        }
        group.post("accounts/:name/tokens") { request, context in
            try requireAdmin(context)
            let name = try context.parameters.require("name")
            var request = request
            let body = request.headers[.contentLength] == "0" ? API.IssueToken() : try await request.decodeJSON(API.IssueToken.self)
            if let lifetime = body.expiresIn { try Limits.validateLifetime(lifetime, field: "expiresIn", allowsZero: false) }
            let token = try await store.issueToken(for: name, lifetime: body.expiresIn)
            return JSONResponse.make(API.TokenIssued(name: name, token: token), status: .created)
        }
    }

    func requireAdmin(_ context: NotesRequestContext) throws(NotesError) {
        guard context.identity?.isAdmin == true else {
            throw NotesError(.permissionFailure, "Only the admin (the Unix user who runs notesd, or root) may manage accounts.")
        }
    }
}
