package import Foundation
import GRDB
package import NotesModel
package import NotesStoreRules

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

    package func reservePasswordGuess(_ keys: [(key: String, limit: Int)]) async throws(NotesError) -> PasswordAttempts.Admission {
        try await write { context in
            let db = context.db
            let stored = try keys.compactMap { key, _ in
                try Row.fetchOne(db.cachedStatement(sql: "SELECT window_start, failures FROM password_attempts WHERE key = ?"), arguments: [key])
                    .map { GuessCount(key: key, windowStart: $0[0], guesses: $0[1]) }
            }
            let now = context.now.timeIntervalSince1970
            let (admission, counts) = PasswordAttempts.admit(stored, limits: keys, now: now)
            for count in counts {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO password_attempts (key, window_start, failures) VALUES (?, ?, ?)
                        ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start, failures = excluded.failures
                        """
                ).execute(arguments: [count.key, count.windowStart, count.guesses])
            }
            // Old windows are of no use: keep the table small.
            try db.cachedStatement(sql: "DELETE FROM password_attempts WHERE window_start < ?").execute(arguments: [now - 2 * Limits.passwordWindowSeconds])
            return admission
        }
    }

    package func releasePasswordGuess(_ keys: [String]) async throws(NotesError) {
        try await write { context in
            for key in keys {
                try context.db.cachedStatement(sql: "UPDATE password_attempts SET failures = max(failures - 1, 0) WHERE key = ?").execute(arguments: [key])
            }
        }
    }
}

/// Sign-in links exchanged in one transaction (`exchangeSignInLink`, beside the accounts).
extension SQLiteStore: SignInLinkExchange {}
