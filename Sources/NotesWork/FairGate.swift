import Dispatch
import NotesModel
import Synchronization

/// A fixed number of permits (SQLite's one writer, its readers, a PostgreSQL pool's
/// connections, PBKDF2 threads) shared by callers so that none can crowd out the others.
///
/// A caller that finds no permit free waits in its account's line; a permit set free
/// goes to the next account in turn, one waiting call per account per round. So an
/// account with a hundred calls waiting delays another account's one call by at most
/// one call of its own, not a hundred (Nginx's `limit_req` keys and FoundationDB's
/// ratekeeper weigh the same way: by who asks, not by what arrived first). Each account
/// may have `waitingPerAccount` calls waiting; one more is refused at once with
/// `requestRateLimited` rather than queued, so a flood costs its sender, not memory.
public final class FairGate: Sendable {
    /// What the gate is for, in errors and logs ("the database writer").
    public let name: String
    public let permits: Int
    public let waitingPerAccount: Int
    /// Calls that may wait, all accounts together; one more gets `serviceUnavailable`.
    public let waitingInAll: Int
    private let state: Mutex<State>

    private struct Waiter {
        let id: UInt64
        let wake: Wake
    }

    /// What a permit set free does for its waiter.
    private enum Wake {
        /// Resumes a task waiting in `acquire`.
        case resume(CheckedContinuation<Void, any Error>)
        /// Runs blocking work queued by `runBlocking`, on the thread that set the permit
        /// free if that thread was running such work too.
        case job(Job)
    }

    /// Blocking work waiting for a permit, with what ends its caller's wait.
    private struct Job: Sendable {
        let account: String
        let run: @Sendable () -> Void
        let cancel: @Sendable () -> Void
    }

    private struct State {
        var free: Int
        var lines: [String: [Waiter]] = [:]
        /// Accounts with a call waiting, in the order they get their next permit.
        var turns: [String] = []
        var nextID: UInt64 = 0
        /// Calls admitted to wait and not yet given a permit or gone.
        var waiting = 0

        /// Hands the permit `released` sets free to the next account in turn, if one
        /// waits: never to `released` itself while another account waits (it was just
        /// served; its line came round before the other account joined).
        mutating func nextWaiter(after released: String) -> Waiter? {
            guard !turns.isEmpty else { return nil }
            if turns.count > 1, turns[0] == released { turns.append(turns.removeFirst()) }
            let account = turns.removeFirst()
            var line = lines[account, default: []]
            let waiter = line.removeFirst()
            waiting -= 1
            if line.isEmpty {
                lines[account] = nil
            } else {
                lines[account] = line
                turns.append(account)
            }
            return waiter
        }

        /// Takes a waiter out of its line (its task was cancelled); false if it already
        /// had its permit.
        mutating func remove(_ id: UInt64, of account: String) -> Waiter? {
            guard var line = lines[account], let index = line.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = line.remove(at: index)
            waiting -= 1
            if line.isEmpty {
                lines[account] = nil
                turns.removeAll { $0 == account }
            } else {
                lines[account] = line
            }
            return waiter
        }
    }

    public init(name: String, permits: Int, waitingPerAccount: Int = 64, waitingInAll: Int = .max) {
        precondition(permits > 0 && waitingPerAccount > 0 && waitingInAll > 0)
        self.name = name
        self.permits = permits
        self.waitingPerAccount = waitingPerAccount
        self.waitingInAll = waitingInAll
        state = Mutex(State(free: permits))
    }

    /// Runs `body` holding one permit, charged to `account` (by default the caller of
    /// the request under way, `WorkCaller.current`).
    public func withPermit<T: Sendable>(
        for account: String = WorkCaller.current, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await acquire(for: account)
        defer { release(for: account) }
        return try await body()
    }

    /// Calls waiting now, all accounts together (for metrics and tests).
    public var waiting: Int { state.withLock { $0.lines.values.reduce(0) { $0 + $1.count } } }

    /// Takes a permit only if one is free now and nobody waits; pair a `true` with one
    /// `release()`.
    public func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.free > 0 && state.turns.isEmpty else { return false }
            state.free -= 1
            return true
        }
    }

    /// Takes a permit for `account`, waiting in its line; pair it with one `release()`.
    /// For callers whose work cannot be a `@Sendable` closure.
    public func acquire(for account: String = WorkCaller.current) async throws {
        guard let id = try admit(account) else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admitted = state.withLock { state -> Bool in
                    // A permit may have come free between the two locks.
                    if state.free > 0 && state.turns.isEmpty {
                        state.free -= 1
                        state.waiting -= 1
                        return true
                    }
                    if state.lines[account] == nil { state.turns.append(account) }
                    state.lines[account, default: []].append(Waiter(id: id, wake: .resume(continuation)))
                    return false
                }
                if admitted { continuation.resume() } else { leaveIfCancelled(id, of: account) }
            }
        } onCancel: {
            let removed = state.withLock { $0.remove(id, of: account) }
            if case .resume(let continuation) = removed?.wake { continuation.resume(throwing: CancellationError()) }
        }
    }

    /// Runs blocking `body` (a SQLite transaction, a read) holding one permit, charged to
    /// `account`, on a thread of its own (`Blocking.run`), and returns its result.
    ///
    /// Unlike `withPermit` around `Blocking.run`, the permit passes from one such call to
    /// the next without waking either caller's task: the thread that finishes a call runs
    /// the next account's waiting call itself. When the event loops are busy (another
    /// account's large batches arriving), waking a task to take the permit, and another to
    /// give it back, took longer than the transactions: a small save waited 15 to 40 ms
    /// behind transactions of 10.
    public func runBlocking<T: Sendable>(for account: String = WorkCaller.current, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let id = try admit(account)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let job = Job(
                    account: account, run: { continuation.resume(with: Result { try body() }) },
                    cancel: { continuation.resume(throwing: CancellationError()) })
                let runNow = state.withLock { state -> Bool in
                    guard let id else { return true }
                    // A permit may have come free since `admit`.
                    if state.free > 0 && state.turns.isEmpty {
                        state.free -= 1
                        state.waiting -= 1
                        return true
                    }
                    if state.lines[account] == nil { state.turns.append(account) }
                    state.lines[account, default: []].append(Waiter(id: id, wake: .job(job)))
                    return false
                }
                if runNow { Self.startJobs(job, on: self) } else if let id { leaveIfCancelled(id, of: account) }
            }
        } onCancel: {
            guard let id else { return }
            let removed = state.withLock { $0.remove(id, of: account) }
            if case .job(let job) = removed?.wake { job.cancel() }
        }
    }

    /// Takes a waiter that has just joined its line out again when its task was cancelled
    /// already. `withTaskCancellationHandler` runs the handler at once for a task
    /// cancelled before it, when the waiter is not in a line yet: it found nothing to
    /// remove, and the waiter stayed in its line for good. Whichever of the two removes
    /// the waiter ends it.
    private func leaveIfCancelled(_ id: UInt64, of account: String) {
        guard Task.isCancelled else { return }
        switch state.withLock({ $0.remove(id, of: account) })?.wake {
        case .resume(let continuation): continuation.resume(throwing: CancellationError())
        case .job(let job): job.cancel()
        case nil: break
        }
    }

    /// Admits a call of `account`: nil when it took a permit free now, else its place in
    /// the lines; throws past the bounds.
    private func admit(_ account: String) throws(NotesError) -> UInt64? {
        enum Admission {
            case now
            case wait(UInt64)
            case refused, full
        }
        let admission = state.withLock { state -> Admission in
            if state.free > 0 && state.turns.isEmpty {
                state.free -= 1
                return .now
            }
            if account != WorkCaller.notesd {
                if state.lines[account, default: []].count >= waitingPerAccount { return .refused }
                if state.waiting >= waitingInAll { return .full }
            }
            state.waiting += 1
            state.nextID += 1
            return .wait(state.nextID)
        }
        switch admission {
        case .now: return nil
        case .refused:
            throw NotesError(.requestRateLimited, "Too many of your requests are waiting for \(name); wait for them to finish and try again.", retryAfter: 1)
        case .full:
            throw NotesError(.serviceUnavailable, "notesd is busy with \(name); try again in a few seconds.", retryAfter: 2)
        case .wait(let id): return id
        }
    }

    /// Runs `job` (which holds a permit) on a thread of its own, then each waiting job the
    /// permit passes to, until it passes to a task or comes free.
    private static func startJobs(_ job: Job, on gate: FairGate) {
        DispatchQueue(label: "notesd.blocking", qos: Blocking.quality).async {
            var current = job
            while true {
                current.run()
                guard case .job(let next) = gate.passOn(from: current.account) else { return }
                current = next
            }
        }
    }

    /// Gives the permit `account` held to the next waiter in turn, or sets it free; a
    /// waiting task is woken here, a waiting job is returned for the caller to run.
    private func passOn(from account: String) -> Wake? {
        let next = state.withLock { state -> Waiter? in
            if let waiter = state.nextWaiter(after: account) { return waiter }
            state.free += 1
            return nil
        }
        if case .resume(let continuation) = next?.wake {
            continuation.resume()
            return nil
        }
        return next?.wake
    }

    /// Sets free a permit `account` took with `acquire`. (The permit passes straight to
    /// the next waiter, if any: `free` is untouched.)
    public func release(for account: String = WorkCaller.current) {
        // A job must not run on the caller's thread, which may be an event loop.
        if case .job(let job) = passOn(from: account) { Self.startJobs(job, on: self) }
    }
}
