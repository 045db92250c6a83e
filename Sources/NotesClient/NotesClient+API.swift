import Foundation
public import NotesModel

extension NotesClient {
    public func whoami() async throws(NotesError) -> Account {
        try await get("/v1/whoami", as: Account.self)
    }

    public func createAccount(name: String, email: String? = nil) async throws(NotesError) -> API.TokenIssued {
        try await call(.POST, "/v1/accounts", body: API.CreateAccount(name: name, email: email), as: API.TokenIssued.self)
    }

    public func issueToken(for name: String, expiresIn: Double? = nil) async throws(NotesError) -> API.TokenIssued {
        try await call(.POST, "/v1/accounts/\(name)/tokens", body: API.IssueToken(expiresIn: expiresIn), as: API.TokenIssued.self)
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

    public func records(_ names: [String], in zone: ZoneID) async throws(NotesError) -> [Record] {
        try await call(.POST, "/v1/records/lookup", body: API.Lookup(zone: zone, recordNames: names), as: API.Records.self).records
    }

    public func zoneChanges(_ zone: ZoneID, since token: String?, limit: Int? = nil) async throws(NotesError) -> ZoneChanges {
        let data = try await exchange(.POST, "/v1/records/changes", body: API.ZoneChangesQuery(zone: zone, since: token, limit: limit))
        return try decode(data, fast: RecordJSONReader.readZoneChanges)
    }

    public func databaseChanges(scope: DatabaseScope, since token: String?) async throws(NotesError) -> DatabaseChanges {
        try await call(.POST, "/v1/changes", body: API.DatabaseChangesQuery(scope: scope, since: token), as: DatabaseChanges.self)
    }

    public func versions(of recordName: String, in zone: ZoneID) async throws(NotesError) -> [RecordVersion] {
        try await call(.POST, "/v1/records/versions", body: API.VersionsQuery(zone: zone, recordName: recordName), as: API.Versions.self).versions
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

    public func accept(url: String) async throws(NotesError) -> Share {
        try await call(.POST, "/v1/accept", body: API.Accept(url: url), as: Share.self)
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
