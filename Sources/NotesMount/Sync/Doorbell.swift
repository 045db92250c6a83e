import Synchronization

/// A pause that ends early when rung: the event loop waits on it between attempts to
/// reach notesd, and `SocketWatch` rings it when notesd's socket comes back. A ring
/// while nobody waits ends the next pause at once.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var cancelled = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    init() {}

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Waits `duration`, or less if the bell rings; true if it rang.
    func pause(upTo duration: Duration) async -> Bool {
        let rungBefore = state.withLock { state in
            defer { (state.rung, state.cancelled) = (false, false) }
            return state.rung
        }
        if rungBefore { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await Task.sleep(for: duration)
                return false
            }
            group.addTask {
                await self.nextRing()
                return !Task.isCancelled
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func nextRing() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.rung || state.cancelled {
                        (state.rung, state.cancelled) = (false, false)
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter else {
                    state.cancelled = true
                    return nil
                }
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
    }
}
