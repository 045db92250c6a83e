import Synchronization

/// Lets async work take turns, first come first served, without holding a thread.
///
/// Used so that the sync engine's uploads and fetches never overlap: a page of changes
/// that notesd wrote before one of this mount's uploads committed, applied after it,
/// would put the older version back over the newer one (the exerciser found reads of
/// stale bytes, and the mount conflicting with itself, that way).
final class TurnLock: Sendable {
    private let state = Mutex<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    /// Runs `body` once no other turn is running.
    func turn<T>(_ body: () async -> T) async -> T {
        await withCheckedContinuation { (ready: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.busy {
                    state.waiting.append(ready)
                    return false
                }
                state.busy = true
                return true
            }
            if now { ready.resume() }
        }
        let result = await body()
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
        return result
    }
}
