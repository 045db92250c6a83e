import Foundation
import Hummingbird
import NotesModel

/// Shares, participants, invitations and accepting by URL.
struct ShareController {
    let store: any RecordStore
    /// Base of share URLs, e.g. `https://notes.example.com` (no trailing slash).
    let publicURL: String

    func addRoutes(to group: RouterGroup<NotesRequestContext>) {
        group.post("shares") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(NewShare.self)
            return JSONResponse.make(present(try await store.createShare(body, actor: actor), to: actor), status: .created)
        }
        group.get("shares") { _, context in
            let actor = try context.account().name
            return JSONResponse.make(API.Shares(shares: try await store.shares(actor: actor).map { present($0, to: actor) }))
        }
        group.get("shares/:id") { _, context in
            let actor = try context.account().name
            let id = try context.parameters.require("id")
            return JSONResponse.make(present(try await store.share(id: id, actor: actor), to: actor))
        }
        group.patch("shares/:id") { request, context in
            let actor = try context.account().name
            let id = try context.parameters.require("id")
            var request = request
            let body = try await request.decodeJSON(ShareUpdate.self)
            return JSONResponse.make(present(try await store.updateShare(id: id, body, actor: actor), to: actor))
        }
        group.delete("shares/:id") { _, context in
            let id = try context.parameters.require("id")
            try await store.stopShare(id: id, actor: try context.account().name)
            return JSONResponse.make(API.Done())
        }
        group.post("shares/:id/participants") { request, context in
            let actor = try context.account().name
            let id = try context.parameters.require("id")
            var request = request
            let body = try await request.decodeJSON(API.AddParticipants.self)
            return JSONResponse.make(present(try await store.addParticipants(shareID: id, body.participants, actor: actor), to: actor))
        }
        group.delete("shares/:id/participants/:name") { _, context in
            let actor = try context.account().name
            let id = try context.parameters.require("id")
            let name = try context.parameters.require("name")
            return JSONResponse.make(present(try await store.removeParticipant(shareID: id, name: name, actor: actor), to: actor))
        }
        group.post("shares/:id/leave") { _, context in
            let id = try context.parameters.require("id")
            try await store.leaveShare(id: id, actor: try context.account().name)
            return JSONResponse.make(API.Done())
        }
        group.get("invitations") { _, context in
            let actor = try context.account().name
            return JSONResponse.make(API.Shares(shares: try await store.invitations(actor: actor).map { present($0, to: actor) }))
        }
        group.post("accept") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.Accept.self)
            guard let token = API.shareToken(fromURL: body.url) else {
                throw NotesError(.unknownItem, "No share has this URL: it may have been stopped, or its owner replaced the URL. Ask the owner for a new one.")
            }
            let share = try await store.acceptShare(urlToken: token, password: body.password, actor: actor, client: context.identity?.client)
            return JSONResponse.make(present(share, to: actor))
        }
    }

    /// The share as `actor` may see it (`Share.seen(by:)`), with the full URL,
    /// `PUBLIC_URL/s/TOKEN#Title` (as iCloud's `/share/TOKEN#Title`).
    func present(_ share: Share, to actor: String) -> Share {
        var share = share.seen(by: actor)
        let fragment = share.title.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed) ?? ""
        share.url = "\(publicURL)/s/\(share.urlToken)#\(fragment)"
        return share
    }
}
