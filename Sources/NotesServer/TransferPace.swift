import NotesModel
import Synchronization

/// The pace at which one caller's large request bodies are let in while others are
/// using notesd.
///
/// Every byte a caller sends to be stored is written twice by SQLite (its log, then the
/// database) and parsed once: one account sending 16 MB batches as fast as notesd took
/// them (about 100 MB/s here) kept the writer busy most of the time, and another's small
/// save waited for a turn of that stream in most of its slowest cases, however fairly
/// the turns were given. So while another caller has sent a request in the last
/// `activeSeconds`, a caller's bodies of `pacedBytes` or more are let in at
/// `bytesPerSecond`, after a first `burstBytes`; alone on notesd, a caller goes as fast
/// as it can. A body waits before it is read: the client's connection holds it, not
/// notesd's memory.
///
/// A generic cell rate rule: each caller has the time at which its paced bytes would
/// have been let in at the rate (`due`); a body may start once `due` is within one burst
/// of now, and moves `due` on by its own length at the rate.
struct WritePace: Sendable {
    let bytesPerSecond: Double
    let burstBytes: Double
    /// Another caller counts as using notesd for this long after its last request.
    let activeSeconds: Double
    /// Bodies smaller than this are never paced (a save of a few notes).
    static let pacedBytes = 64 * 1024
    /// Callers remembered at most (the least recent are forgotten first).
    static let remembered = 10_000

    /// Per caller: when its paced bytes are due, and when it last sent a request.
    private var due: [String: Double] = [:]
    private var seen: [String: Double] = [:]
    /// The two most recent callers and when they were seen, which answer "is anyone
    /// else active" without looking at every caller.
    private var latest: [(caller: String, at: Double)] = []

    init(
        bytesPerSecond: Double = Double(Limits.pacedBytesPerSecond), burstBytes: Double = Double(Limits.pacedBurstBytes), activeSeconds: Double = 1
    ) {
        self.bytesPerSecond = bytesPerSecond
        self.burstBytes = burstBytes
        self.activeSeconds = activeSeconds
    }

    /// Notes a request of `caller` with a body of `bytes` at `now` (seconds on a
    /// monotonic clock); returns the seconds it must wait before its body is read.
    mutating func admit(_ caller: String, bytes: Int, now: Double) -> Double {
        let othersActive = latest.contains { $0.caller != caller && now - $0.at < activeSeconds }
        note(caller, at: now)
        guard bytes >= Self.pacedBytes else { return 0 }
        let cost = Double(bytes) / bytesPerSecond
        let tolerance = burstBytes / bytesPerSecond
        let owed = due[caller] ?? now
        guard othersActive else {
            // Alone: let in at once; what it sent still counts when others come, up to
            // one burst (it never owes for the time it had notesd to itself).
            due[caller] = min(max(owed, now) + cost, now + tolerance)
            return 0
        }
        let start = max(now, owed - tolerance)
        due[caller] = max(owed, start) + cost
        return start - now
    }

    private mutating func note(_ caller: String, at now: Double) {
        seen[caller] = now
        latest.removeAll { $0.caller == caller }
        latest.insert((caller, now), at: 0)
        if latest.count > 2 { latest.removeLast() }
        if seen.count > Self.remembered {
            // Forget those gone for longer than anything they owe.
            let horizon = now - activeSeconds - burstBytes / bytesPerSecond
            seen = seen.filter { $0.value > horizon || (due[$0.key] ?? 0) > now }
            due = due.filter { seen[$0.key] != nil }
        }
    }
}

/// `WritePace` behind a lock, on the monotonic clock.
final class WritePacer: Sendable {
    private let pace: Mutex<WritePace>
    private let enabled: Bool
    private let start = ContinuousClock.now

    /// nil: never paced.
    init(_ pace: WritePace?) {
        self.pace = Mutex(pace ?? WritePace())
        enabled = pace != nil
    }

    /// Waits (a sleeping task) until `caller` may send a body of `bytes`.
    func wait(_ caller: String, bytes: Int) async throws {
        let seconds = delay(caller, bytes: bytes)
        if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
    }

    /// Notes a request of `caller` (every one: a small one shows that its caller is
    /// active) and returns the seconds its body of `bytes` must wait.
    func delay(_ caller: String, bytes: Int) -> Double {
        guard enabled else { return 0 }
        let elapsed = ContinuousClock.now - start
        let now = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return pace.withLock { $0.admit(caller, bytes: bytes, now: now) }
    }
}
