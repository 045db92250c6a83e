import NotesModel
import NotesWork
import Synchronization

/// The pace at which one caller's large transfers (request bodies it sends, answers it
/// is sent) go while others are using notesd.
///
/// Every byte a caller sends to be stored is written twice by SQLite (its log, then the
/// database) and parsed once: one account sending 16 MB batches as fast as notesd took
/// them (about 100 MB/s here) kept the writer busy most of the time, and another's small
/// save waited for a turn of that stream in most of its slowest cases, however fairly
/// the turns were given. Answers cost the same way on the way out: one account reading a
/// 4 MiB note back two at a time kept PostgreSQL's backends and notesd's event loops
/// busy, beside everyone else's saves. So while another caller has sent a request in
/// the last `activeSeconds`, a caller's transfers are charged to it as time: a body of
/// `pacedBytes` or more costs its length at `uploadBytesPerSecond`, an answer of as much
/// its length at `downloadBytesPerSecond`, and a caller's request waits while it owes
/// more than `burstSeconds`. Alone on notesd, a caller goes as fast as it can. A request
/// waits before its body is read: the client's connection holds it, not notesd's memory.
///
/// A generic cell rate rule: each caller has the time at which what it moved would have
/// been let through at the rates (`due`); a request may start once `due` is within
/// `burstSeconds` of now.
struct TransferPace: Sendable {
    let uploadBytesPerSecond: Double
    let downloadBytesPerSecond: Double
    let burstSeconds: Double
    /// The part of the time one caller's writes may hold a writer (SQLite's one writer, a
    /// zone's counter and a pooled connection on PostgreSQL): a write that held it for
    /// `t` seconds costs `t / writerShare`.
    let writerShare: Double
    /// Another caller counts as using notesd for this long after its last request.
    let activeSeconds: Double
    /// Bodies and answers smaller than this are never charged (a save of a few notes).
    static let pacedBytes = 64 * 1024
    /// Callers remembered at most (the least recent are forgotten first).
    static let remembered = 10_000

    /// Per caller: when what it moved is due, and when it last sent a request.
    private var due: [String: Double] = [:]
    private var seen: [String: Double] = [:]
    /// The two most recent callers and when they were seen, which answer "is anyone
    /// else active" without looking at every caller.
    private var latest: [(caller: String, at: Double)] = []

    init(
        uploadBytesPerSecond: Double = Double(Limits.pacedUploadBytesPerSecond),
        downloadBytesPerSecond: Double = Double(Limits.pacedDownloadBytesPerSecond),
        burstSeconds: Double = Limits.pacedBurstSeconds, writerShare: Double = Limits.pacedWriterShare, activeSeconds: Double = 1
    ) {
        self.writerShare = writerShare
        self.uploadBytesPerSecond = uploadBytesPerSecond
        self.downloadBytesPerSecond = downloadBytesPerSecond
        self.burstSeconds = burstSeconds
        self.activeSeconds = activeSeconds
    }

    /// Notes a request of `caller` with a body of `bytes` at `now` (seconds on a
    /// monotonic clock); returns the seconds it must wait before its body is read.
    mutating func admit(_ caller: String, bytes: Int, now: Double) -> Double {
        let othersActive = self.othersActive(than: caller, at: now)
        note(caller, at: now)
        let cost = bytes >= Self.pacedBytes ? Double(bytes) / uploadBytesPerSecond : 0
        let owed = due[caller] ?? now
        guard othersActive else {
            settle(caller, owed: owed, cost: cost, now: now)
            return 0
        }
        let start = max(now, owed - burstSeconds)
        if cost > 0 { due[caller] = max(owed, start) + cost }
        return start - now
    }

    /// Charges `caller` an answer of `bytes` it was sent at `now`.
    mutating func charge(_ caller: String, answerBytes bytes: Int, now: Double) {
        guard bytes >= Self.pacedBytes else { return }
        charge(caller, cost: Double(bytes) / downloadBytesPerSecond, now: now)
    }

    /// Charges `caller` a write that held the writer for `seconds`, ending at `now`.
    mutating func charge(_ caller: String, writerSeconds seconds: Double, now: Double) {
        charge(caller, cost: max(seconds, 0) / writerShare, now: now)
    }

    /// Whether `caller`'s request with a body of `bytes` is heavy work at `now`, with
    /// `underWay` of its requests under way: while others use notesd, a large body, any
    /// request of a caller that owes time, or of one with more than `lightUnderWay`
    /// requests under way (bulk work from its first request, before it owes anything).
    func isHeavy(_ caller: String, bytes: Int, underWay: Int = 1, now: Double) -> Bool {
        guard othersActive(than: caller, at: now) else { return false }
        return bytes >= Self.pacedBytes || (due[caller] ?? 0) > now || underWay > Self.lightUnderWay
    }

    /// Requests one caller may have under way and still run on the event loops: a
    /// mount's fetch beside a save.
    static let lightUnderWay = 2

    /// The seconds `caller`'s next write must wait at `now` (it does not count as a new
    /// request: it is part of one already admitted).
    func writeDelay(_ caller: String, now: Double) -> Double {
        guard let owed = due[caller], othersActive(than: caller, at: now) else { return 0 }
        return max(0, owed - burstSeconds - now)
    }

    /// (A charge shows its caller active too: a restore is one request for many seconds.)
    private mutating func charge(_ caller: String, cost: Double, now: Double) {
        let othersActive = self.othersActive(than: caller, at: now)
        note(caller, at: now)
        let owed = due[caller] ?? now
        if othersActive {
            due[caller] = max(owed, now) + cost
        } else {
            settle(caller, owed: owed, cost: cost, now: now)
        }
    }

    /// Alone: let through at once; what it moved still counts when others come, up to
    /// one burst (it never owes for the time it had notesd to itself).
    private mutating func settle(_ caller: String, owed: Double, cost: Double, now: Double) {
        guard cost > 0 || owed > now else { return }
        due[caller] = min(max(owed, now) + cost, now + burstSeconds)
    }

    private func othersActive(than caller: String, at now: Double) -> Bool {
        latest.contains { $0.caller != caller && now - $0.at < activeSeconds }
    }

    private mutating func note(_ caller: String, at now: Double) {
        seen[caller] = now
        latest.removeAll { $0.caller == caller }
        latest.insert((caller, now), at: 0)
        if latest.count > 2 { latest.removeLast() }
        if seen.count > Self.remembered {
            // Forget those gone for longer than anything they owe.
            let horizon = now - activeSeconds - burstSeconds
            seen = seen.filter { $0.value > horizon || (due[$0.key] ?? 0) > now }
            due = due.filter { seen[$0.key] != nil }
        }
    }
}

/// `TransferPace` behind a lock, on the monotonic clock.
final class TransferPacer: Sendable {
    private let pace: Mutex<TransferPace>
    private let enabled: Bool
    private let start = ContinuousClock.now

    /// nil: never paced.
    init(_ pace: TransferPace?) {
        self.pace = Mutex(pace ?? TransferPace())
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
        let now = self.now
        return pace.withLock { $0.admit(caller, bytes: bytes, now: now) }
    }

    /// Whether `caller`'s request with a body of `bytes` should run as heavy work
    /// (`TransferPace.isHeavy`).
    func isHeavy(_ caller: String, bytes: Int, underWay: Int = 1) -> Bool {
        guard enabled else { return false }
        let now = self.now
        return pace.withLock { $0.isHeavy(caller, bytes: bytes, underWay: underWay, now: now) }
    }

    /// Seconds `caller`'s next write waits.
    func writeDelay(_ caller: String) -> Double {
        guard enabled else { return 0 }
        let now = self.now
        return pace.withLock { $0.writeDelay(caller, now: now) }
    }

    /// Charges `caller` a write that held the writer for `seconds`.
    func charge(_ caller: String, writerSeconds seconds: Double) {
        guard enabled else { return }
        let now = self.now
        pace.withLock { $0.charge(caller, writerSeconds: seconds, now: now) }
    }

    /// Charges `caller` an answer of `bytes`.
    func charge(_ caller: String, answerBytes bytes: Int) {
        guard enabled, bytes >= TransferPace.pacedBytes else { return }
        let now = self.now
        pace.withLock { $0.charge(caller, answerBytes: bytes, now: now) }
    }

    private var now: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}

/// One caller's writer time, charged to its pace (`WorkPace`).
struct CallerWriterPacing: WriterPacing {
    let caller: String
    let pacer: TransferPacer

    func delayBeforeWrite() -> Double { pacer.writeDelay(caller) }
    func held(seconds: Double) { pacer.charge(caller, writerSeconds: seconds) }
}
