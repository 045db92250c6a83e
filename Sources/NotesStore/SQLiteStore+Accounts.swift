import Foundation
import GRDB
public import NotesModel
import NotesStoreRules

extension SQLiteStore {
    public func createAccount(name: String, email: String?, isAdmin: Bool) async throws(NotesError) -> Account {
        try Names.validateAccount(name)
        if let email { try Names.validateEmail(email) }
        return try await write { context in
            let db = context.db
            if try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM accounts WHERE name = ?"), arguments: [name]) == true {
                throw NotesError(.constraintViolation, "An account named \(name) already exists.")
            }
            if let email, try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM accounts WHERE email = ?"), arguments: [email]) == true {
                throw NotesError(.constraintViolation, "Another account already has the email \(email).")
            }
            let account = Account(name: name, email: email, isAdmin: isAdmin, createdAt: context.now)
            try db.cachedStatement(sql: "INSERT INTO accounts (name, email, is_admin, created_at) VALUES (?, ?, ?, ?)").execute(arguments: [
                name, email, isAdmin, context.now.storedValue,
            ])
            let epoch = context.nextSeq()
            try db.cachedStatement(sql: "INSERT INTO zones (owner, name, epoch, changed_seq) VALUES (?, ?, ?, ?)").execute(arguments: [name, ZoneID.defaultZoneName, epoch, epoch])
            // Email invitations sent before the account existed now resolve to it.
            if let email {
                let seq = context.nextSeq()
                try db.cachedStatement(
                    sql: """
                        UPDATE participants SET account = ?, changed_seq = ?
                        WHERE email = ? AND account IS NULL AND share_id NOT IN (SELECT share_id FROM participants WHERE account = ?)
                        """
                ).execute(arguments: [name, seq, email, name])
                if db.changesCount > 0 {
                    context.notices.insert(ChangeNotice(account: name, scope: .shared, zone: nil))
                }
            }
            return account
        }
    }

    public func account(named name: String) async throws(NotesError) -> Account? {
        try await read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM accounts WHERE name = ?"), arguments: [name]).map(Self.account(from:))
        }
    }

    public func accounts() async throws(NotesError) -> [Account] {
        try await read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM accounts ORDER BY name")).map(Self.account(from:))
        }
    }

    public func issueToken(for name: String, lifetime: Double?, label: String?) async throws(NotesError) -> (token: String, info: TokenInfo) {
        if let lifetime { try Limits.validateLifetime(lifetime, field: "expiresIn", allowsZero: false) }
        if let label { try Names.validateLabel(label) }
        return try await write { context in
            guard try Bool.fetchOne(context.db.cachedStatement(sql: "SELECT 1 FROM accounts WHERE name = ?"), arguments: [name]) == true else {
                throw NotesError(.unknownItem, "\(name) is not an account on this server; create it with `notes account create \(name)`.")
            }
            return try self.insertToken(context, for: name, lifetime: lifetime, label: label)
        }
    }

    /// Issues a token inside a write transaction, within the account's count of tokens.
    func insertToken(_ context: WriteContext, for name: String, lifetime: Double?, label: String?) throws -> (token: String, info: TokenInfo) {
        let made = TokenSecrets.make()
        let live =
            try Int.fetchOne(
                context.db.cachedStatement(sql: "SELECT COUNT(*) FROM tokens WHERE account = ? AND (expires_at IS NULL OR expires_at > ?)"),
                arguments: [name, context.now.storedValue]) ?? 0
        try storage.checkCount(.tokens, has: live, owner: name, actor: name)
        let expiry = lifetime.map { context.now.addingTimeInterval($0) }
        try context.db.cachedStatement(sql: "INSERT INTO tokens (id, account, secret_hash, created_at, expires_at, label) VALUES (?, ?, ?, ?, ?, ?)")
            .execute(arguments: [made.id, name, Data(made.hash), context.now.storedValue, expiry?.storedValue, label])
        return (made.token, TokenInfo(id: made.id, account: name, label: label, createdAt: context.now, expiresAt: expiry))
    }

    // MARK: Sign-in links

    public func createSignInLink(for account: String, lifetime: Double, createdBy: String?) async throws(NotesError) -> (code: SignInCode, info: SignInLinkInfo) {
        let made = SignInLinks.make()
        return try await write { context in
            let db = context.db
            guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM accounts WHERE name = ?"), arguments: [account]) == true else {
                throw NotesError(.unknownItem, "\(account) is not an account on this server; create it with `notes account create \(account) --link`.")
            }
            let now = context.now.storedValue
            // Links past their time say nothing useful any more.
            try db.cachedStatement(sql: "DELETE FROM sign_in_links WHERE account = ? AND expires_at <= ?").execute(arguments: [account, now])
            let waiting = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM sign_in_links WHERE account = ? AND used_at IS NULL"), arguments: [account]) ?? 0
            guard waiting < Limits.signInLinksPerAccount else {
                throw NotesError(
                    .constraintViolation,
                    "\(account) already has \(waiting) sign-in links waiting to be used; revoke some first (`notes account links \(account)`, `notes account revoke-link ID`).")
            }
            let info = SignInLinkInfo(id: made.code.id, account: account, createdBy: createdBy, createdAt: context.now, expiresAt: context.now.addingTimeInterval(lifetime))
            try db.cachedStatement(sql: "INSERT INTO sign_in_links (id, account, secret_hash, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)")
                .execute(arguments: [info.id, account, Data(made.hash), createdBy, now, info.expiresAt.storedValue])
            return (made.code, info)
        }
    }

    public func signInLinks(of account: String) async throws(NotesError) -> [SignInLinkInfo] {
        let now = clock().storedValue
        return try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id, account, created_by, created_at, expires_at, used_at FROM sign_in_links
                        WHERE account = ? AND used_at IS NULL AND expires_at > ? ORDER BY created_at, rowid
                        """), arguments: [account, now]
            ).map(Self.signInLinkInfo(from:))
        }
    }

    public func revokeSignInLink(id: String) async throws(NotesError) -> SignInLinkInfo {
        try await write { context in
            let row = try Row.fetchOne(
                context.db.cachedStatement(sql: "SELECT id, account, created_by, created_at, expires_at, used_at FROM sign_in_links WHERE id = ?"), arguments: [id])
            guard let row else { throw NotesError(.unknownItem, "There is no sign-in link \(id); `notes account links NAME` lists them.") }
            try context.db.cachedStatement(sql: "DELETE FROM sign_in_links WHERE id = ?").execute(arguments: [id])
            return Self.signInLinkInfo(from: row)
        }
    }

    public func redeemSignInLink(_ code: SignInCode, label: String?, client: String?) async throws(NotesError) -> (token: String, info: TokenInfo) {
        try await SignInLinks.redeem(code, label: label, client: client, store: self)
    }

    package func exchangeSignInLink(_ code: SignInCode, label: String?) async throws(NotesError) -> (token: String, info: TokenInfo) {
        if let label { try Names.validateLabel(label) }
        return try await write { context in
            let db = context.db
            let stored = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT l.account, l.secret_hash, l.expires_at, l.used_at, a.disabled_at FROM sign_in_links l
                        JOIN accounts a ON a.name = l.account WHERE l.id = ?
                        """), arguments: [code.id]
            ).map { row in
                SignInLinks.Stored(
                    account: row[0], secretHash: Array(row[1] as Data), expiresAt: row[2], usedAt: row[3], accountDisabled: (row[4] as Double?) != nil)
            }
            let account = try SignInLinks.check(stored, presented: code, now: context.now.storedValue).get()
            try db.cachedStatement(sql: "UPDATE sign_in_links SET used_at = ? WHERE id = ?").execute(arguments: [context.now.storedValue, code.id])
            return try self.insertToken(context, for: account, lifetime: nil, label: label)
        }
    }

    static func signInLinkInfo(from row: Row) -> SignInLinkInfo {
        SignInLinkInfo(
            id: row["id"], account: row["account"], createdBy: row["created_by"], createdAt: Date(stored: row["created_at"]),
            expiresAt: Date(stored: row["expires_at"]), usedAt: (row["used_at"] as Double?).map { Date(stored: $0) })
    }

    public func authenticate(token: String) async throws(NotesError) -> AuthenticatedToken? {
        guard let parts = TokenSecrets.parse(token) else { return nil }
        let presented = TokenSecrets.hash(parts.secret)
        return try await read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT t.secret_hash, t.expires_at, a.* FROM tokens t JOIN accounts a ON a.name = t.account WHERE t.id = ?
                            """), arguments: [parts.id])
            else { return nil }
            let stored: Data = row["secret_hash"]
            guard TokenSecrets.constantTimeEqual(Array(stored), presented) else { return nil }
            let expiry: Double? = row["expires_at"]
            if let expiry, expiry < self.clock().storedValue { return nil }
            let account = Self.account(from: row)
            guard !account.isDisabled else { return nil }
            return AuthenticatedToken(account: account, tokenID: parts.id, expiresAt: expiry.map(Date.init(stored:)))
        }
    }

    public func tokens(of account: String) async throws(NotesError) -> [TokenInfo] {
        let now = clock().storedValue
        return try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id, account, label, created_at, expires_at FROM tokens
                        WHERE account = ? AND (expires_at IS NULL OR expires_at >= ?) ORDER BY created_at, rowid
                        """), arguments: [account, now]
            ).map(Self.tokenInfo(from:))
        }
    }

    public func revokeToken(id: String, owner: String?) async throws(NotesError) -> TokenInfo {
        try await write { context in
            let row = try Row.fetchOne(context.db.cachedStatement(sql: "SELECT id, account, label, created_at, expires_at FROM tokens WHERE id = ?"), arguments: [id])
            // Someone else's token reads as no token at all: ids are not to be probed.
            guard let row, owner == nil || row["account"] == owner else {
                throw NotesError(.unknownItem, "There is no token \(id) of yours; `GET /v1/tokens` lists them.")
            }
            try context.db.cachedStatement(sql: "DELETE FROM tokens WHERE id = ?").execute(arguments: [id])
            return Self.tokenInfo(from: row)
        }
    }

    public func setAccountDisabled(_ name: String, _ disabled: Bool) async throws(NotesError) -> Account {
        try await write { context in
            try context.db.cachedStatement(sql: "UPDATE accounts SET disabled_at = CASE WHEN ? THEN COALESCE(disabled_at, ?) ELSE NULL END WHERE name = ?")
                .execute(arguments: [disabled, context.now.storedValue, name])
            guard let row = try Row.fetchOne(context.db.cachedStatement(sql: "SELECT * FROM accounts WHERE name = ?"), arguments: [name]) else {
                throw NotesError(.unknownItem, "\(name) is not an account on this server.")
            }
            return Self.account(from: row)
        }
    }

    public func deleteAccount(_ name: String) async throws(NotesError) -> API.AccountDeleted {
        try await write { context in
            let db = context.db
            guard try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM accounts WHERE name = ?"), arguments: [name]) != nil else {
                throw NotesError(.unknownItem, "\(name) is not an account on this server.")
            }
            let zones = try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM zones WHERE owner = ?"), arguments: [name])
            let records = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM records WHERE owner = ?"), arguments: [name]) ?? 0
            var stopped = 0
            let writer = ShareWriter(context: context)
            for zone in zones.map({ ZoneID(owner: name, name: $0) }) {
                for shareID in try String.fetchAll(
                    db.cachedStatement(sql: "SELECT id FROM shares WHERE owner = ? AND zone = ? AND stopped = 0"), arguments: [zone.owner, zone.name])
                {
                    try writer.stop(shareID: shareID, zone: zone)
                    stopped += 1
                }
            }
            for table in ["records", "tombstones", "versions", "zone_tombstones", "trash"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE owner = ?", arguments: [name])
            }
            try db.cachedStatement(sql: "DELETE FROM zones WHERE owner = ?").execute(arguments: [name])
            // Others' shares it took part in: it leaves them, and their owners are told.
            let joined = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT DISTINCT s.owner, s.zone FROM participants p JOIN shares s ON s.id = p.share_id
                        WHERE p.account = ? AND p.role != 'owner' AND p.status != 'removed' AND s.stopped = 0
                        """), arguments: [name]
            ).map { ZoneID(owner: $0[0], name: $0[1]) }
            let left =
                try Int.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT COUNT(*) FROM participants p JOIN shares s ON s.id = p.share_id
                            WHERE p.account = ? AND p.role != 'owner' AND p.status != 'removed' AND s.stopped = 0
                            """), arguments: [name]) ?? 0
            try db.cachedStatement(sql: "UPDATE participants SET status = 'removed', changed_seq = ? WHERE account = ? AND role != 'owner' AND status != 'removed'")
                .execute(arguments: [context.nextSeq(), name])
            for zone in joined { context.notices.insert(ChangeNotice(account: zone.owner, scope: .private, zone: zone)) }
            try db.cachedStatement(sql: "DELETE FROM usage WHERE owner = ?").execute(arguments: [name])
            // (its tokens go with it: ON DELETE CASCADE)
            try db.cachedStatement(sql: "DELETE FROM accounts WHERE name = ?").execute(arguments: [name])
            return API.AccountDeleted(name: name, zones: zones.count, records: records, sharesStopped: stopped, sharesLeft: left)
        }
    }

    static func tokenInfo(from row: Row) -> TokenInfo {
        TokenInfo(
            id: row["id"], account: row["account"], label: row["label"], createdAt: Date(stored: row["created_at"]),
            expiresAt: (row["expires_at"] as Double?).map { Date(stored: $0) })
    }

    static func account(from row: Row) -> Account {
        Account(
            name: row["name"], email: row["email"], isAdmin: row["is_admin"], createdAt: Date(stored: row["created_at"]),
            isDisabled: (row["disabled_at"] as Double?) != nil)
    }
}
