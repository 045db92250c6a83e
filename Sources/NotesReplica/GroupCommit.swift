import Foundation
import GRDB

/// Every write to the replica, in one order, committed in groups: writes queued while
/// a transaction runs go into the next one together (one commit, and with
/// `synchronous = FULL` one fsync, for all of them).
///
/// A caller either waits for its write (`wait`), or queues it and goes on (the file
/// model does that for unlink and rename, so those answer the kernel without waiting
/// for SQLite); the order stays the order of queueing either way, and every read waits
/// for the writes queued before it. Whoever waits first while nothing runs commits the
/// queue on its own thread (no hand-off); writes nobody waits for are committed on a
/// utility queue.
final class GroupCommit: @unchecked Sendable {
    /// Identifies one queued write; later writes have larger tickets.
    typealias Ticket = UInt64

    struct Write {
        let ticket: Ticket
        let doing: String
        let durable: Bool
        let run: @Sendable (Database) throws -> Void
        /// For writes nobody waits for: told of a failure, on another thread.
        let onFailure: (@Sendable (ReplicaError) -> Void)?
    }

    private let pool: DatabasePool
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var queue: [Write] = []
    private var issued: Ticket = 0
    /// Every write up to here has run (committed, or failed and reported).
    private var finished: Ticket = 0
    private var committing = false
    private var scheduled = false
    private var failures: [Ticket: ReplicaError] = [:]
    /// Failed writes nobody waits for whose `onFailure` has not run yet.
    private var unreported: Set<Ticket> = []
    /// Transactions run so far (tests read it to see writes share commits).
    private(set) var transactions = 0

    /// Whether writes nobody waits for are committed on a utility queue; without it
    /// they wait for the next read or waited write (the simulation: deterministic).
    private let commitsInBackground: Bool
    /// Set by `abandon`: nothing more is committed.
    private var abandoned = false
    /// Told after each commit (the search index takes the new notes in); it must not
    /// wait for anything.
    private var afterCommit: (@Sendable () -> Void)?

    init(pool: DatabasePool, commitsInBackground: Bool) {
        self.pool = pool
        self.commitsInBackground = commitsInBackground
    }

    /// Drops every write not committed yet, and all later ones: what `kill -9` does to
    /// a mount, for tests that model one.
    func abandon() {
        condition.lock()
        abandoned = true
        queue = []
        finished = issued
        condition.broadcast()
        condition.unlock()
    }

    /// Sets what is told after each commit.
    func onCommit(_ hook: @escaping @Sendable () -> Void) {
        condition.lock()
        afterCommit = hook
        condition.unlock()
    }

    /// Queues a write. With `onFailure`, nobody needs to wait for it.
    func enqueue(_ doing: String, durable: Bool, onFailure: (@Sendable (ReplicaError) -> Void)? = nil, _ run: @escaping @Sendable (Database) throws -> Void) -> Ticket {
        condition.lock()
        issued += 1
        let ticket = issued
        queue.append(Write(ticket: ticket, doing: doing, durable: durable, run: run, onFailure: onFailure))
        let schedule = commitsInBackground && onFailure != nil && !committing && !scheduled
        if schedule { scheduled = true }
        condition.unlock()
        if schedule {
            DispatchQueue.global(qos: .utility).async { [self] in
                condition.lock()
                scheduled = false
                if !committing && !queue.isEmpty { commitQueued() }
                condition.unlock()
            }
        }
        return ticket
    }

    /// Returns once `ticket`'s write has been committed; throws its failure.
    func wait(_ ticket: Ticket) throws(ReplicaError) {
        condition.lock()
        defer { condition.unlock() }
        while finished < ticket {
            if committing { condition.wait() } else { commitQueued() }
        }
        if let failure = failures.removeValue(forKey: ticket) { throw failure }
    }

    /// Returns once every write queued so far has run.
    func waitForAll() {
        condition.lock()
        let last = issued
        while finished < last {
            if committing { condition.wait() } else { commitQueued() }
        }
        condition.unlock()
    }

    /// Whether `ticket`'s write is settled: committed, or failed and its `onFailure`
    /// has run (so whoever was told has taken it in). False while it waits.
    func hasSettled(_ ticket: Ticket) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return finished >= ticket && failures[ticket] == nil && !unreported.contains(ticket)
    }

    /// Takes the whole queue and commits it. Called with the lock held and nothing
    /// committing; gives the lock up while SQLite works.
    private func commitQueued() {
        let batch = queue
        queue = []
        guard let last = batch.last else { return }
        if abandoned {
            finished = last.ticket
            return
        }
        committing = true
        condition.unlock()
        let failed = Self.commit(batch, in: pool)
        condition.lock()
        transactions += 1
        for write in batch {
            guard let failure = failed[write.ticket] else { continue }
            if let report = write.onFailure {
                // Never from here: the one told may need a lock whose holder waits for us.
                unreported.insert(write.ticket)
                DispatchQueue.global().async { [self] in
                    report(failure)
                    condition.lock()
                    unreported.remove(write.ticket)
                    condition.unlock()
                }
            } else {
                failures[write.ticket] = failure
            }
        }
        finished = last.ticket
        committing = false
        condition.broadcast()
        afterCommit?()
    }

    /// One transaction for the batch; if it fails, each write alone, so that one bad
    /// write does not take the others down with it.
    private static func commit(_ batch: [Write], in pool: DatabasePool) -> [Ticket: ReplicaError] {
        if let failure = transaction(batch, in: pool) {
            guard batch.count > 1 else { return [batch[0].ticket: Replica.convert(failure, batch[0].doing)] }
            var failed: [Ticket: ReplicaError] = [:]
            for write in batch {
                if let failure = transaction([write], in: pool) { failed[write.ticket] = Replica.convert(failure, write.doing) }
            }
            return failed
        }
        return [:]
    }

    private static func transaction(_ batch: [Write], in pool: DatabasePool) -> (any Error)? {
        let durable = batch.contains { $0.durable }
        do {
            try pool.writeWithoutTransaction { db in
                if durable { try db.execute(sql: "PRAGMA synchronous = FULL") }
                defer { if durable { try? db.execute(sql: "PRAGMA synchronous = NORMAL") } }
                try db.inTransaction {
                    for write in batch { try write.run(db) }
                    return .commit
                }
            }
            return nil
        } catch {
            return error
        }
    }
}
