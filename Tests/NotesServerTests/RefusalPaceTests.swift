import NotesModel
@testable import NotesServer
import Testing

/// One caller's refusals are answered one at a time at a steady rate, never together;
/// another caller's are not held behind them.
@Suite struct RefusalPaceTests {
    /// 200 guesses at once from one address were all answered 200 ms later, together,
    /// and came back together: about 900 requests a second in bursts that held both
    /// event loops while another account saved.
    @Test func manyRefusalsAtOnceAreAnsweredOneAtATime() {
        let pace = RefusalPace(delay: .milliseconds(200), perSecond: 100)
        let start = ContinuousClock.now
        let slots = (0..<200).map { _ in pace.slot(for: "client:mallory", now: start) }
        #expect(slots.first == start + .milliseconds(200))
        #expect(zip(slots, slots.dropFirst()).allSatisfy { $1 - $0 == .milliseconds(10) })
        #expect(slots.last == start + .milliseconds(200) + .milliseconds(10) * 199)
        // while another caller's first refusal waits the delay only
        #expect(pace.slot(for: "client:alice", now: start) == start + .milliseconds(200))
    }

    @Test func aCallerRefusedNowAndThenWaitsTheDelayOnly() {
        let pace = RefusalPace(delay: .milliseconds(200), perSecond: 100)
        let start = ContinuousClock.now
        for second in 0..<5 {
            let now = start + .seconds(second)
            #expect(pace.slot(for: "account:bob", now: now) == now + .milliseconds(200))
        }
    }
}
