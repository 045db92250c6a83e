import Hummingbird
import NotesModel

/// Accounts and tokens: `whoami` and one's own tokens for everyone; creating,
/// listing and disabling accounts, and their tokens, for the admin.
struct AccountController {
    let store: any RecordStore
    let notifier: ChangeNotifier
    let peers: PeerAccountCache
    /// What sign-in links start with (`--public-url`).
    let publicURL: String

    func addRoutes(to group: RouterGroup<NotesRequestContext>) {
        group.get("whoami") { _, context in
            JSONResponse.make(try context.account())
        }
        group.get("accounts") { _, context in
            try requireAdmin(context)
            return JSONResponse.make(API.Accounts(accounts: try await store.accounts()))
        }
        group.post("accounts") { request, context in
            try requireAdmin(context)
            var request = request
            let body = try await request.decodeJSON(API.CreateAccount.self)
            let lifetime = try body.signInLink.map { link throws(NotesError) in try SignInCode.lifetime(link.expiresIn) }
            let account = try await store.createAccount(name: body.name, email: body.email, isAdmin: false)
            context.logger.notice("account created", metadata: ["account": "\(account.name)"])
            if let lifetime {
                // The admin gets a link, never a token: the token is made on the machine
                // that opens the link.
                return JSONResponse.make(try await makeSignInLink(for: account.name, lifetime: lifetime, context), status: .created)
            }
            let issued = try await store.issueToken(for: account.name, lifetime: nil, label: "issued with the account")
            return JSONResponse.make(API.TokenIssued(name: account.name, token: issued.token, id: issued.info.id), status: .created)
        }
        group.post("accounts/:name/sign-in-links") { request, context in
            try requireAdmin(context)
            let name = try context.parameters.require("name")
            var request = request
            let body = request.headers[.contentLength] == "0" ? API.MakeSignInLink() : try await request.decodeJSON(API.MakeSignInLink.self)
            let lifetime = try SignInCode.lifetime(body.expiresIn)
            return JSONResponse.make(try await makeSignInLink(for: name, lifetime: lifetime, context), status: .created)
        }
        group.get("accounts/:name/sign-in-links") { _, context in
            try requireAdmin(context)
            let name = try context.parameters.require("name")
            guard try await store.account(named: name) != nil else {
                throw NotesError(.unknownItem, "\(name) is not an account on this server.")
            }
            return JSONResponse.make(API.SignInLinks(links: try await store.signInLinks(of: name)))
        }
        group.delete("sign-in-links/:id") { _, context in
            try requireAdmin(context)
            let revoked = try await store.revokeSignInLink(id: try context.parameters.require("id"))
            context.logger.notice("sign-in link revoked", metadata: ["account": "\(revoked.account)", "link": "\(revoked.id)"])
            return JSONResponse.make(revoked)
        }
        group.patch("accounts/:name") { request, context in
            try requireAdmin(context)
            let name = try context.parameters.require("name")
            var request = request
            let body = try await request.decodeJSON(API.UpdateAccount.self)
            if body.disabled && name == context.identity?.account?.name {
                throw NotesError(.invalidArguments, "You cannot disable your own account: nobody could enable it again.")
            }
            let account = try await store.setAccountDisabled(name, body.disabled)
            if account.isDisabled {
                // Refused from now on: no cached identity may outlive this, and its
                // open event streams end at once.
                peers.forget(account: name)
                notifier.endStreams(account: name)
            }
            context.logger.notice(account.isDisabled ? "account disabled" : "account enabled", metadata: ["account": "\(name)"])
            return JSONResponse.make(account)
        }
        group.delete("accounts/:name") { _, context in
            try requireAdmin(context)
            let name = try context.parameters.require("name")
            if name == context.identity?.account?.name {
                throw NotesError(.invalidArguments, "You cannot delete your own account; another admin can.")
            }
            let deleted = try await store.deleteAccount(name)
            // Gone from now on: no cached identity may outlive this, and its open event streams end at once.
            peers.forget(account: name)
            notifier.endStreams(account: name)
            context.logger.notice(
                "account deleted",
                metadata: [
                    "account": "\(name)", "zones": "\(deleted.zones)", "records": "\(deleted.records)",
                    "sharesStopped": "\(deleted.sharesStopped)", "sharesLeft": "\(deleted.sharesLeft)",
                ])
            return JSONResponse.make(deleted)
        }
        group.get("accounts/:name/tokens") { _, context in
            try requireAdmin(context)
            let name = try context.parameters.require("name")
            guard try await store.account(named: name) != nil else {
                throw NotesError(.unknownItem, "\(name) is not an account on this server.")
            }
            return JSONResponse.make(API.Tokens(tokens: try await store.tokens(of: name)))
        }
        group.post("accounts/:name/tokens") { request, context in
            try requireAdmin(context)
            let name = try context.parameters.require("name")
            var request = request
            let body = request.headers[.contentLength] == "0" ? API.IssueToken() : try await request.decodeJSON(API.IssueToken.self)
            if let lifetime = body.expiresIn { try Limits.validateLifetime(lifetime, field: "expiresIn", allowsZero: false) }
            let issued = try await store.issueToken(for: name, lifetime: body.expiresIn, label: body.label)
            return JSONResponse.make(API.TokenIssued(name: name, token: issued.token, id: issued.info.id), status: .created)
        }
        group.get("usage") { _, context in
            let usage = try await store.usage(of: try context.account().name)
            return JSONResponse.make(API.Usage(usedBytes: usage.used, quotaBytes: usage.quota))
        }
        group.post("tokens") { request, context in
            let account = try context.account()
            var request = request
            let body = request.headers[.contentLength] == "0" ? API.IssueToken() : try await request.decodeJSON(API.IssueToken.self)
            if let lifetime = body.expiresIn { try Limits.validateLifetime(lifetime, field: "expiresIn", allowsZero: false) }
            // A token cannot outlive the one that made it: an expiring token could
            // otherwise renew itself for ever.
            if let presenting = context.identity?.tokenID,
                let limit = try await store.tokens(of: account.name).first(where: { $0.id == presenting })?.expiresAt
            {
                let remaining = max(0, limit.timeIntervalSinceNow)
                guard let lifetime = body.expiresIn, lifetime <= remaining + 1 else {
                    throw NotesError(
                        .invalidArguments,
                        "The token you used expires at \(ISO8601.string(from: limit)), and a token it makes must expire by then too (expiresIn at most \(Int(remaining))). Make longer-lived tokens on the socket as yourself, or ask the admin (`notes account token \(account.name)`)."
                    )
                }
            }
            let issued = try await store.issueToken(for: account.name, lifetime: body.expiresIn, label: body.label)
            context.logger.notice("token issued", metadata: ["account": "\(account.name)", "token": "\(issued.info.id)"])
            return JSONResponse.make(API.TokenIssued(name: account.name, token: issued.token, id: issued.info.id), status: .created)
        }
        group.get("tokens") { _, context in
            JSONResponse.make(API.Tokens(tokens: try await store.tokens(of: try context.account().name)))
        }
        group.delete("tokens/:id") { _, context in
            let id = try context.parameters.require("id")
            // Everyone may revoke their own tokens; the admin any token.
            let owner = context.identity?.isAdmin == true ? nil : try context.account().name
            let revoked = try await store.revokeToken(id: id, owner: owner)
            notifier.endStreams(tokenID: revoked.id)
            context.logger.notice("token revoked", metadata: ["account": "\(revoked.account)", "token": "\(revoked.id)"])
            return JSONResponse.make(revoked)
        }
    }

    /// Exchanges a sign-in link for a token: the one route of `v1` that needs no
    /// identity, so it is added to a group without `IdentityMiddleware`.
    func addSignInRoute(to group: RouterGroup<NotesRequestContext>, clients: ClientAddress) {
        group.post("sign-in") { request, context in
            var request = request
            let body = try await request.decodeJSON(API.SignIn.self)
            guard let code = SignInCode(parsing: body.link) else {
                throw NotesError(.invalidArguments, "That is not a sign-in link: it should end in #nsl_ followed by 60 letters and digits. Copy the whole link.")
            }
            let client = clients.of(request, channel: context.channel)
            let issued = try await store.redeemSignInLink(code, label: body.label, client: client)
            context.logger.notice("signed in with a link", metadata: ["account": "\(issued.info.account)", "link": "\(code.id)", "token": "\(issued.info.id)"])
            return JSONResponse.make(API.TokenIssued(name: issued.info.account, token: issued.token, id: issued.info.id), status: .created)
        }
    }

    private func makeSignInLink(for account: String, lifetime: Double, _ context: NotesRequestContext) async throws(NotesError) -> API.SignInLinkIssued {
        let made = try await store.createSignInLink(for: account, lifetime: lifetime, createdBy: context.identity?.account?.name)
        context.logger.notice("sign-in link made", metadata: ["account": "\(account)", "link": "\(made.info.id)"])
        return API.SignInLinkIssued(
            id: made.info.id, account: account, link: made.code.link(publicURL: publicURL), expiresAt: made.info.expiresAt)
    }

    func requireAdmin(_ context: NotesRequestContext) throws(NotesError) {
        guard context.identity?.isAdmin == true else {
            throw NotesError(.permissionFailure, "Only the admin (the Unix user who runs notesd, or root) may manage accounts.")
        }
    }
}
