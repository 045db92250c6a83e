import GRDB
import GRDBSQLite
import Synchronization

/// When SQLite's write-ahead log is copied back into the database (a checkpoint), and
/// who it is charged to.
///
/// SQLite checkpoints by itself at the commit that finds 1,000 pages in the log, inside
/// that commit: whoever's save crossed the mark paid for copying the pages others had
/// written, with the writer held meanwhile (4 MB and two fsyncs, while one account wrote
/// batches of 16 MB). Here the log's size is read after each commit (`sqlite3_wal_hook`,
/// which also turns SQLite's own checkpoints off), the pages are counted to the caller
/// whose write added them, and once `pages` have come since the last checkpoint one runs
/// as a turn of its own at the writer, in the line of the caller who wrote the most:
/// others wait for it as they would for one of that caller's writes.
///
/// A quarter of SQLite's own 1,000 pages: a checkpoint is the longest turn one account's
/// stream of large writes puts in front of another's save. While four clients sent 16 MB
/// batches, checkpoints of 1,000 pages held the writer 26 ms (p50) and others' saves
/// waited up to 33 ms (p99); of 250, 9–12 ms and 18–21 ms, for 5 % fewer single saves a
/// second from eight clients. Copying the bulk on a connection of its own beside the
/// writer was worse: the database file's fsync then ran beside other accounts' commits,
/// which waited for it in the file system's journal.
final class CheckpointSchedule: Sendable {
    /// Pages of log that make a checkpoint due.
    static let pages: Int32 = 250

    private struct State {
        /// Pages in the log after the last commit, as the hook reported them.
        var frames: Int32 = 0
        /// Pages in the log when the last checkpoint ran.
        var framesAtCheckpoint: Int32 = 0
        /// Pages each caller added since the last checkpoint.
        var written: [String: Int32] = [:]
        var counted: Int32 = 0
        var scheduled = false
    }

    private let state = Mutex(State())

    /// Registers the hook on the writer connection.
    func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, _, _, frames in
                if let context { Unmanaged<CheckpointSchedule>.fromOpaque(context).takeUnretainedValue().committed(frames: frames) }
                return SQLITE_OK
            }, context)
    }

    func committed(frames: Int32) {
        state.withLock { $0.frames = frames }
    }

    /// After a write by `caller`, still holding the writer: counts the pages it added;
    /// returns the caller to charge a checkpoint to when one is now due.
    func wrote(_ caller: String) -> String? {
        state.withLock { state in
            // (A log that started over since the last count holds only new pages.)
            let added = state.frames >= state.counted ? state.frames - state.counted : state.frames
            state.counted = state.frames
            if added > 0 { state.written[caller, default: 0] += added }
            if state.frames < state.framesAtCheckpoint { state.framesAtCheckpoint = 0 }
            guard !state.scheduled, state.frames - state.framesAtCheckpoint >= Self.pages else { return nil }
            state.scheduled = true
            let charged = state.written.max { $0.value < $1.value }?.key ?? caller
            state.written = [:]
            return charged
        }
    }

    /// After a checkpoint (successful or not): the log's size then.
    func checkpointed(logFrames: Int32?) {
        state.withLock { state in
            state.scheduled = false
            state.framesAtCheckpoint = logFrames ?? state.frames
            // (What was written while it waited for its turn, it has copied.)
            state.written = [:]
        }
    }
}
