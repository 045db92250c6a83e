import Foundation
public import NotesModel
import NotesStoreRules
import PostgresNIO

extension PostgresStore {
    static let accountColumns = "name, email, is_admin, created_at, disabled_at"

    public func createAccount(name: String, email: String?, isAdmin: Bool) async throws(NotesError) -> Account {
        try Names.validateAccount(name)
        if let email { try Names.validateEmail(email) }
        // Invitations waiting for the email are in other accounts' zones, which this
        // write then numbers: it holds every zone's counter (an invitation made meanwhile
        // either sees the account or is seen here).
        return try await write(email == nil ? .none : .everyZone) { context in
            let sql = context.sql
            if try await sql.exists("SELECT 1 FROM accounts WHERE name = \(name)") {
                throw NotesError(.constraintViolation, "An account named \(name) already exists.")
            }
            if let email, try await sql.exists("SELECT 1 FROM accounts WHERE email = \(email)") {
                throw NotesError(.constraintViolation, "Another account already has the email \(email).")
            }
            let account = Account(name: name, email: email, isAdmin: isAdmin, createdAt: context.now)
            try await sql.execute("INSERT INTO accounts (name, email, is_admin, created_at) VALUES (\(name), \(email), \(isAdmin), \(context.now.storedValue))")
            _ = try await Self.insertZone(sql, ZoneID(owner: name, name: ZoneID.defaultZoneName))
            // Email invitations sent before the account existed now resolve to it.
            if let email {
                let zones = try await sql.rows(
                    """
                    SELECT DISTINCT s.owner, s.zone FROM participants p JOIN shares s ON s.id = p.share_id
                    WHERE p.email = \(email) AND p.account IS NULL
                    """
                ).map { row in
                    let (owner, zone) = try row.decode((String, String).self)
                    return ZoneID(owner: owner, name: zone)
                }
                var resolved = 0
                for zone in zones where try await context.take(zone) {
                    resolved += try await sql.count(
                        """
                        UPDATE participants p SET account = \(name), changed_seq = \(try context.nextSeq(in: zone))
                        FROM shares s WHERE s.id = p.share_id AND s.owner = \(zone.owner) AND s.zone = \(zone.name)
                          AND p.email = \(email) AND p.account IS NULL AND p.share_id NOT IN (SELECT share_id FROM participants WHERE account = \(name))
                        RETURNING 1
                        """)
                }
                if resolved > 0 {
                    context.notices.insert(ChangeNotice(account: name, scope: .shared, zone: nil))
                }
            }
            return account
        }
    }

    public func account(named name: String) async throws(NotesError) -> Account? {
        try await readOne { sql in
            try await sql.row("SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE name = \(name)").map { try Self.account(from: $0) }
        }
    }

    public func accounts() async throws(NotesError) -> [Account] {
        try await readOne { sql in
            try await sql.rows("SELECT \(unescaped: Self.accountColumns) FROM accounts ORDER BY name COLLATE \"C\"").map { try Self.account(from: $0) }
        }
    }

    public func issueToken(for name: String, lifetime: Double?, label: String?) async throws(NotesError) -> (token: String, info: TokenInfo) {
        if let lifetime { try Limits.validateLifetime(lifetime, field: "expiresIn", allowsZero: false) }
        if let label { try Names.validateLabel(label) }
        return try await write(.none) { context in
            guard try await context.sql.exists("SELECT 1 FROM accounts WHERE name = \(name)") else {
                throw NotesError(.unknownItem, "\(name) is not an account on this server; create it with `notes account create \(name)`.")
            }
            return try await self.insertToken(context, for: name, lifetime: lifetime, label: label)
        }
    }

    /// Issues a token inside a write transaction, within the account's count of tokens.
    func insertToken(_ context: PostgresWrite, for name: String, lifetime: Double?, label: String?) async throws -> (token: String, info: TokenInfo) {
        let made = TokenSecrets.make()
        let live =
            try await context.sql.value(
                "SELECT COUNT(*) FROM tokens WHERE account = \(name) AND (expires_at IS NULL OR expires_at > \(context.now.storedValue))", as: Int64.self) ?? 0
        try storage.checkCount(.tokens, has: Int(live), owner: name, actor: name)
        let expiry = lifetime.map { context.now.addingTimeInterval($0) }
        try await context.sql.execute(
            """
            INSERT INTO tokens (id, account, secret_hash, created_at, expires_at, label)
            VALUES (\(made.id), \(name), \(Data(made.hash)), \(context.now.storedValue), \(expiry?.storedValue), \(label))
            """)
        return (made.token, TokenInfo(id: made.id, account: name, label: label, createdAt: context.now, expiresAt: expiry))
    }

    // MARK: Sign-in links

    public func createSignInLink(for account: String, lifetime: Double, createdBy: String?) async throws(NotesError) -> (code: SignInCode, info: SignInLinkInfo) {
        let made = SignInLinks.make()
        return try await write(.none) { context in
            let sql = context.sql
            // Locked, so that two links made at once count each other.
            guard try await sql.exists("SELECT 1 FROM accounts WHERE name = \(account) FOR UPDATE") else {
                throw NotesError(.unknownItem, "\(account) is not an account on this server; create it with `notes account create \(account) --link`.")
            }
            let now = context.now.storedValue
            // Links past their time say nothing useful any more.
            try await sql.execute("DELETE FROM sign_in_links WHERE account = \(account) AND expires_at <= \(now)")
            let waiting = try await sql.value("SELECT COUNT(*) FROM sign_in_links WHERE account = \(account) AND used_at IS NULL", as: Int64.self) ?? 0
            guard waiting < Limits.signInLinksPerAccount else {
                throw NotesError(
                    .constraintViolation,
                    "\(account) already has \(waiting) sign-in links waiting to be used; revoke some first (`notes account links \(account)`, `notes account revoke-link ID`).")
            }
            let info = SignInLinkInfo(id: made.code.id, account: account, createdBy: createdBy, createdAt: context.now, expiresAt: context.now.addingTimeInterval(lifetime))
            try await sql.execute(
                """
                INSERT INTO sign_in_links (id, account, secret_hash, created_by, created_at, expires_at)
                VALUES (\(info.id), \(account), \(Data(made.hash)), \(createdBy), \(now), \(info.expiresAt.storedValue))
                """)
            return (made.code, info)
        }
    }

    public func signInLinks(of account: String) async throws(NotesError) -> [SignInLinkInfo] {
        let now = clock().storedValue
        return try await readOne { sql in
            try await sql.rows(
                """
                SELECT id, account, created_by, created_at, expires_at, used_at FROM sign_in_links
                WHERE account = \(account) AND used_at IS NULL AND expires_at > \(now) ORDER BY created_at, id
                """
            ).map(Self.signInLinkInfo(from:))
        }
    }

    public func revokeSignInLink(id: String) async throws(NotesError) -> SignInLinkInfo {
        try await write(.none) { context in
            let row = try await context.sql.row(
                "DELETE FROM sign_in_links WHERE id = \(id) RETURNING id, account, created_by, created_at, expires_at, used_at")
            guard let row else { throw NotesError(.unknownItem, "There is no sign-in link \(id); `notes account links NAME` lists them.") }
            return try Self.signInLinkInfo(from: row)
        }
    }

    public func redeemSignInLink(_ code: SignInCode, label: String?, client: String?) async throws(NotesError) -> (token: String, info: TokenInfo) {
        try await SignInLinks.redeem(code, label: label, client: client, store: self)
    }

    package func exchangeSignInLink(_ code: SignInCode, label: String?) async throws(NotesError) -> (token: String, info: TokenInfo) {
        if let label { try Names.validateLabel(label) }
        return try await write(.none) { context in
            // Locked: of two uses at once, the second waits and then finds the link used.
            let stored = try await context.sql.row(
                """
                SELECT l.account, l.secret_hash, l.expires_at, l.used_at, a.disabled_at FROM sign_in_links l
                JOIN accounts a ON a.name = l.account WHERE l.id = \(code.id) FOR UPDATE OF l
                """
            ).map { row in
                let (account, hash, expires, used, disabled) = try row.decode((String, Data, Double, Double?, Double?).self)
                return SignInLinks.Stored(account: account, secretHash: Array(hash), expiresAt: expires, usedAt: used, accountDisabled: disabled != nil)
            }
            let account = try SignInLinks.check(stored, presented: code, now: context.now.storedValue).get()
            try await context.sql.execute("UPDATE sign_in_links SET used_at = \(context.now.storedValue) WHERE id = \(code.id)")
            return try await self.insertToken(context, for: account, lifetime: nil, label: label)
        }
    }

    static func signInLinkInfo(from row: PostgresRow) throws -> SignInLinkInfo {
        let (id, account, createdBy, createdAt, expiresAt, usedAt) = try row.decode((String, String, String?, Double, Double, Double?).self)
        return SignInLinkInfo(
            id: id, account: account, createdBy: createdBy, createdAt: Date(stored: createdAt), expiresAt: Date(stored: expiresAt),
            usedAt: usedAt.map { Date(stored: $0) })
    }

    public func authenticate(token: String) async throws(NotesError) -> AuthenticatedToken? {
        guard let parts = TokenSecrets.parse(token), !parts.id.utf8.contains(0) else { return nil }
        let presented = TokenSecrets.hash(parts.secret)
        let now = clock().storedValue
        return try await readOne { sql in
            guard
                let row = try await sql.row(
                    """
                    SELECT t.secret_hash, t.expires_at, a.name, a.email, a.is_admin, a.created_at, a.disabled_at
                    FROM tokens t JOIN accounts a ON a.name = t.account WHERE t.id = \(parts.id)
                    """)
            else { return nil }
            let (stored, expiry) = try row.decode((Data, Double?).self)
            guard TokenSecrets.constantTimeEqual(Array(stored), presented) else { return nil }
            if let expiry, expiry < now { return nil }
            let account = try Self.account(from: row, at: 2)
            guard !account.isDisabled else { return nil }
            return AuthenticatedToken(account: account, tokenID: parts.id, expiresAt: expiry.map(Date.init(stored:)))
        }
    }

    public func tokens(of account: String) async throws(NotesError) -> [TokenInfo] {
        let now = clock().storedValue
        return try await readOne { sql in
            try await sql.rows(
                """
                SELECT id, account, label, created_at, expires_at FROM tokens
                WHERE account = \(account) AND (expires_at IS NULL OR expires_at >= \(now)) ORDER BY created_at, issued
                """
            ).map(Self.tokenInfo(from:))
        }
    }

    public func revokeToken(id: String, owner: String?) async throws(NotesError) -> TokenInfo {
        try await write(.none) { context in
            let row = try await context.sql.row(
                "DELETE FROM tokens WHERE id = \(id) AND (\(owner)::TEXT IS NULL OR account = \(owner)) RETURNING id, account, label, created_at, expires_at")
            // Someone else's token reads as no token at all: ids are not to be probed.
            guard let row else {
                throw NotesError(.unknownItem, "There is no token \(id) of yours; `GET /v1/tokens` lists them.")
            }
            let info = try Self.tokenInfo(from: row)
            try await announce(ending: [.token(info.id)], in: context)
            return info
        }
    }

    public func setAccountDisabled(_ name: String, _ disabled: Bool) async throws(NotesError) -> Account {
        try await write(.none) { context in
            let row = try await context.sql.row(
                """
                UPDATE accounts SET disabled_at = CASE WHEN \(disabled) THEN COALESCE(disabled_at, \(context.now.storedValue)) ELSE NULL END
                WHERE name = \(name) RETURNING \(unescaped: Self.accountColumns)
                """)
            guard let row else {
                throw NotesError(.unknownItem, "\(name) is not an account on this server.")
            }
            if disabled { try await announce(ending: [.account(name)], in: context) }
            return try Self.account(from: row)
        }
    }

    /// Tells every instance on the database to end these streams, when (and only when)
    /// the transaction commits: each ends those it holds (`PostgresChangeListener`).
    func announce(ending: [PostgresChangeFeed.Ending], in context: PostgresWrite) async throws {
        guard let feed = changeFeed else { return }
        try await context.sql.execute("SELECT pg_notify(\(feed.channel), \(feed.payload(ending: ending)))")
    }

    public func deleteAccount(_ name: String) async throws(NotesError) -> API.AccountDeleted {
        // Its shares stop and it leaves others' shares: changes in many zones.
        try await write(.everyZone) { context in
            let sql = context.sql
            guard try await sql.exists("SELECT 1 FROM accounts WHERE name = \(name) FOR UPDATE") else {
                throw NotesError(.unknownItem, "\(name) is not an account on this server.")
            }
            try await announce(ending: [.account(name)], in: context)
            let zones = try await sql.column("SELECT name FROM zones WHERE owner = \(name)", as: String.self)
            let records = try await sql.value("SELECT COUNT(*) FROM records WHERE owner = \(name)", as: Int64.self) ?? 0
            var stopped = 0
            let writer = PostgresShareWriter(context: context)
            for zone in zones.map({ ZoneID(owner: name, name: $0) }) where try await context.take(zone) {
                for shareID in try await sql.column("SELECT id FROM shares WHERE owner = \(zone.owner) AND zone = \(zone.name) AND NOT stopped", as: String.self) {
                    try await writer.stop(shareID: shareID, zone: zone)
                    stopped += 1
                }
            }
            try await sql.execute("DELETE FROM records WHERE owner = \(name)")
            try await sql.execute("DELETE FROM tombstones WHERE owner = \(name)")
            try await sql.execute("DELETE FROM versions WHERE owner = \(name)")
            try await sql.execute("DELETE FROM trash WHERE owner = \(name)")
            try await sql.execute("DELETE FROM zone_tombstones WHERE owner = \(name)")
            try await sql.execute("DELETE FROM zones WHERE owner = \(name)")
            // Others' shares it took part in: it leaves them, and their owners are told.
            let joined = try await sql.rows(
                """
                SELECT s.owner, s.zone, COUNT(*) FROM participants p JOIN shares s ON s.id = p.share_id
                WHERE p.account = \(name) AND p.role != 'owner' AND p.status != 'removed' AND NOT s.stopped
                GROUP BY s.owner, s.zone
                """
            ).map { row in try row.decode((String, String, Int64).self) }
            for (owner, zone, _) in joined where try await context.take(ZoneID(owner: owner, name: zone)) {
                try await sql.execute(
                    """
                    UPDATE participants p SET status = 'removed', changed_seq = \(try context.nextSeq(in: ZoneID(owner: owner, name: zone)))
                    FROM shares s WHERE s.id = p.share_id AND s.owner = \(owner) AND s.zone = \(zone)
                      AND p.account = \(name) AND p.role != 'owner' AND p.status != 'removed'
                    """)
            }
            for (owner, zone, _) in joined { context.notices.insert(ChangeNotice(account: owner, scope: .private, zone: ZoneID(owner: owner, name: zone))) }
            try await sql.execute("DELETE FROM usage WHERE owner = \(name)")
            // (its tokens go with it: ON DELETE CASCADE)
            try await sql.execute("DELETE FROM accounts WHERE name = \(name)")
            return API.AccountDeleted(
                name: name, zones: zones.count, records: Int(records), sharesStopped: stopped,
                sharesLeft: Int(joined.reduce(0) { $0 + $1.2 }))
        }
    }

    static func tokenInfo(from row: PostgresRow) throws -> TokenInfo {
        let (id, account, label, createdAt, expiresAt) = try row.decode((String, String, String?, Double, Double?).self)
        return TokenInfo(id: id, account: account, label: label, createdAt: Date(stored: createdAt), expiresAt: expiresAt.map { Date(stored: $0) })
    }

    /// An account from `accountColumns`, starting at column `first` of the row.
    static func account(from row: PostgresRow, at first: Int = 0) throws -> Account {
        let cells = row.makeRandomAccess()
        let name = try cells[first].decode(String.self)
        let email = try cells[first + 1].decode(String?.self)
        let isAdmin = try cells[first + 2].decode(Bool.self)
        let createdAt = try cells[first + 3].decode(Double.self)
        let disabledAt = try cells[first + 4].decode(Double?.self)
        return Account(name: name, email: email, isAdmin: isAdmin, createdAt: Date(stored: createdAt), isDisabled: disabledAt != nil)
    }
}
