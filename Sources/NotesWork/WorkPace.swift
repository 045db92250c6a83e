/// How long the caller of the work under way may hold a shared writer while others wait
/// for it, so that stores charge the time each write held it without every call passing
/// the caller's pace down: notesd binds it for each request (`CallerBudgetMiddleware`).
public protocol WriterPacing: Sendable {
    /// Seconds the caller must wait before it takes the writer again (0: at once).
    func delayBeforeWrite() -> Double
    /// Charges the caller a write that held the writer for `seconds`.
    func held(seconds: Double)
}

public enum WorkPace {
    @TaskLocal public static var bound: (any WriterPacing)?

    /// Waits, if the bound caller owes writer time, before a write takes its turn;
    /// throws `CancellationError` if the request is cancelled meanwhile.
    public static func waitBeforeWrite() async throws {
        guard let pacing = bound else { return }
        let seconds = pacing.delayBeforeWrite()
        if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
    }

    /// Charges the bound caller a write that began at `start`.
    public static func held(since start: ContinuousClock.Instant) {
        guard let pacing = bound else { return }
        let elapsed = ContinuousClock.now - start
        pacing.held(seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
