import HTTPTypes
import Hummingbird
import NotesModel
import NotesWork

/// Zones, records, changes and versions. Names travel in JSON bodies, never in URL
/// paths, so no name needs escaping and every name gets the same validation.
struct RecordController {
    let store: any RecordStore

    /// An answer of records as JSON: one that carries more than a little content (a
    /// lookup answers up to `Limits.lookupAnswerBytes`) is written off the event loop, on a
    /// thread that gives way to others' small requests.
    static func encoded(_ answer: API.Records) async throws -> [UInt8] {
        guard answer.records.reduce(0, { $0 + $1.contentSize }) > Request.decodedInPlace else { return RecordJSONWriter.encode(answer) }
        return try await Blocking.background { RecordJSONWriter.encode(answer) }
    }

    func addRoutes(to group: RouterGroup<NotesRequestContext>) {
        group.get("zones") { request, context in
            let scope = try Self.scope(request.uri.queryParameters.get("scope") ?? "private")
            return JSONResponse.make(API.Zones(zones: try await store.zones(scope: scope, actor: try context.account().name)))
        }
        group.post("zones") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.CreateZone.self)
            return JSONResponse.make(try await store.createZone(ZoneID(owner: actor, name: body.name), actor: actor), status: .created)
        }
        group.post("zones/delete") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.ZoneRef.self)
            try await store.deleteZone(body.zone, actor: actor)
            return JSONResponse.make(API.Done())
        }
        group.post("records/modify") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(ModifyRequest.self)
            return JSONResponse.raw(RecordJSONWriter.encode(try await store.modify(body, actor: actor)))
        }
        group.post("records/lookup") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.Lookup.self)
            return JSONResponse.raw(try await Self.encoded(try await store.lookUp(body.recordNames, in: body.zone, actor: actor)))
        }
        group.post("records/changes") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.ZoneChangesQuery.self)
            if let limit = body.limit, !(1...Limits.maxChangesPage).contains(limit) {
                throw NotesError(.invalidArguments, "limit must be 1 to \(Limits.maxChangesPage); it was \(limit).")
            }
            let changes = try await store.zoneChangesJSON(body.zone, since: body.since, limit: body.limit ?? Limits.defaultChangesPage, actor: actor)
            // The next token in headers too: a client can ask for the next page while it
            // still reads this one (`NotesClient.forEachZoneChangePage`).
            var response = JSONResponse.raw(changes.json)
            response.headers[.notesChangeToken] = changes.changeToken
            response.headers[.notesMoreComing] = changes.moreComing ? "true" : "false"
            return response
        }
        group.post("records/versions") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.VersionsQuery.self)
            return JSONResponse.make(
                try await store.versions(
                    of: body.recordName, in: body.zone, actor: actor, limit: body.limit ?? Limits.defaultVersionsPage, before: body.before))
        }
        group.post("records/trash") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.ZoneRef.self)
            return JSONResponse.raw(try await store.trashJSON(in: body.zone, actor: actor))
        }
        group.post("records/restore") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.Restore.self)
            let restored = API.Records(records: try await store.restoreFromTrash(body.recordName, in: body.zone, parent: body.parent, name: body.name, actor: actor))
            // A folder of thousands is listed in megabytes: written off the event loop.
            guard restored.records.count > RestoreRules.recordsPerTurn else { return JSONResponse.raw(RecordJSONWriter.encode(restored)) }
            return JSONResponse.raw(try await Blocking.background { RecordJSONWriter.encode(restored) })
        }
        group.post("search") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.Search.self)
            return JSONResponse.make(try await store.search(body, actor: actor))
        }
        group.post("changes") { request, context in
            let actor = try context.account().name
            var request = request
            let body = try await request.decodeJSON(API.DatabaseChangesQuery.self)
            return JSONResponse.make(try await store.databaseChanges(scope: body.scope, since: body.since, actor: actor))
        }
    }

    static func scope(_ text: String) throws(NotesError) -> DatabaseScope {
        guard let scope = DatabaseScope(rawValue: text) else {
            throw NotesError(.invalidArguments, "scope must be \"private\" or \"shared\", not \"\(text)\".")
        }
        return scope
    }
}

extension HTTPField.Name {
    /// The change token of a "changes since" page (the same as in its body).
    static let notesChangeToken = Self("Notes-Change-Token")!
    /// Whether more pages follow (`true`/`false`, as `moreComing` in the body).
    static let notesMoreComing = Self("Notes-More-Coming")!
}
