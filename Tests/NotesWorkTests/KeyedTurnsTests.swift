import NotesModel
import NotesWork
import Synchronization
import Testing

/// One holder per key, keys independent, a bounded line per caller, and nothing kept
/// once everyone has left: the turns a zone's writes and a link's password guesses take.
@Suite struct KeyedTurnsTests {
    /// How many are inside a turn now, and the most there ever were.
    final class Occupancy: Sendable {
        private let state = Mutex((now: 0, most: 0))
        func enter() {
            state.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
        }
        func leave() { state.withLock { $0.now -= 1 } }
        var most: Int { state.withLock { $0.most } }
    }

    /// Many callers of one key run one at a time, another key's run beside them, and the
    /// key's gate is forgotten afterwards.
    @Test func oneKeyOneAtATimeOtherKeysBeside() async throws {
        let turns = KeyedTurns<String>(waitingPerAccount: 64) { "turns of \($0)" }
        let inside = Occupancy()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<32 {
                group.addTask {
                    try await turns.withTurn("link:a") {
                        inside.enter()
                        await Task.yield()
                        inside.leave()
                    }
                }
            }
            try await turns.acquire("link:b")  // (would wait while link:a is held, if keys shared a turn)
            turns.release("link:b")
            try await group.waitForAll()
        }
        #expect(inside.most == 1)
        #expect(turns.count == 0)
    }

    /// Past its line, a caller is refused with 429 at once instead of waiting (notesd's
    /// own work, with no caller bound, is never refused).
    @Test func aCallerPastItsLineIsRefused() async throws {
        let turns = KeyedTurns<String>(waitingPerAccount: 2) { "turns of \($0)" }
        try await WorkCaller.$bound.withValue("client:x") {
            try await turns.acquire("link:a")
            let waiters = (0..<2).map { _ in Task { try await WorkCaller.$bound.withValue("client:x") { try await turns.withTurn("link:a") {} } } }
            let deadline = ContinuousClock.now + .seconds(30)
            while turns.waiting("link:a") < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
            #expect(turns.waiting("link:a") == 2)
            do {
                try await turns.acquire("link:a")
                Issue.record("a third waiter was let in line")
                turns.release("link:a")
            } catch let error as NotesError {
                #expect(error.code == .requestRateLimited)
            }
            turns.release("link:a")
            for waiter in waiters { try await waiter.value }
        }
        #expect(turns.count == 0)
    }
}
