package import Foundation
package import NotesModel
import NotesWork
import Synchronization

/// What a store keeps for link passwords: the password of a live link, and the count
/// of guesses (in the store, so that every notesd sharing it sees the same count).
package protocol LinkPasswordStore: Sendable {
    /// The salt and hash of a live link's password, or nil when it has none (or no such link).
    func passwordOfLink(_ urlToken: String) async throws(NotesError) -> (shareID: String, salt: Data, hash: Data)?
    /// In one transaction: makes a row for each key that has none, reads them locked,
    /// and writes what `PasswordAttempts.admit` decides; returns its answer.
    func reservePasswordGuess(_ keys: [(key: String, limit: Int)]) async throws(NotesError) -> PasswordAttempts.Admission
    /// Takes back one guess under each key (it was right, or never checked).
    func releasePasswordGuess(_ keys: [String]) async throws(NotesError)
    /// What "now" is for the store.
    var now: Date { get }
    /// The keys this process has seen refused, until their windows end.
    var guessRefusals: GuessRefusals { get }
}

/// One key's count as stored: the start of its window and the guesses in it.
package struct GuessCount: Sendable, Equatable {
    package var key: String
    package var windowStart: Double
    package var guesses: Int
    package init(key: String, windowStart: Double, guesses: Int) {
        self.key = key
        self.windowStart = windowStart
        self.guesses = guesses
    }
}

/// Link passwords guessed, counted per link and per client address in fixed windows
/// (`Limits.passwordWindowSeconds`). Over either limit, guesses get 429 with the
/// seconds left in the window.
///
/// A guess takes its place in the count before its hash is computed, in the same
/// transaction that checks the count, and gives it back only if it was right: when the
/// count was read first and a failure written after the hash, 200 guesses sent at once
/// from one address (limit 10) were all past the check before the first failure was
/// written, and 78 of them were hashed and answered.
package enum PasswordAttempts {
    /// What `admit` decided: the guess is counted, or refused for this many seconds
    /// because the keys `until` names are at their limits until then.
    package enum Admission: Sendable, Equatable {
        case counted
        case refused(retryAfter: Int, until: [String: Double])
    }

    /// The counts to write for one more guess under every key, or the wait when any key
    /// is at its limit in its window (then nothing changes). A window that is over
    /// starts again at `now`.
    package static func admit(_ stored: [GuessCount], limits: [(key: String, limit: Int)], now: Double) -> (Admission, write: [GuessCount]) {
        let byKey = Dictionary(stored.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var full: [String: Double] = [:]
        var next: [GuessCount] = []
        for (key, limit) in limits {
            var count = byKey[key] ?? GuessCount(key: key, windowStart: now, guesses: 0)
            if count.windowStart + Limits.passwordWindowSeconds <= now {
                count = GuessCount(key: key, windowStart: now, guesses: 0)
            }
            let end = count.windowStart + Limits.passwordWindowSeconds
            if count.guesses >= limit { full[key] = end }
            count.guesses += 1
            next.append(count)
        }
        if let end = full.values.max() { return (.refused(retryAfter: max(1, Int((end - now).rounded(.up))), until: full), []) }
        return (.counted, next)
    }

    static func refusal(_ seconds: Int) -> NotesError {
        NotesError(.requestRateLimited, "Too many wrong passwords for this link; try again in \(seconds) seconds.", retryAfter: seconds)
    }

    /// Counts a guess, runs PBKDF2 on the password gate, and gives the guess back when
    /// it was right (or the check could not run). Returns whether it was right.
    static func guess(_ password: String, against guarded: (shareID: String, salt: Data, hash: Data), client: String, store: some LinkPasswordStore) async throws(NotesError)
        -> Bool
    {
        let keys = keys(shareID: guarded.shareID, client: client)
        if let seconds = store.guessRefusals.wait(for: keys.map(\.key), now: store.now.timeIntervalSince1970) { throw refusal(seconds) }
        // One guess at a time per link and per address in this process (always the link's
        // turn first, so no two guesses wait for each other): 32 guesses at once from one
        // address were 32 transactions queued on the same rows, each holding a database
        // connection, for the answer the tenth had already given.
        let turns = keys.map(\.key)
        do {
            try await guessTurns.acquire(turns[0])
        } catch {
            throw busy(error)
        }
        defer { guessTurns.release(turns[0]) }
        do {
            try await guessTurns.acquire(turns[1])
        } catch {
            throw busy(error)
        }
        defer { guessTurns.release(turns[1]) }
        let now = store.now.timeIntervalSince1970
        if let seconds = store.guessRefusals.wait(for: turns, now: now) { throw refusal(seconds) }
        if case .refused(let seconds, let until) = try await store.reservePasswordGuess(keys) {
            store.guessRefusals.remember(until, now: now)
            throw refusal(seconds)
        }
        let right: Bool
        do {
            // (Longer than any a link can have: wrong, without hashing it.)
            if password.utf8.count > 1024 {
                right = false
            } else {
                right = try await LinkPasswords.check(password, salt: [UInt8](guarded.salt), hash: [UInt8](guarded.hash))
            }
        } catch {
            try await store.releasePasswordGuess(keys.map(\.key))
            throw error
        }
        if right { try await store.releasePasswordGuess(keys.map(\.key)) }
        return right
    }

    static func clientKey(_ client: String) -> String { "client:\(client)" }

    /// Whose turn it is to guess, by guess key (`guess`).
    static let guessTurns = KeyedTurns<String>(waitingPerAccount: 16) { _ in "password checks of this link" }

    /// A guess that could not wait for its turn: refused (too many waiting), or cancelled.
    private static func busy(_ error: any Error) -> NotesError {
        (error as? NotesError) ?? NotesError(.serviceUnavailable, "The password check was cancelled; try again.")
    }

    static func keys(shareID: String, client: String) -> [(key: String, limit: Int)] {
        [("link:\(shareID)", Limits.passwordFailuresPerLink), (clientKey(client), Limits.passwordFailuresPerClient)]
    }

    /// Checks a password given to accept a link, before the write: the count of wrong
    /// guesses first (429 once over it), then PBKDF2 on a thread of its own, so that
    /// guessing holds neither the writer nor a thread of the server. Returns the hash
    /// it checked against, which the write compares with the one stored (a changed
    /// password: retry); nil when no password was given or the link needs none.
    package static func verify(_ password: String?, urlToken: String, actor: String, client: String?, store: some LinkPasswordStore) async throws(NotesError) -> Data? {
        if let password, password.utf8.count > 1024 { throw NotesError(.invalidArguments, "The password is longer than 1,024 bytes.") }
        guard let password else { return nil }
        let client = client ?? "account:\(actor)"
        try refuseEarly(client, store: store)
        guard let guarded = try await store.passwordOfLink(urlToken) else { return nil }
        guard try await guess(password, against: guarded, client: client, store: store) else {
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
        // An address already refused learns nothing more, about this link or any other.
        let client = client ?? "socket"
        try refuseEarly(client, store: store)
        // Unknown, private and expired links answer as they do to anyone: not found.
        switch await readable(urlToken, pass: nil, store: store) {
        case .success: return nil
        case .failure(let error) where error.code != .notAuthenticated: throw error
        case .failure: break
        }
        guard let guarded = try await store.passwordOfLink(urlToken) else { throw ShareRules.noPublicPage }
        guard try await guess(password, against: guarded, client: client, store: store) else {
            throw NotesError(.permissionFailure, "That is not the link's password; check it with the person who sent you the link.")
        }
        let now = store.now
        // Read the link again with a pass: this also finds a password changed meanwhile.
        let share = try await readable(urlToken, pass: LinkPass.make(urlToken: urlToken, passwordHash: guarded.hash, expires: now.addingTimeInterval(60)), store: store).get()
        let expires = LinkPass.expiry(now: now, linkExpires: share.publicExpiresAt)
        return (LinkPass.make(urlToken: urlToken, passwordHash: guarded.hash, expires: expires), expires)
    }

    /// A client this process already saw refused is refused before the link is read.
    private static func refuseEarly(_ client: String, store: some LinkPasswordStore) throws(NotesError) {
        if let seconds = store.guessRefusals.wait(for: [clientKey(client)], now: store.now.timeIntervalSince1970) { throw refusal(seconds) }
    }

    private static func readable(_ urlToken: String, pass: String?, store: some RecordStore) async -> Result<Share, NotesError> {
        do {
            return .success(try await store.publicShare(urlToken: urlToken, pass: pass).share)
        } catch {
            return .failure(error)
        }
    }
}

/// The guess keys this process saw refused, each until the end of its window: further
/// guesses under them are refused here, without a transaction. 200 guesses at once
/// from one address each took a write transaction to learn the answer the tenth had
/// already given, and on PostgreSQL queued on the same row lock, hundreds a second. The
/// store stays the authority: this only refuses what it refused (another notesd learns
/// it from its own first refusal), never admits.
package final class GuessRefusals: Sendable {
    /// Keys remembered at most; past it, refusals are not remembered (the store still
    /// refuses them).
    static let capacity = 100_000

    private let until = Mutex<[String: Double]>([:])

    package init() {}

    /// The seconds to wait when any of `keys` is remembered as refused at `now`.
    package func wait(for keys: [String], now: Double) -> Int? {
        let end = until.withLock { until in keys.compactMap { until[$0] }.max() }
        guard let end, end > now else { return nil }
        return max(1, Int((end - now).rounded(.up)))
    }

    /// Remembers keys refused until the times given.
    package func remember(_ refused: [String: Double], now: Double) {
        until.withLock { until in
            if until.count + refused.count > Self.capacity { until = until.filter { $0.value > now } }
            guard until.count + refused.count <= Self.capacity else { return }
            until.merge(refused) { max($0, $1) }
        }
    }
}
