import Foundation
import GRDB
import NotesModel

/// Wrong link passwords, counted per link and per client address in fixed windows
/// (`Limits.passwordWindowSeconds`), in the store so that every notesd sharing it sees
/// the same count. Over either limit, guesses get 429 with the seconds left in the window.
enum PasswordAttempts {
    static func keys(shareID: String, client: String) -> [(key: String, limit: Int)] {
        [("link:\(shareID)", Limits.passwordFailuresPerLink), ("client:\(client)", Limits.passwordFailuresPerClient)]
    }

    static func refuseIfOver(_ store: SQLiteStore, _ keys: [(key: String, limit: Int)]) async throws(NotesError) {
        let now = store.clock().timeIntervalSince1970
        let wait: Double? = try await store.read { db in
            var longest: Double?
            for (key, limit) in keys {
                guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT window_start, failures FROM password_attempts WHERE key = ?"), arguments: [key]) else { continue }
                let end = (row[0] as Double) + Limits.passwordWindowSeconds
                if now < end, (row[1] as Int) >= limit { longest = max(longest ?? 0, end - now) }
            }
            return longest
        }
        if let wait {
            let seconds = Int(wait.rounded(.up))
            throw NotesError(.requestRateLimited, "Too many wrong passwords for this link; try again in \(seconds) seconds.", retryAfter: seconds)
        }
    }

    static func countFailure(_ store: SQLiteStore, _ keys: [(key: String, limit: Int)]) async throws(NotesError) {
        try await store.write { context in
            let now = context.now.timeIntervalSince1970
            for (key, _) in keys {
                // A new window starts when the last one is over.
                try context.db.cachedStatement(sql: """
                    INSERT INTO password_attempts (key, window_start, failures) VALUES (?, ?, 1)
                    ON CONFLICT (key) DO UPDATE SET
                        failures = CASE WHEN window_start + ? <= excluded.window_start THEN 1 ELSE failures + 1 END,
                        window_start = CASE WHEN window_start + ? <= excluded.window_start THEN excluded.window_start ELSE window_start END
                    """).execute(arguments: [key, now, Limits.passwordWindowSeconds, Limits.passwordWindowSeconds])
            }
            // Old windows are of no use: keep the table small.
            try context.db.cachedStatement(sql: "DELETE FROM password_attempts WHERE window_start < ?").execute(arguments: [now - 2 * Limits.passwordWindowSeconds])
        }
    }
}
