import Dispatch
import Foundation
import NotesModel
import NotesWork
import Synchronization
import Testing

/// The gate every shared resource of notesd is taken through: turns by account, a
/// bounded line per account, and nothing held by a caller that gave up.
@Suite struct FairGateTests {
    /// An async latch a test opens when it chooses.
    final class Latch: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }
        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    final class Order: Sendable {
        let names = Mutex<[String]>([])
    }

    /// The threads each account's calls ran on.
    final class Threads: Sendable {
        let seen = Mutex<[String: Set<String>]>([:])
    }

    static func waitUntil(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    @Test func aPermitSetFreeGoesToTheNextAccountInTurn() async throws {
        // Given a gate of one permit, held
        let gate = FairGate(name: "the writer", permits: 1)
        let held = Latch()
        let entered = Latch()
        let order = Order()
        let holder = Task {
            try await gate.withPermit(for: "holder") {
                entered.open()
                await held.wait()
            }
        }
        await entered.wait()
        // When alice queues five calls, and then bob one
        var calls: [Task<Void, any Error>] = []
        for (index, account) in ["alice", "alice", "alice", "alice", "alice", "bob"].enumerated() {
            calls.append(Task { try await gate.withPermit(for: account) { order.names.withLock { $0.append(account) } } })
            await Self.waitUntil { gate.waiting == index + 1 }
        }
        held.open()
        try await holder.value
        for call in calls { try await call.value }
        // Then bob's call runs second, not after all of alice's
        #expect(order.names.withLock { $0 } == ["alice", "bob", "alice", "alice", "alice", "alice"])
    }

    /// Blocking work hands the permit on from thread to thread without waking a task:
    /// the thread that ran one call runs the next account's in turn, and a task waiting in
    /// `withPermit` among them is woken in its turn.
    @Test func blockingWorkPassesThePermitOnInTurnOnTheThreadThatHeldIt() async throws {
        // Given a gate of one permit, held by blocking work
        let gate = FairGate(name: "the writer", permits: 1)
        let release = DispatchSemaphore(value: 0)
        let entered = Latch()
        let order = Order()
        let threads = Threads()
        @Sendable func note(_ account: String) {
            order.names.withLock { $0.append(account) }
            threads.seen.withLock { _ = $0[account, default: []].insert("\(pthread_self())") }
        }
        let holder = Task {
            try await gate.runBlocking(for: "holder") {
                note("holder")
                entered.open()
                release.wait()
            }
        }
        await entered.wait()
        // When alice queues three blocking calls, bob one, and carol a task's call
        var calls: [Task<Void, any Error>] = []
        for (index, account) in ["alice", "alice", "alice", "bob"].enumerated() {
            calls.append(Task { try await gate.runBlocking(for: account) { note(account) } })
            await Self.waitUntil { gate.waiting == index + 1 }
        }
        calls.append(Task { try await gate.withPermit(for: "carol") { note("carol") } })
        await Self.waitUntil { gate.waiting == 5 }
        release.signal()
        try await holder.value
        for call in calls { try await call.value }
        // Then each account had its turn, and alice's and bob's calls ran on the thread
        // that held the permit
        #expect(order.names.withLock { $0 } == ["holder", "alice", "bob", "carol", "alice", "alice"])
        let holderThread = try #require(threads.seen.withLock { $0["holder"] })
        #expect(threads.seen.withLock { $0["bob"] } == holderThread)
        #expect(threads.seen.withLock { $0["alice"] }?.contains(holderThread.first!) == true)
        // And a blocking call whose task gives up while it waits never runs
        let inside = Latch()
        let blocked = Task {
            try await gate.runBlocking(for: "holder") {
                inside.open()
                release.wait()
            }
        }
        await inside.wait()
        let given = Task { try await gate.runBlocking(for: "dave") { note("dave") } }
        await Self.waitUntil { gate.waiting == 1 }
        given.cancel()
        await #expect(throws: CancellationError.self) { try await given.value }
        release.signal()
        try await blocked.value
        #expect(!order.names.withLock { $0 }.contains("dave"))
        #expect(gate.tryAcquire())
        gate.release()
    }

    @Test func anAccountsLineIsBoundedAndOthersStillGetIn() async throws {
        // Given a gate of one permit, held, with a line of two per account
        let gate = FairGate(name: "the writer", permits: 1, waitingPerAccount: 2)
        let held = Latch()
        let entered = Latch()
        let holder = Task {
            try await gate.withPermit(for: "holder") {
                entered.open()
                await held.wait()
            }
        }
        await entered.wait()
        let first = Task { try await gate.withPermit(for: "alice") { 1 } }
        await Self.waitUntil { gate.waiting == 1 }
        let second = Task { try await gate.withPermit(for: "alice") { 2 } }
        await Self.waitUntil { gate.waiting == 2 }
        // When alice asks a third time, and bob once
        do {
            _ = try await gate.withPermit(for: "alice") { 3 }
            Issue.record("a third call joined alice's line")
        } catch let error as NotesError {
            // Then alice is refused at once, with when to try again
            #expect(error.code == .requestRateLimited && error.retryAfter == 1)
        }
        let bob = Task { try await gate.withPermit(for: "bob") { 4 } }
        await Self.waitUntil { gate.waiting == 3 }
        held.open()
        // And every call that was let in runs
        #expect(try await [first.value, second.value, bob.value] == [1, 2, 4])
        try await holder.value
    }

    /// notesd's own work (and the store tests, which call it unbound) once got 429 from
    /// the password gate when more than 16 of its calls waited: it waits, never refused.
    @Test func notesdsOwnWorkWaitsItsTurnButIsNeverRefused() async throws {
        // Given a gate of one permit, held, with a line of one per account
        let gate = FairGate(name: "password checks", permits: 1, waitingPerAccount: 1, waitingInAll: 1)
        let held = Latch()
        let entered = Latch()
        let holder = Task {
            try await gate.withPermit(for: "holder") {
                entered.open()
                await held.wait()
            }
        }
        await entered.wait()
        // When notesd's own work asks five times
        let calls = (0..<5).map { index in Task { try await gate.withPermit(for: WorkCaller.notesd) { index } } }
        await Self.waitUntil { gate.waiting == 5 }
        held.open()
        // Then every call waited its turn and ran
        var done: [Int] = []
        for call in calls { done.append(try await call.value) }
        #expect(done.sorted() == [0, 1, 2, 3, 4])
        try await holder.value
    }

    @Test func aCallerThatGivesUpLeavesTheLineAndHoldsNoPermit() async throws {
        // Given a gate of one permit, held, and a call waiting for it
        let gate = FairGate(name: "the writer", permits: 1)
        let held = Latch()
        let entered = Latch()
        let holder = Task {
            try await gate.withPermit(for: "holder") {
                entered.open()
                await held.wait()
            }
        }
        await entered.wait()
        let waiting = Task { try await gate.withPermit(for: "alice") { "ran" } }
        await Self.waitUntil { gate.waiting == 1 }
        // When its task is cancelled
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        // Then it left the line, and the permit, once set free, is there for the next caller
        #expect(gate.waiting == 0)
        held.open()
        try await holder.value
        #expect(try await gate.withPermit(for: "bob") { "bob ran" } == "bob ran")
    }

    /// A task cancelled before it came to the gate found no waiter to remove (the
    /// cancellation handler runs before the wait begins) and then waited for good.
    @Test func aCallerCancelledBeforeItCameIsNotLeftWaiting() async throws {
        // Given a gate of one permit, held
        let gate = FairGate(name: "the writer", permits: 1)
        #expect(gate.tryAcquire())
        // When tasks already cancelled ask for it, by both ways in
        let both = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let waited = await Result(catching: { try await gate.acquire(for: "alice") })
            let ran = await Result(catching: { try await gate.runBlocking(for: "alice") { "ran" } })
            return (waited, ran)
        }
        let (waited, ran) = await both.value
        // Then both give up at once, and nobody is left in the line
        #expect(throws: CancellationError.self) { try waited.get() }
        #expect(throws: CancellationError.self) { try ran.get() }
        #expect(gate.waiting == 0)
        gate.release()
        #expect(try await gate.withPermit(for: "bob") { "bob ran" } == "bob ran")
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
