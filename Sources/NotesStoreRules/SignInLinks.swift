import Foundation
package import NotesModel

/// Sign-in links: `nsl_<id>_<secret>`, made like tokens (the id finds the row, the
/// secret of 256 random bits is stored only as SHA-256 and compared in constant time)
/// and checked by one rule on both backends.
package enum SignInLinks {
    /// What a store read for a presented link.
    package struct Stored {
        package var account: String
        package var secretHash: [UInt8]
        package var expiresAt: Double
        package var usedAt: Double?
        package var accountDisabled: Bool

        package init(account: String, secretHash: [UInt8], expiresAt: Double, usedAt: Double?, accountDisabled: Bool) {
            self.account = account
            self.secretHash = secretHash
            self.expiresAt = expiresAt
            self.usedAt = usedAt
            self.accountDisabled = accountDisabled
        }
    }

    package static func make() -> (code: SignInCode, hash: [UInt8]) {
        let code = SignInCode(id: SecureRandom.hex(bytes: 8), secret: SecureRandom.token(bytes: 32))
        return (code, TokenSecrets.hash(code.secret))
    }

    /// Forged and unknown links read alike: ids are not to be probed.
    package static let invalid = NotesError(
        .notAuthenticated, "This sign-in link is not valid: check that it was copied whole, or ask your admin for a new one (`notes account link NAME`).")

    /// The account the link signs in as, or why it does not. Only a holder of the
    /// secret learns that a link was used or expired.
    package static func check(_ stored: Stored?, presented code: SignInCode, now: Double) -> Result<String, NotesError> {
        guard let stored, TokenSecrets.constantTimeEqual(stored.secretHash, TokenSecrets.hash(code.secret)) else { return .failure(invalid) }
        if let used = stored.usedAt {
            return .failure(
                NotesError(
                    .notAuthenticated,
                    "This sign-in link was used at \(ISO8601.string(from: Date(timeIntervalSince1970: used))); each link works once. Ask your admin for a new one (`notes account link \(stored.account)`)."
                ))
        }
        if stored.expiresAt <= now {
            return .failure(
                NotesError(
                    .notAuthenticated,
                    "This sign-in link expired at \(ISO8601.string(from: Date(timeIntervalSince1970: stored.expiresAt))). Ask your admin for a new one (`notes account link \(stored.account)`)."
                ))
        }
        if stored.accountDisabled {
            return .failure(NotesError(.notAuthenticated, "The account \(stored.account) is disabled; ask your admin to enable it."))
        }
        return .success(stored.account)
    }
}

/// A store's one transaction that exchanges a sign-in link for a token (see
/// `RecordStore.redeemSignInLink`); `SignInLinks.redeem` counts its failures.
package protocol SignInLinkExchange: LinkPasswordStore {
    func exchangeSignInLink(_ code: SignInCode, label: String?) async throws(NotesError) -> (token: String, info: TokenInfo)
}

extension SignInLinks {
    /// Exchanges a sign-in link for a token, counting failures per client address in the
    /// store's guess counts (those of link passwords): past
    /// `Limits.signInFailuresPerClient` in a window, 429 until it ends. A failure takes
    /// its place in the count before the link is checked, and a success gives it back.
    package static func redeem(_ code: SignInCode, label: String?, client: String?, store: some SignInLinkExchange) async throws(NotesError) -> (
        token: String, info: TokenInfo
    ) {
        let key = "sign-in:client:\(client ?? "socket")"
        let now = store.now.timeIntervalSince1970
        if let seconds = store.guessRefusals.wait(for: [key], now: now) { throw refusal(seconds) }
        if case .refused(let seconds, let until) = try await store.reservePasswordGuess([(key, Limits.signInFailuresPerClient)]) {
            store.guessRefusals.remember(until, now: now)
            throw refusal(seconds)
        }
        do {
            let issued = try await store.exchangeSignInLink(code, label: label)
            try await store.releasePasswordGuess([key])
            return issued
        } catch {
            // Only a refused link counts against the caller.
            if error.code != .notAuthenticated { try await store.releasePasswordGuess([key]) }
            throw error
        }
    }

    static func refusal(_ seconds: Int) -> NotesError {
        NotesError(.requestRateLimited, "Too many sign-in links from here were refused; try again in \(seconds) seconds.", retryAfter: seconds)
    }
}
