public import Foundation

/// Everything the daemon persists, behind one protocol so that SQLite and PostgreSQL
/// implementations can run the same conformance tests.
///
/// Every method that takes an `actor` decides authorization itself, inside the same
/// transaction as the work, using `SharingRules`; callers never pre-check on its
/// behalf. Every mutating method is atomic: it either throws and changes nothing, or
/// commits in full (durably) before it returns.
public protocol RecordStore: Sendable {
    // MARK: Accounts

    /// Creates an account with its default zone. Pending email invitations that match
    /// `email` become this account's invitations.
    func createAccount(name: String, email: String?, isAdmin: Bool) async throws(NotesError) -> Account
    /// The account, or `nil` if there is none by that name.
    func account(named name: String) async throws(NotesError) -> Account?
    /// Every account, by name (the admin's list).
    func accounts() async throws(NotesError) -> [Account]
    /// Issues a new bearer token for the account; only its hash is stored.
    /// - Parameter lifetime: seconds until it expires; `nil` for no expiry.
    /// - Parameter label: what the token is for, shown when tokens are listed.
    func issueToken(for name: String, lifetime: Double?, label: String?) async throws(NotesError) -> (token: String, info: TokenInfo)
    /// The account a token belongs to and the token's id, or `nil` for a forged, revoked
    /// or expired token, or one of a disabled account.
    func authenticate(token: String) async throws(NotesError) -> AuthenticatedToken?
    /// The account's tokens that have not expired, oldest first.
    func tokens(of account: String) async throws(NotesError) -> [TokenInfo]
    /// Revokes a token: it is refused from the next request on.
    /// - Parameter owner: when given, the token must be this account's (a user revoking
    ///   their own); `nil` is the admin, who may revoke any.
    func revokeToken(id: String, owner: String?) async throws(NotesError) -> TokenInfo
    /// Makes a one-time sign-in link for the account; only its hash is stored.
    /// - Parameter lifetime: seconds until it stops working.
    func createSignInLink(for account: String, lifetime: Double, createdBy: String?) async throws(NotesError) -> (code: SignInCode, info: SignInLinkInfo)
    /// The account's sign-in links still waiting to be used, oldest first.
    func signInLinks(of account: String) async throws(NotesError) -> [SignInLinkInfo]
    /// Revokes a sign-in link that has not been used.
    func revokeSignInLink(id: String) async throws(NotesError) -> SignInLinkInfo
    /// In one transaction: checks the link (refusing a forged, used or expired one, or one
    /// of a disabled account), marks it used, and issues a token of its account. Refused
    /// links count against `client` (its address), which is refused for a while past
    /// `Limits.signInFailuresPerClient`.
    func redeemSignInLink(_ code: SignInCode, label: String?, client: String?) async throws(NotesError) -> (token: String, info: TokenInfo)
    /// Disables or enables an account (the admin's decision, made in the controller).
    func setAccountDisabled(_ name: String, _ disabled: Bool) async throws(NotesError) -> Account
    /// Deletes an account in one transaction: its zones with every record and version,
    /// its tokens; its shares stop (participants are told) and it leaves others' shares.
    /// What it wrote in others' zones keeps its name as the author.
    func deleteAccount(_ name: String) async throws(NotesError) -> API.AccountDeleted
    /// Bytes the account's zones hold (records and kept versions), and its quota.
    func usage(of account: String) async throws(NotesError) -> (used: Int64, quota: Int64?)
    /// Throws `serviceUnavailable` unless the database answers and holds the schema this
    /// binary knows (what `GET /readyz` tells load balancers and systemd).
    func checkReady() async throws(NotesError)
    /// Deletes the versions the retention rule no longer keeps; returns how many.
    @discardableResult
    func pruneVersions(maxRecords: Int) async throws(NotesError) -> Int
    /// Deletes tombstones past `TombstoneRetention.keptSeconds` (marking the change
    /// counter for later passes); returns how many went.
    @discardableResult
    func pruneTombstones() async throws(NotesError) -> Int
    /// Purges what was deleted more than `storage.trashDays` ago, with its history, at
    /// most `maxRecords` per transaction; returns how many trashed records went.
    func purgeTrash(maxRecords: Int) async throws(NotesError) -> Int

    // MARK: Zones

    func createZone(_ zone: ZoneID, actor: String) async throws(NotesError) -> Zone
    /// The zones of a scope: owned (`private`) or accepted from others (`shared`).
    func zones(scope: DatabaseScope, actor: String) async throws(NotesError) -> [Zone]
    /// Deletes a zone and all its records; its shares stop. The default zone stays.
    func deleteZone(_ zone: ZoneID, actor: String) async throws(NotesError)

    // MARK: Records

    /// Applies all saves and deletes, or none (`batchRequestFailed` for the rest).
    func modify(_ request: ModifyRequest, actor: String) async throws(NotesError) -> ModifyResult
    /// The records the caller may read among `recordNames`, as far as one answer holds
    /// (`RecordLookup`); missing ones are left out, names not reached are `remaining`.
    func lookUp(_ recordNames: [String], in zone: ZoneID, actor: String) async throws(NotesError) -> API.Records
    /// Changes of a zone since `token` (`nil`: everything), at most `limit` items a page.
    func zoneChanges(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> ZoneChanges
    /// The same page as `zoneChanges`, written as JSON; a store may write it straight
    /// from its rows (the default encodes the values).
    func zoneChangesJSON(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> EncodedZoneChanges
    /// Zones of a scope changed since `token` (`nil`: all of them).
    func databaseChanges(scope: DatabaseScope, since token: String?, actor: String) async throws(NotesError) -> DatabaseChanges
    /// A page of a record's history, newest first (the record itself first of all).
    /// - Parameter before: a change tag from the previous page: only older versions.
    func versions(of recordName: String, in zone: ZoneID, actor: String, limit: Int, before: String?) async throws(NotesError) -> API.Versions
    /// The zone's deleted records that the caller may read, newest deletion first.
    func trash(in zone: ZoneID, actor: String) async throws(NotesError) -> [TrashedRecord]
    /// `trash(in:actor:)` as the JSON of `API.Trash` (a backend may write it straight
    /// from its rows).
    func trashJSON(in zone: ZoneID, actor: String) async throws(NotesError) -> [UInt8]
    /// A trashed record and what was trashed below it, parents first, without their
    /// content (`restoreFromTrash` reads it a turn at a time with `trashedBodies`).
    func trashedContent(in zone: ZoneID, under recordName: String, actor: String) async throws(NotesError) -> [TrashedContent]
    /// The same entries with the text of their last version.
    func trashedBodies(_ entries: [TrashedContent], in zone: ZoneID) async throws(NotesError) -> [TrashedContent]
    /// A modify that brings trashed records back: in the same transaction as the saves,
    /// their histories are joined to their earlier versions and their trash entries go
    /// (a crash between the two would leave a note whose history the purge later takes).
    /// - Parameter restore: the restore under way (`beginRestore`) the records belong to,
    ///   which keeps them out of sight until it finishes; `nil` for one done in one turn.
    func modify(_ request: ModifyRequest, actor: String, restoring: [RestoredRecord], restore: String?) async throws(NotesError) -> ModifyResult
    /// Starts a restore written in several turns: from now until `finishRestore`, the
    /// zone's change pages stop before the restore's first change, and its records are
    /// found by no lookup and shown on no public page.
    func beginRestore(_ id: String, in zone: ZoneID, actor: String) async throws(NotesError)
    /// Shows every record of the restore at once (one small write: the zone's pages move
    /// past it and its change reaches every client).
    func finishRestore(_ id: String, in zone: ZoneID) async throws(NotesError)
    /// Restores begun before `startedBefore` and not finished (notesd stopped during
    /// one), each with the records it brought back so far.
    func unfinishedRestores(startedBefore: Date) async throws(NotesError) -> [UnfinishedRestore]

    // MARK: Search

    /// The notes the caller may read (their own and those of shares they accepted)
    /// that match `request.query` (`docs/search.md`), best first, a page at a time.
    func search(_ request: API.Search, actor: String) async throws(NotesError) -> API.SearchResults

    // MARK: Shares

    func createShare(_ request: NewShare, actor: String) async throws(NotesError) -> Share
    /// A share the caller owns or takes part in (pending included).
    func share(id: String, actor: String) async throws(NotesError) -> Share
    /// Shares the caller owns or has accepted.
    func shares(actor: String) async throws(NotesError) -> [Share]
    /// Shares the caller is invited to and has not accepted yet.
    func invitations(actor: String) async throws(NotesError) -> [Share]
    func updateShare(id: String, _ update: ShareUpdate, actor: String) async throws(NotesError) -> Share
    /// Invites accounts or emails, or changes the permission of existing participants.
    func addParticipants(shareID: String, _ invitees: [Invitee], actor: String) async throws(NotesError) -> Share
    func removeParticipant(shareID: String, name: String, actor: String) async throws(NotesError) -> Share
    /// Accepts the share behind a URL token, as an invitee or, if public, a public user
    /// (who must present the link's password where one is set, before it expires).
    /// - Parameter client: who is guessing, for the count of wrong passwords (the
    ///   client's address; `nil` counts per account).
    func acceptShare(urlToken: String, password: String?, actor: String, client: String?) async throws(NotesError) -> Share
    func leaveShare(id: String, actor: String) async throws(NotesError)
    /// What anyone may read at a share URL: the share and its records (names and tags, no
    /// content), when its public permission is not `none` and the link has not expired;
    /// otherwise `unknownItem`, exactly as for a token that does not exist. A link with a
    /// password also needs `pass`, made by `unlockPublicLink` (else `notAuthenticated`).
    func publicShare(urlToken: String, pass: String?) async throws(NotesError) -> (share: Share, records: [Record])
    /// One record of a public share, with its content, under the same rules.
    func publicRecord(urlToken: String, recordName: String, pass: String?) async throws(NotesError) -> Record
    /// Checks a public link's password (counted as `acceptShare` counts wrong ones, per
    /// link and per `client`) and returns a pass for its pages and when it ends; `nil`
    /// when the link needs no password. Unknown, private or expired links: `unknownItem`.
    func unlockPublicLink(urlToken: String, password: String, client: String?) async throws(NotesError) -> (pass: String, expires: Date)?
    func stopShare(id: String, actor: String) async throws(NotesError)
    /// Adds views to public links' counts, by URL token (unknown tokens are skipped).
    func countPublicViews(_ views: [String: Int]) async throws(NotesError)
}

extension RecordStore {
    /// A public link's share, for a visitor without a pass.
    public func publicShare(urlToken: String) async throws(NotesError) -> (share: Share, records: [Record]) {
        try await publicShare(urlToken: urlToken, pass: nil)
    }

    /// The records the caller may read among `recordNames`, every answer of the lookup
    /// gathered (for callers inside notesd and tests, not for a network answer).
    public func records(_ recordNames: [String], in zone: ZoneID, actor: String) async throws(NotesError) -> [Record] {
        var found: [Record] = []
        var asking = recordNames
        while !asking.isEmpty {
            let answer = try await lookUp(asking, in: zone, actor: actor)
            found += answer.records
            let remaining = answer.remaining ?? []
            guard remaining.count < asking.count else { break }
            asking = remaining
        }
        return found
    }

    /// Every version of a record, newest first, read page by page.
    public func versions(of recordName: String, in zone: ZoneID, actor: String) async throws(NotesError) -> [RecordVersion] {
        var all: [RecordVersion] = []
        var before: String?
        while true {
            let page = try await versions(of: recordName, in: zone, actor: actor, limit: Limits.maxVersionsPage, before: before)
            all += page.versions
            guard page.moreComing, let last = page.versions.last?.changeTag else { return all }
            before = last
        }
    }

    /// Issues a token with no label; returns the token itself.
    public func issueToken(for name: String, lifetime: Double?) async throws(NotesError) -> String {
        try await issueToken(for: name, lifetime: lifetime, label: nil).token
    }

    /// Accepts without a password (invitations, and public links that have none).
    public func acceptShare(urlToken: String, actor: String) async throws(NotesError) -> Share {
        try await acceptShare(urlToken: urlToken, password: nil, actor: actor, client: nil)
    }

    public func acceptShare(urlToken: String, password: String?, actor: String) async throws(NotesError) -> Share {
        try await acceptShare(urlToken: urlToken, password: password, actor: actor, client: nil)
    }
}

extension RecordStore {
    public func zoneChangesJSON(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> EncodedZoneChanges {
        let changes = try await zoneChanges(zone, since: token, limit: limit, actor: actor)
        return EncodedZoneChanges(json: RecordJSONWriter.encode(changes), changeToken: changes.changeToken, moreComing: changes.moreComing)
    }
}
