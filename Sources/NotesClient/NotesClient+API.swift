import AsyncHTTPClient
import Foundation
import NIOCore
public import NotesModel

extension NotesClient {
    public func whoami() async throws(NotesError) -> Account {
        try await get("/v1/whoami", as: Account.self)
    }

    public func createAccount(name: String, email: String? = nil) async throws(NotesError) -> API.TokenIssued {
        try await call(.POST, "/v1/accounts", body: API.CreateAccount(name: name, email: email), as: API.TokenIssued.self)
    }

    /// Creates an account and returns a sign-in link for it instead of a token.
    public func createAccountWithLink(name: String, email: String? = nil, expiresIn: Double? = nil) async throws(NotesError) -> API.SignInLinkIssued {
        try await call(
            .POST, "/v1/accounts", body: API.CreateAccount(name: name, email: email, signInLink: API.MakeSignInLink(expiresIn: expiresIn)),
            as: API.SignInLinkIssued.self)
    }

    /// A new one-time sign-in link for an account (the admin).
    public func makeSignInLink(for name: String, expiresIn: Double? = nil) async throws(NotesError) -> API.SignInLinkIssued {
        try await call(.POST, "/v1/accounts/\(name)/sign-in-links", body: API.MakeSignInLink(expiresIn: expiresIn), as: API.SignInLinkIssued.self)
    }

    /// An account's sign-in links waiting to be used (the admin).
    public func signInLinks(of name: String) async throws(NotesError) -> [SignInLinkInfo] {
        try await get("/v1/accounts/\(name)/sign-in-links", as: API.SignInLinks.self).links
    }

    /// Revokes a sign-in link (the admin).
    public func revokeSignInLink(id: String) async throws(NotesError) -> SignInLinkInfo {
        try await call(.DELETE, "/v1/sign-in-links/\(id)", body: Optional<API.Done>.none, as: SignInLinkInfo.self)
    }

    /// Exchanges a sign-in link for a new token of its account (no token needed).
    public func signIn(link: String, label: String?) async throws(NotesError) -> API.TokenIssued {
        try await call(.POST, "/v1/sign-in", body: API.SignIn(link: link, label: label), as: API.TokenIssued.self)
    }

    public func issueToken(for name: String, expiresIn: Double? = nil, label: String? = nil) async throws(NotesError) -> API.TokenIssued {
        try await call(.POST, "/v1/accounts/\(name)/tokens", body: API.IssueToken(expiresIn: expiresIn, label: label), as: API.TokenIssued.self)
    }

    /// What the caller's zones hold, and the quota.
    public func usage() async throws(NotesError) -> API.Usage {
        try await get("/v1/usage", as: API.Usage.self)
    }

    /// Every account (the admin's call).
    public func accounts() async throws(NotesError) -> [Account] {
        try await get("/v1/accounts", as: API.Accounts.self).accounts
    }

    /// Disables or enables an account (the admin's call).
    public func setAccount(_ name: String, disabled: Bool) async throws(NotesError) -> Account {
        try await call(.PATCH, "/v1/accounts/\(name)", body: API.UpdateAccount(disabled: disabled), as: Account.self)
    }

    /// Deletes an account with its zones and tokens (the admin's call).
    public func deleteAccount(_ name: String) async throws(NotesError) -> API.AccountDeleted {
        try await call(.DELETE, "/v1/accounts/\(name)", body: Optional<API.Done>.none, as: API.AccountDeleted.self)
    }

    /// The caller's own tokens, or with `account` another account's (the admin's call).
    public func tokens(of account: String? = nil) async throws(NotesError) -> [TokenInfo] {
        try await get(account.map { "/v1/accounts/\($0)/tokens" } ?? "/v1/tokens", as: API.Tokens.self).tokens
    }

    /// A new token for the caller's own account (one made with an expiring token
    /// expires by the same time).
    public func createToken(expiresIn: Double? = nil, label: String? = nil) async throws(NotesError) -> API.TokenIssued {
        try await call(.POST, "/v1/tokens", body: API.IssueToken(expiresIn: expiresIn, label: label), as: API.TokenIssued.self)
    }

    /// Revokes a token by its id: one's own, or any (the admin).
    @discardableResult
    public func revokeToken(id: String) async throws(NotesError) -> TokenInfo {
        try await call(.DELETE, "/v1/tokens/\(id)", body: Optional<API.Done>.none, as: TokenInfo.self)
    }

    public func zones(scope: DatabaseScope) async throws(NotesError) -> [Zone] {
        try await get("/v1/zones?scope=\(scope.rawValue)", as: API.Zones.self).zones
    }

    public func createZone(named name: String) async throws(NotesError) -> Zone {
        try await call(.POST, "/v1/zones", body: API.CreateZone(name: name), as: Zone.self)
    }

    public func deleteZone(_ zone: ZoneID) async throws(NotesError) {
        _ = try await call(.POST, "/v1/zones/delete", body: API.ZoneRef(zone: zone), as: API.Done.self)
    }

    public func modify(_ request: ModifyRequest) async throws(NotesError) -> ModifyResult {
        let data = try await exchange(.POST, "/v1/records/modify", body: request)
        return try decode(data, fast: RecordJSONReader.readModifyResult)
    }

    /// The records among `names` the caller may read, asked for in as many requests as
    /// notesd's answers need (each holds a bounded amount of content).
    public func records(_ names: [String], in zone: ZoneID) async throws(NotesError) -> [Record] {
        var found: [Record] = []
        var asking = names
        while !asking.isEmpty {
            let answer = try await call(.POST, "/v1/records/lookup", body: API.Lookup(zone: zone, recordNames: asking), as: API.Records.self)
            found += answer.records
            let remaining = answer.remaining ?? []
            guard remaining.count < asking.count else {
                throw NotesError(.internalError, "notesd answered a lookup without reading any of the names asked for; try again.")
            }
            asking = remaining
        }
        return found
    }

    public func zoneChanges(_ zone: ZoneID, since token: String?, limit: Int? = nil) async throws(NotesError) -> ZoneChanges {
        let data = try await exchange(.POST, "/v1/records/changes", body: API.ZoneChangesQuery(zone: zone, since: token, limit: limit))
        return try decode(data, fast: RecordJSONReader.readZoneChanges)
    }

    /// Every page of a zone's changes since `token`, handed to `body` in order. The next
    /// page is requested as soon as a page's headers arrive (they carry its token), so
    /// the daemon prepares it while `body` and the reader work on this one.
    public func forEachZoneChangePage(
        _ zone: ZoneID, since token: String?, limit: Int = Limits.maxChangesPage, _ body: (ZoneChanges) async throws -> Void
    ) async throws {
        var response = try await startChanges(zone, since: token, limit: limit)
        while true {
            let next = response.headers.first(name: "Notes-Change-Token")
            let more = response.headers.first(name: "Notes-More-Coming") == "true"
            let following: Task<HTTPClientResponse, any Error>? =
                response.status == .ok && more && next != nil
                ? Task { try await self.startChanges(zone, since: next, limit: limit) } : nil
            let data: [UInt8]
            do {
                data = Array(try await response.body.collect(upTo: Limits.maxRequestBytes * 2).readableBytesView)
            } catch {
                following?.cancel()
                throw NotesError(.serviceUnavailable, "The answer from notesd at \(endpoint) broke off (\(Self.reason(error))).")
            }
            guard response.status == .ok else {
                following?.cancel()
                if let error = try? NotesJSON.decoder().decode(NotesJSON.ErrorBody.self, from: Data(data)) { throw error.notesError }
                throw NotesError(.internalError, "notesd answered HTTP \(response.status.code) without an error body.")
            }
            let decoded = await OffLoop.run { [self] in Result { () throws(NotesError) in try self.decode(data, fast: RecordJSONReader.readZoneChanges) } }
            let page = try decoded.get()
            do {
                try await body(page)
            } catch {
                following?.cancel()
                throw error
            }
            guard page.moreComing else { return }
            if let following {
                response = try await following.value
            } else {
                response = try await startChanges(zone, since: page.changeToken, limit: limit)
            }
        }
    }

    private func startChanges(_ zone: ZoneID, since token: String?, limit: Int) async throws(NotesError) -> HTTPClientResponse {
        let payload: ByteBuffer
        do {
            payload = ByteBuffer(bytes: try NotesJSON.encoder().encode(API.ZoneChangesQuery(zone: zone, since: token, limit: limit)))
        } catch {
            throw NotesError(.invalidArguments, "Could not encode the request: \(error)")
        }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request(.POST, "/v1/records/changes", body: payload), timeout: timeout)
        } catch {
            throw unreachable(error)
        }
        try checkAPIVersion(response.headers)
        return response
    }

    public func databaseChanges(scope: DatabaseScope, since token: String?) async throws(NotesError) -> DatabaseChanges {
        try await call(.POST, "/v1/changes", body: API.DatabaseChangesQuery(scope: scope, since: token), as: DatabaseChanges.self)
    }

    /// One page of the notes matching `query` (the search language of `docs/search.md`).
    public func search(_ query: String, limit: Int? = nil, cursor: String? = nil) async throws(NotesError) -> API.SearchResults {
        try await call(.POST, "/v1/search", body: API.Search(query: query, limit: limit, cursor: cursor), as: API.SearchResults.self)
    }

    /// One page of a record's history, newest first.
    public func versionsPage(of recordName: String, in zone: ZoneID, limit: Int? = nil, before: String? = nil) async throws(NotesError) -> API.Versions {
        try await call(.POST, "/v1/records/versions", body: API.VersionsQuery(zone: zone, recordName: recordName, limit: limit, before: before), as: API.Versions.self)
    }

    /// A record's whole history, newest first, page by page.
    /// The zone's deleted records this account may read, newest deletion first.
    public func trash(in zone: ZoneID) async throws(NotesError) -> [TrashedRecord] {
        let data = try await exchange(.POST, "/v1/records/trash", body: API.ZoneRef(zone: zone))
        return try decode(data, fast: RecordJSONReader.readTrash).trash
    }

    /// Brings a trashed record back as the same record (a folder with what was trashed
    /// below it): under `parent` (`.some(nil)`: the zone's root; `nil`: where it was).
    public func restoreFromTrash(_ recordName: String, in zone: ZoneID, parent: String?? = nil, name: String? = nil) async throws(NotesError) -> [Record] {
        try await call(.POST, "/v1/records/restore", body: API.Restore(zone: zone, recordName: recordName, parent: parent, name: name), as: API.Records.self).records
    }

    public func versions(of recordName: String, in zone: ZoneID) async throws(NotesError) -> [RecordVersion] {
        var all: [RecordVersion] = []
        var before: String?
        while true {
            let page = try await versionsPage(of: recordName, in: zone, limit: Limits.maxVersionsPage, before: before)
            all += page.versions
            guard page.moreComing, let last = page.versions.last?.changeTag else { return all }
            before = last
        }
    }

    public func createShare(_ request: NewShare) async throws(NotesError) -> Share {
        try await call(.POST, "/v1/shares", body: request, as: Share.self)
    }

    public func shares() async throws(NotesError) -> [Share] {
        try await get("/v1/shares", as: API.Shares.self).shares
    }

    public func share(id: String) async throws(NotesError) -> Share {
        try await get("/v1/shares/\(id)", as: Share.self)
    }

    public func updateShare(id: String, _ update: ShareUpdate) async throws(NotesError) -> Share {
        try await call(.PATCH, "/v1/shares/\(id)", body: update, as: Share.self)
    }

    public func addParticipants(shareID: String, _ invitees: [Invitee]) async throws(NotesError) -> Share {
        try await call(.POST, "/v1/shares/\(shareID)/participants", body: API.AddParticipants(participants: invitees), as: Share.self)
    }

    public func removeParticipant(shareID: String, name: String) async throws(NotesError) -> Share {
        try await call(.DELETE, "/v1/shares/\(shareID)/participants/\(name)", body: Optional<API.Done>.none, as: Share.self)
    }

    public func stopShare(id: String) async throws(NotesError) {
        _ = try await call(.DELETE, "/v1/shares/\(id)", body: Optional<API.Done>.none, as: API.Done.self)
    }

    public func leaveShare(id: String) async throws(NotesError) {
        _ = try await call(.POST, "/v1/shares/\(id)/leave", body: Optional<API.Done>.none, as: API.Done.self)
    }

    public func invitations() async throws(NotesError) -> [Share] {
        try await get("/v1/invitations", as: API.Shares.self).shares
    }

    public func accept(url: String, password: String? = nil) async throws(NotesError) -> Share {
        try await call(.POST, "/v1/accept", body: API.Accept(url: url, password: password), as: Share.self)
    }

    /// Reads an answer with the hand-written reader of a hot path, falling back to
    /// `JSONDecoder` for anything that reader does not expect.
    private func decode<T: Decodable>(_ data: [UInt8], fast: ([UInt8]) -> T?) throws(NotesError) -> T {
        if let value = fast(data) { return value }
        do {
            return try NotesJSON.decoder().decode(T.self, from: Data(data))
        } catch {
            throw NotesError(.internalError, "notesd's answer could not be read: \(error)")
        }
    }
}
