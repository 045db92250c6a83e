import Foundation
import GRDB
import GRDBSQLite
import Logging
import Synchronization

/// Copies the write-ahead log back into the database file on a connection of its own,
/// so that the writer never does it.
///
/// SQLite's automatic checkpoint runs on the connection that committed, right after
/// its commit, while notesd still holds the writer: after a 16 MB batch it copied and
/// synced the log for 45 ms more, and every other account's save waited for that too.
/// A passive checkpoint on another connection takes no write lock, so saves go on
/// while it runs. The writer only counts: its log hook asks for a checkpoint once
/// the log holds `pagesBeforeCheckpoint` pages.
final class WALCheckpointer: Sendable {
    /// SQLite's own default for its automatic checkpoint.
    static let pagesBeforeCheckpoint: Int32 = 1_000

    private let connection: DatabaseQueue
    private let logger: Logger
    private let work = DispatchQueue(label: "notes.store.checkpoint")
    /// A checkpoint is running, and whether another was asked for meanwhile.
    private let state = Mutex((running: false, again: false))

    init(path: String, logger: Logger) throws {
        var configuration = Configuration()
        configuration.label = "notes.store.checkpoint"
        configuration.busyMode = .timeout(10)
        connection = try DatabaseQueue(path: path, configuration: configuration)
        self.logger = logger
    }

    /// Takes over the checkpoints of `writer` (the pool's writer connection).
    func install(on writer: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            writer.sqliteConnection,
            { context, _, _, pages in
                if let context, pages >= WALCheckpointer.pagesBeforeCheckpoint {
                    Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().request()
                }
                return SQLITE_OK
            }, context)
    }

    /// Asks for a checkpoint; one runs at a time, and one more after it if asked meanwhile.
    func request() {
        let start = state.withLock { state -> Bool in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        if start { work.async { self.run() } }
    }

    /// Runs checkpoints until none is asked for; returns when the log is copied.
    private func run() {
        while true {
            do {
                _ = try connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            } catch {
                logger.warning("checkpoint failed; the next commit asks again", metadata: ["error": "\(error)"])
            }
            let again = state.withLock { state -> Bool in
                let again = state.again
                state.again = false
                if !again { state.running = false }
                return again
            }
            if !again { return }
        }
    }

    /// Waits for the checkpoint under way, if any (before the store closes).
    func drain() {
        work.sync {}
    }
}
