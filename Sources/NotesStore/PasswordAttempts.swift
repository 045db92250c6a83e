package import Foundation
import GRDB
package import NotesModel

/// What a store keeps for link passwords: the password of a live link, and the count
/// of wrong guesses (in the store, so that every notesd sharing it sees the same count).
package protocol LinkPasswordStore: Sendable {
    /// The salt and hash of a live link's password, or nil when it has none (or no such link).
    func passwordOfLink(_ urlToken: String) async throws(NotesError) -> (shareID: String, salt: Data, hash: Data)?
    /// The window start and failures counted under each key that has a row.
    func passwordAttempts(_ keys: [String]) async throws(NotesError) -> [(windowStart: Double, failures: Int, key: String)]
    /// Counts one wrong guess under each key at `now` (seconds since 1970).
    func countPasswordFailure(_ keys: [String]) async throws(NotesError)
    /// What "now" is for the store.
    var now: Date { get }
}

/// Wrong link passwords, counted per link and per client address in fixed windows
/// (`Limits.passwordWindowSeconds`). Over either limit, guesses get 429 with the
/// seconds left in the window.
package enum PasswordAttempts {
    static func keys(shareID: String, client: String) -> [(key: String, limit: Int)] {
        [("link:\(shareID)", Limits.passwordFailuresPerLink), ("client:\(client)", Limits.passwordFailuresPerClient)]
    }

    /// Checks a password given to accept a link, before the write: the count of wrong
    /// guesses first (429 once over it), then PBKDF2 on a thread of its own, so that
    /// guessing holds neither the writer nor a thread of the server. Returns the hash
    /// it checked against, which the write compares with the one stored (a changed
    /// password: retry); nil when no password was given or the link needs none.
    package static func verify(_ password: String?, urlToken: String, actor: String, client: String?, store: some LinkPasswordStore) async throws(NotesError) -> Data? {
        if let password, password.utf8.count > 1024 { throw NotesError(.invalidArguments, "The password is longer than 1,024 bytes.") }
        guard let password, let guarded = try await store.passwordOfLink(urlToken) else { return nil }
        let keys = keys(shareID: guarded.shareID, client: client ?? "account:\(actor)")
        try await refuseIfOver(store, keys)
        guard await LinkPasswords.matchesOffThread(password, salt: [UInt8](guarded.salt), hash: [UInt8](guarded.hash)) else {
            try await store.countPasswordFailure(keys.map(\.key))
            throw NotesError(.permissionFailure, "That is not the link's password; check it with its owner.")
        }
        return guarded.hash
    }

    /// Checks a password typed on a public link's page and makes the pass its pages take
    /// (`RecordStore.unlockPublicLink`): wrong guesses are counted as for `verify`, and
    /// the pass ends with the link (`LinkPass.expiry`). `nil`: the link needs no password.
    package static func unlock(_ password: String, urlToken: String, client: String?, store: some LinkPasswordStore & RecordStore) async throws(NotesError) -> (
        pass: String, expires: Date
    )? {
        // Unknown, private and expired links answer as they do to anyone: not found.
        switch await readable(urlToken, pass: nil, store: store) {
        case .success: return nil
        case .failure(let error) where error.code != .notAuthenticated: throw error
        case .failure: break
        }
        guard let guarded = try await store.passwordOfLink(urlToken) else { throw ShareRules.noPublicPage }
        let keys = keys(shareID: guarded.shareID, client: client ?? "socket")
        try await refuseIfOver(store, keys)
        // (Longer than any a link can have: wrong, without hashing it.)
        guard password.utf8.count <= 1024, await LinkPasswords.matchesOffThread(password, salt: [UInt8](guarded.salt), hash: [UInt8](guarded.hash)) else {
            try await store.countPasswordFailure(keys.map(\.key))
            throw NotesError(.permissionFailure, "That is not the link's password; check it with the person who sent you the link.")
        }
        let now = store.now
        // Read the link again with a pass: this also finds a password changed meanwhile.
        let share = try await readable(urlToken, pass: LinkPass.make(urlToken: urlToken, passwordHash: guarded.hash, expires: now.addingTimeInterval(60)), store: store).get()
        let expires = LinkPass.expiry(now: now, linkExpires: share.publicExpiresAt)
        return (LinkPass.make(urlToken: urlToken, passwordHash: guarded.hash, expires: expires), expires)
    }

    private static func readable(_ urlToken: String, pass: String?, store: some RecordStore) async -> Result<Share, NotesError> {
        do {
            return .success(try await store.publicShare(urlToken: urlToken, pass: pass).share)
        } catch {
            return .failure(error)
        }
    }

    static func refuseIfOver(_ store: some LinkPasswordStore, _ keys: [(key: String, limit: Int)]) async throws(NotesError) {
        let now = store.now.timeIntervalSince1970
        let limits = Dictionary(keys.map { ($0.key, $0.limit) }, uniquingKeysWith: { first, _ in first })
        var longest: Double?
        for row in try await store.passwordAttempts(keys.map(\.key)) {
            let end = row.windowStart + Limits.passwordWindowSeconds
            if now < end, let limit = limits[row.key], row.failures >= limit { longest = max(longest ?? 0, end - now) }
        }
        if let wait = longest {
            let seconds = Int(wait.rounded(.up))
            throw NotesError(.requestRateLimited, "Too many wrong passwords for this link; try again in \(seconds) seconds.", retryAfter: seconds)
        }
    }
}

extension SQLiteStore: LinkPasswordStore {
    package var now: Date { clock() }

    package func passwordOfLink(_ urlToken: String) async throws(NotesError) -> (shareID: String, salt: Data, hash: Data)? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT id, password_salt, password_hash FROM shares WHERE url_token = ? AND stopped = 0"),
                    arguments: [urlToken]),
                let salt = row[1] as Data?, let hash = row[2] as Data?
            else { return nil }
            return (row[0], salt, hash)
        }
    }

    package func passwordAttempts(_ keys: [String]) async throws(NotesError) -> [(windowStart: Double, failures: Int, key: String)] {
        try await read { db in
            try keys.compactMap { key in
                try Row.fetchOne(db.cachedStatement(sql: "SELECT window_start, failures FROM password_attempts WHERE key = ?"), arguments: [key])
                    .map { (windowStart: $0[0], failures: $0[1], key: key) }
            }
        }
    }

    package func countPasswordFailure(_ keys: [String]) async throws(NotesError) {
        try await write { context in
            let now = context.now.timeIntervalSince1970
            for key in keys {
                // A new window starts when the last one is over.
                try context.db.cachedStatement(
                    sql: """
                        INSERT INTO password_attempts (key, window_start, failures) VALUES (?, ?, 1)
                        ON CONFLICT (key) DO UPDATE SET
                            failures = CASE WHEN window_start + ? <= excluded.window_start THEN 1 ELSE failures + 1 END,
                            window_start = CASE WHEN window_start + ? <= excluded.window_start THEN excluded.window_start ELSE window_start END
                        """
                ).execute(arguments: [key, now, Limits.passwordWindowSeconds, Limits.passwordWindowSeconds])
            }
            // Old windows are of no use: keep the table small.
            try context.db.cachedStatement(sql: "DELETE FROM password_attempts WHERE window_start < ?").execute(arguments: [now - 2 * Limits.passwordWindowSeconds])
        }
    }
}
