import NotesModel
import Synchronization

/// When each refusal (429) is answered: at least `Limits.refusalDelayMilliseconds` after
/// it came, and one caller's refusals one at a time, `Limits.refusalsPerSecondPerCaller`
/// a second.
///
/// A client that ignores `Retry-After` asks again as soon as it is answered. With one
/// fixed delay, 200 guesses sent at once on 200 connections were answered together 200
/// ms later, sent again together, and so on: about 900 requests a second from one
/// address, in bursts that held both event loops for milliseconds at a time, and
/// another account's save, whose round trips to PostgreSQL each wait for a loop, took
/// 25-35 ms instead of 8 at the 99th percentile. Spaced out per caller, the same client
/// gets its answers (and so sends its next requests) at a steady rate a loop does not
/// notice; a waiting refusal is a sleeping task, not a thread.
///
/// The caller is the one `CallerBudgetMiddleware` charges (an account, else the client's
/// address). Times come from the caller of `slot`, so tests give their own.
final class RefusalPace: Sendable {
    private let next = Mutex<[String: ContinuousClock.Instant]>([:])
    let delay: Duration
    let interval: Duration
    /// Callers remembered at most; past it, a refusal waits `delay` only.
    static let capacity = 100_000

    init(delay: Duration = .milliseconds(Limits.refusalDelayMilliseconds), perSecond: Int = Limits.refusalsPerSecondPerCaller) {
        self.delay = delay
        interval = .seconds(1) / max(1, perSecond)
    }

    /// When to answer a refusal of `caller`'s that came at `now`.
    func slot(for caller: String, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        next.withLock { next in
            if next.count >= Self.capacity { next = next.filter { $0.value > now } }
            let earliest = now + delay
            guard let previous = next[caller] ?? (next.count < Self.capacity ? now : nil) else { return earliest }
            let slot = max(earliest, previous + interval)
            next[caller] = slot
            return slot
        }
    }

    /// Waits until the refusal's slot (`slot`).
    func hold(_ caller: String) async {
        try? await Task.sleep(until: slot(for: caller, now: .now), clock: .continuous)
    }
}
