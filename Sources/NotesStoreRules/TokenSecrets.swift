import Foundation
import NotesWork
import Crypto
import _CryptoExtras
package import NotesModel

/// Bearer tokens: `ntk_<id>_<secret>`. The id finds the stored row; the secret (256
/// random bits) is stored only as SHA-256 and compared in constant time, so neither a
/// database leak nor response timing reveals a usable token.
package enum TokenSecrets {
    package struct Parts {
        package var id: String
        package var secret: String
    }

    package static func make() -> (token: String, id: String, hash: [UInt8]) {
        let id = SecureRandom.hex(bytes: 8)
        let secret = SecureRandom.token(bytes: 32)
        return ("ntk_\(id)_\(secret)", id, hash(secret))
    }

    package static func parse(_ token: String) -> Parts? {
        let parts = token.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "ntk", parts[1].utf8.count == 16, parts[2].utf8.count == 43 else { return nil }
        return Parts(id: String(parts[1]), secret: String(parts[2]))
    }

    package static func hash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Compares without an early exit, so the time taken does not depend on where
    /// the first differing byte is.
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices {
            difference |= a[index] ^ b[index]
        }
        return difference == 0
    }
}

/// Passwords of public links: PBKDF2-SHA256 (210,000 rounds, OWASP's figure) with a
/// random 16-byte salt, compared in constant time. Every failure fails closed.
package enum LinkPasswords {
    static let rounds = 210_000

    /// PBKDF2 runs here, a few at a time (half the cores), in turns by caller: eight
    /// passwords set or guessed at once by one account took others' saves from 3 ms to
    /// 220 ms when each ran where it was asked for (on an event loop, or inside SQLite's
    /// write transaction).
    static let gate = FairGate(name: "password checks", permits: max(1, ProcessInfo.processInfo.activeProcessorCount / 2), waitingPerAccount: 16)

    /// `hash` on the password gate; the caller stores the result afterwards, outside it.
    package static func hashed(_ password: String) async throws(NotesError) -> (salt: [UInt8], hash: [UInt8]) {
        try await offLoop { () throws(NotesError) in try hash(password) }
    }

    /// The password a share update sets, hashed before its transaction begins: `nil`
    /// leaves the password as it is, `.some(nil)` removes it.
    package static func newPassword(of update: ShareUpdate) async throws(NotesError) -> (salt: [UInt8], hash: [UInt8])?? {
        guard let password = update.publicPassword else { return nil }
        return .some(password.isEmpty ? nil : try await hashed(password))
    }

    /// `matches` on the password gate.
    package static func check(_ password: String, salt: [UInt8], hash: [UInt8]) async throws(NotesError) -> Bool {
        try await offLoop { matches(password, salt: salt, hash: hash) }
    }

    private static func offLoop<T: Sendable>(_ body: @escaping @Sendable () throws(NotesError) -> T) async throws(NotesError) -> T {
        do {
            return try await gate.withPermit { try await Blocking.background { try body() } }
        } catch let error as NotesError {
            throw error
        } catch {
            throw NotesError(.serviceUnavailable, "The password check was cancelled; try again.")
        }
    }

    static func hash(_ password: String) throws(NotesError) -> (salt: [UInt8], hash: [UInt8]) {
        let salt = SecureRandom.bytes(16)
        guard let hash = derive(password, salt: salt) else {
            throw NotesError(.internalError, "Could not hash the link's password; the link was left unchanged.")
        }
        return (salt, hash)
    }

    static func matches(_ password: String, salt: [UInt8], hash: [UInt8]) -> Bool {
        guard hash.count == 32, let derived = derive(password, salt: salt) else { return false }
        return TokenSecrets.constantTimeEqual(derived, hash)
    }

    private static func derive(_ password: String, salt: [UInt8]) -> [UInt8]? {
        guard let key = try? KDF.Insecure.PBKDF2.deriveKey(from: Array(password.utf8), salt: salt, using: .sha256, outputByteCount: 32, rounds: rounds) else {
            return nil
        }
        return key.withUnsafeBytes { Array($0) }
    }
}
