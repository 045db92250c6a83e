public import Foundation

/// Request and response bodies of the HTTP API that are not model types themselves.
/// `docs/openapi.yaml` describes the same shapes.
public enum API {
    public struct CreateAccount: Codable, Sendable {
        public var name: String
        public var email: String?
        /// When present, the answer is a sign-in link for the account
        /// (`SignInLinkIssued`) instead of its first token.
        public var signInLink: MakeSignInLink?
        public init(name: String, email: String? = nil, signInLink: MakeSignInLink? = nil) {
            self.name = name
            self.email = email
            self.signInLink = signInLink
        }
    }

    /// The admin's request for a sign-in link.
    public struct MakeSignInLink: Codable, Sendable {
        /// Seconds until the link stops working (default a day, at most 30 days).
        public var expiresIn: Double?
        public init(expiresIn: Double? = nil) { self.expiresIn = expiresIn }
    }

    /// A sign-in link just made: `link` is shown this once.
    public struct SignInLinkIssued: Codable, Sendable {
        public var id: String
        public var account: String
        public var link: String
        public var expiresAt: Date
        public init(id: String, account: String, link: String, expiresAt: Date) {
            self.id = id
            self.account = account
            self.link = link
            self.expiresAt = expiresAt
        }
    }

    public struct SignInLinks: Codable, Sendable {
        public var links: [SignInLinkInfo]
        public init(links: [SignInLinkInfo]) { self.links = links }
    }

    /// A sign-in link exchanged for a token of its account (`POST /v1/sign-in`).
    public struct SignIn: Codable, Sendable {
        /// The whole link, or its `nsl_…` code.
        public var link: String
        /// What the new token is for (the machine's name), shown when tokens are listed.
        public var label: String?
        public init(link: String, label: String? = nil) {
            self.link = link
            self.label = label
        }
    }

    public struct IssueToken: Codable, Sendable {
        /// Seconds until the token expires; absent for no expiry.
        public var expiresIn: Double?
        /// What the token is for (`laptop mount`), shown when tokens are listed.
        public var label: String?
        public init(expiresIn: Double? = nil, label: String? = nil) {
            self.expiresIn = expiresIn
            self.label = label
        }
    }

    /// What the caller's zones hold, against the quota (`nil`: no limit).
    public struct Usage: Codable, Sendable {
        public var usedBytes: Int64
        public var quotaBytes: Int64?
        public init(usedBytes: Int64, quotaBytes: Int64?) {
            self.usedBytes = usedBytes
            self.quotaBytes = quotaBytes
        }
    }

    public struct Tokens: Codable, Sendable {
        public var tokens: [TokenInfo]
        public init(tokens: [TokenInfo]) { self.tokens = tokens }
    }

    public struct Accounts: Codable, Sendable {
        public var accounts: [Account]
        public init(accounts: [Account]) { self.accounts = accounts }
    }

    /// What deleting an account took away (`DELETE /v1/accounts/NAME`).
    public struct AccountDeleted: Codable, Sendable, Equatable {
        public var name: String
        /// Its zones, deleted with every record and version in them.
        public var zones: Int
        public var records: Int
        /// Its shares, stopped: their participants lose them.
        public var sharesStopped: Int
        /// Others' shares it took part in, which it left.
        public var sharesLeft: Int
        public init(name: String, zones: Int, records: Int, sharesStopped: Int, sharesLeft: Int) {
            self.name = name
            self.zones = zones
            self.records = records
            self.sharesStopped = sharesStopped
            self.sharesLeft = sharesLeft
        }
    }

    /// The admin's change to an account: only `disabled` for now.
    public struct UpdateAccount: Codable, Sendable {
        public var disabled: Bool
        public init(disabled: Bool) { self.disabled = disabled }
    }

    public struct TokenIssued: Codable, Sendable {
        public var name: String
        public var token: String
        /// The token's public part, for `revoke`; absent in answers of older servers.
        public var id: String?
        public init(name: String, token: String, id: String? = nil) {
            self.name = name
            self.token = token
            self.id = id
        }
    }

    public struct CreateZone: Codable, Sendable {
        public var name: String
        public init(name: String) { self.name = name }
    }

    public struct ZoneRef: Codable, Sendable {
        public var zone: ZoneID
        public init(zone: ZoneID) { self.zone = zone }
    }

    /// A zone's trash: its deleted records the caller may read, newest deletion first.
    public struct Trash: Codable, Sendable {
        public var trash: [TrashedRecord]
        public init(trash: [TrashedRecord]) { self.trash = trash }
    }

    /// Brings a trashed record back (a folder with what was trashed below it). Without
    /// `parent` it goes back where it was; `parent: null` is the zone's root.
    public struct Restore: Codable, Sendable {
        public var zone: ZoneID
        public var recordName: String
        public var parent: String??
        public var name: String?

        public init(zone: ZoneID, recordName: String, parent: String?? = nil, name: String? = nil) {
            self.zone = zone
            self.recordName = recordName
            self.parent = parent
            self.name = name
        }

        enum CodingKeys: String, CodingKey { case zone, recordName, parent, name }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            zone = try container.decode(ZoneID.self, forKey: .zone)
            recordName = try container.decode(String.self, forKey: .recordName)
            parent = container.contains(.parent) ? .some(try container.decodeNil(forKey: .parent) ? nil : try container.decode(String.self, forKey: .parent)) : nil
            name = try container.decodeIfPresent(String.self, forKey: .name)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(zone, forKey: .zone)
            try container.encode(recordName, forKey: .recordName)
            if let parent {
                if let parent { try container.encode(parent, forKey: .parent) } else { try container.encodeNil(forKey: .parent) }
            }
            try container.encodeIfPresent(name, forKey: .name)
        }
    }

    public struct Zones: Codable, Sendable {
        public var zones: [Zone]
        public init(zones: [Zone]) { self.zones = zones }
    }

    public struct Lookup: Codable, Sendable {
        public var zone: ZoneID
        public var recordNames: [String]
        public init(zone: ZoneID, recordNames: [String]) {
            self.zone = zone
            self.recordNames = recordNames
        }
    }

    public struct Records: Codable, Sendable {
        public var records: [Record]
        /// Names a lookup did not reach because its answer was full: ask for them again
        /// (an older notesd leaves this out).
        public var remaining: [String]?
        public init(records: [Record], remaining: [String]? = nil) {
            self.records = records
            self.remaining = remaining
        }
    }

    public struct ZoneChangesQuery: Codable, Sendable {
        public var zone: ZoneID
        public var since: String?
        public var limit: Int?
        public init(zone: ZoneID, since: String? = nil, limit: Int? = nil) {
            self.zone = zone
            self.since = since
            self.limit = limit
        }
    }

    public struct DatabaseChangesQuery: Codable, Sendable {
        public var scope: DatabaseScope
        public var since: String?
        public init(scope: DatabaseScope, since: String? = nil) {
            self.scope = scope
            self.since = since
        }
    }

    public struct VersionsQuery: Codable, Sendable {
        public var zone: ZoneID
        public var recordName: String
        /// At most this many versions (default `Limits.defaultVersionsPage`).
        public var limit: Int?
        /// Only versions older than this change tag (the last of the previous page).
        public var before: String?
        public init(zone: ZoneID, recordName: String, limit: Int? = nil, before: String? = nil) {
            self.zone = zone
            self.recordName = recordName
            self.limit = limit
            self.before = before
        }
    }

    /// A page of a record's history, newest first.
    public struct Versions: Codable, Sendable {
        public var versions: [RecordVersion]
        /// More, older versions follow: ask again with `before` = the last change tag.
        public var moreComing: Bool
        public init(versions: [RecordVersion], moreComing: Bool = false) {
            self.versions = versions
            self.moreComing = moreComing
        }

        enum CodingKeys: String, CodingKey { case versions, moreComing }

        /// `moreComing` is read as `false` when absent (servers from before paging).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            versions = try container.decode([RecordVersion].self, forKey: .versions)
            moreComing = try container.decodeIfPresent(Bool.self, forKey: .moreComing) ?? false
        }
    }

    public struct Shares: Codable, Sendable {
        public var shares: [Share]
        public init(shares: [Share]) { self.shares = shares }
    }

    public struct AddParticipants: Codable, Sendable {
        public var participants: [Invitee]
        public init(participants: [Invitee]) { self.participants = participants }
    }

    public struct Accept: Codable, Sendable {
        /// The share URL (`…/s/TOKEN#Title`) or the bare token.
        public var url: String
        /// The public link's password, where the owner set one.
        public var password: String?
        public init(url: String, password: String? = nil) {
            self.url = url
            self.password = password
        }
    }

    public struct Done: Codable, Sendable {
        public var ok: Bool
        public init() { ok = true }
    }

    /// Extracts the token from a share URL or returns a bare token as is; `nil` when
    /// the text cannot be a token of this server.
    public static func shareToken(fromURL text: String) -> String? {
        var token = Substring(text)
        if let range = text.range(of: "/s/") {
            token = text[range.upperBound...]
        }
        if let end = token.firstIndex(where: { $0 == "#" || $0 == "?" || $0 == "/" }) {
            token = token[..<end]
        }
        let valid =
            !token.isEmpty && token.utf8.count <= 128
            && token.unicodeScalars.allSatisfy { s in
                (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") || (s >= "0" && s <= "9") || s == "-" || s == "_"
            }
        return valid ? String(token) : nil
    }
}

extension API {
    /// `POST /v1/search`: a query in the search language (`docs/search.md`) over the
    /// caller's notes and the shares they accepted.
    public struct Search: Codable, Sendable {
        public var query: String
        /// At most this many results (default `Limits.defaultSearchPage`).
        public var limit: Int?
        /// The `next` of the previous page.
        public var cursor: String?
        public init(query: String, limit: Int? = nil, cursor: String? = nil) {
            self.query = query
            self.limit = limit
            self.cursor = cursor
        }
    }

    /// One run of a snippet: a match, or the text between matches.
    public struct SnippetPart: Codable, Sendable, Equatable {
        public var text: String
        public var match: Bool
        public init(text: String, match: Bool) {
            self.text = text
            self.match = match
        }
    }

    /// A note that matched, where it is in a mount, and a few lines of it.
    public struct SearchHit: Codable, Sendable, Equatable {
        public var zone: ZoneID
        public var recordName: String
        /// The share through which the caller reads it (`nil`: the caller owns it).
        public var shareID: String?
        /// Its path in a mount: `private/…` or `shared/OWNER/…`.
        public var path: String
        public var title: String
        public var modifiedBy: String
        public var modifiedAt: Date
        public var snippet: [SnippetPart]
        public init(
            zone: ZoneID, recordName: String, shareID: String?, path: String, title: String, modifiedBy: String, modifiedAt: Date, snippet: [SnippetPart]
        ) {
            self.zone = zone
            self.recordName = recordName
            self.shareID = shareID
            self.path = path
            self.title = title
            self.modifiedBy = modifiedBy
            self.modifiedAt = modifiedAt
            self.snippet = snippet
        }
    }

    public struct SearchResults: Codable, Sendable, Equatable {
        /// Best first; equal ranks newest first.
        public var results: [SearchHit]
        /// Ask again with this `cursor` for the next page; absent on the last.
        public var next: String?
        /// False while the index has not yet taken in some of the caller's own latest
        /// saves (they are found once it has, usually within a second).
        public var complete: Bool
        /// Set by `notes search` when it answered from this machine's copy of the notes
        /// (a mount's replica) because notesd could not; notesd never sends it.
        public var offline: Bool?
        public init(results: [SearchHit], next: String?, complete: Bool, offline: Bool? = nil) {
            self.results = results
            self.next = next
            self.complete = complete
            self.offline = offline
        }
    }
}
