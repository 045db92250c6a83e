import Logging
import NotesModel
import PostgresNIO
import Synchronization

/// Sends what this instance committed to the other instances on the database, after the
/// commit, in the background.
///
/// PostgreSQL lets one committing transaction at a time hold the right to queue
/// notifications (a lock on the whole cluster, taken as `COMMIT` begins and held until
/// its log is on disk): with `pg_notify` inside every write, each commit waited for the
/// one before it to flush, whatever zone or account it wrote, and one account's large
/// commits (a restore's turns of 100 notes) stood before everyone's small ones. So a write
/// commits its data alone, and its notices are handed here; they are gathered while a
/// send is under way and go in one short transaction that does not wait for its own log
/// flush (`synchronous_commit = off`: a lost notification costs a fetch, not data).
///
/// What a listener hears is still only what committed. If this process dies between a
/// commit and its announcement, the other instances' subscribers learn of the change at
/// their next fetch (every mount fetches at least every 30 seconds, and at once when its
/// event stream comes back).
final class PostgresChangeAnnouncer: Sendable {
    private struct Pending {
        var notices: Set<ChangeNotice> = []
        var seq: Int64 = 0
        var sending = false
    }

    let feed: PostgresChangeFeed
    let client: PostgresClient
    let logger: Logger
    private let pending = Mutex(Pending())
    /// Notifications one send carries at most (each under 8,000 bytes); past it the
    /// notices are coarsened to one per account and scope (`PostgresChangeFeed.payloads`).
    static let payloadsPerSend = 64
    /// Longest pause between tries while the database cannot be reached.
    static let maximumPause: Duration = .seconds(5)

    init(feed: PostgresChangeFeed, client: PostgresClient, logger: Logger) {
        self.feed = feed
        self.client = client
        self.logger = logger
    }

    /// Hands over the notices of a commit whose last change number was `seq`.
    func announce(_ notices: Set<ChangeNotice>, seq: Int64) {
        guard !notices.isEmpty else { return }
        let start = pending.withLock { pending in
            pending.notices.formUnion(notices)
            pending.seq = max(pending.seq, seq)
            defer { pending.sending = true }
            return !pending.sending
        }
        if start { Task { await drain() } }
    }

    /// Sends what is pending until nothing is; one task at a time.
    private func drain() async {
        var pause: Duration = .milliseconds(100)
        while true {
            let batch = pending.withLock { pending -> (Set<ChangeNotice>, Int64)? in
                guard !pending.notices.isEmpty else {
                    pending.sending = false
                    return nil
                }
                defer { pending.notices = [] }
                return (pending.notices, pending.seq)
            }
            guard let (notices, seq) = batch else { return }
            do {
                try await send(feed.payloads(for: notices, seq: seq, maximumPayloads: Self.payloadsPerSend))
                pause = .milliseconds(100)
            } catch {
                logger.warning("could not tell the other instances of changes; trying again", metadata: ["error": "\(String(reflecting: error))"])
                pending.withLock { $0.notices.formUnion(notices) }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, Self.maximumPause)
            }
        }
    }

    /// One statement, its own transaction: `set_config(…, true)` holds until that
    /// transaction's end, its commit included (four round trips became one).
    private func send(_ payloads: [String]) async throws {
        try await client.withConnection { connection in
            for try await _ in try await connection.query(
                "SELECT set_config('synchronous_commit', 'off', true), pg_notify(\(feed.channel), payload) FROM unnest(\(payloads)::text[]) AS payload",
                logger: logger)
            {}
        }
    }
}
