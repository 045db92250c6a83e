import NotesModel
@testable import NotesServer
import Testing

/// One caller's large transfers go at a pace while others use notesd, and at once while
/// it is alone; small saves are never charged.
@Suite struct TransferPaceTests {
    static let megabyte = 1 << 20

    static func pace(upload: Int = 16, download: Int = 32, active: Double = 1) -> TransferPace {
        TransferPace(
            uploadBytesPerSecond: Double(upload * megabyte), downloadBytesPerSecond: Double(download * megabyte), burstSeconds: 1,
            activeSeconds: active)
    }

    @Test func largeBodiesArePacedOnlyWhileAnotherCallerIsActive() {
        var pace = Self.pace()
        // Given mallory alone on notesd: four 16 MB batches at once all go at once
        for _ in 0..<4 { #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0) == 0) }
        // When alice saves a small note (never paced)
        #expect(pace.admit("account:alice", bytes: 900, now: 0.1) == 0)
        // Then mallory's next batches wait their turn at 16 MB/s: for the time she had
        // notesd to herself she owes at most one burst
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0.2) == 0)
        #expect(abs(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0.2) - 0.8) < 1e-9)
        #expect(abs(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0.2) - 1.8) < 1e-9)
        // And a small request of hers waits while she owes more than a burst
        #expect(abs(pace.admit("account:mallory", bytes: 4_000, now: 0.3) - 2.7) < 1e-9)
        // When alice has been quiet for more than a second, mallory goes at once again
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 1.2) == 0)
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 1.3) == 0)
    }

    @Test func eachCallerKeepsItsOwnPace() {
        var pace = Self.pace()
        #expect(pace.admit("account:alice", bytes: 1_000, now: 0) == 0)
        // mallory's burst, then her wait
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0) == 0)
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0) == 0)
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0) == 1)
        // bob's first large body is not held back by what mallory owes
        #expect(pace.admit("account:bob", bytes: 8 * Self.megabyte, now: 0.1) == 0)
    }

    /// Reading a 4 MiB note back over and over kept PostgreSQL and notesd's event loops
    /// busy beside another account's saves; a request carries no body, so only the
    /// answers it was sent can slow its caller down.
    @Test func largeAnswersHoldBackTheNextRequestsWhileAnotherCallerIsActive() {
        var pace = Self.pace()
        // Given mallory alone, reading 64 MiB in 4 MiB answers: never held back, and she
        // owes at most one burst for it
        for _ in 0..<16 {
            #expect(pace.admit("account:mallory", bytes: 200, now: 0) == 0)
            pace.charge("account:mallory", answerBytes: 4 * Self.megabyte, now: 0)
        }
        // When alice saves
        #expect(pace.admit("account:alice", bytes: 900, now: 0.1) == 0)
        // Then mallory's next lookup goes (she owes one burst, due at 1.0), and each 4 MiB
        // answer at 32 MiB/s puts the one after it 1/8 s later
        #expect(pace.admit("account:mallory", bytes: 200, now: 0.1) == 0)
        pace.charge("account:mallory", answerBytes: 4 * Self.megabyte, now: 0.1)
        #expect(abs(pace.admit("account:mallory", bytes: 200, now: 0.1) - 0.025) < 1e-9)
        pace.charge("account:mallory", answerBytes: 4 * Self.megabyte, now: 0.125)
        #expect(abs(pace.admit("account:mallory", bytes: 200, now: 0.125) - 0.125) < 1e-9)
        // And small answers cost nothing: alice reads on at once
        for _ in 0..<100 {
            #expect(pace.admit("account:alice", bytes: 200, now: 0.2) == 0)
            pace.charge("account:alice", answerBytes: 60_000, now: 0.2)
        }
    }

    /// A restore of 10,000 notes is one small request whose turns held the writer (and
    /// on PostgreSQL flushed their log before others' commits) most of the time: each
    /// write is charged the time it held the writer, over its share.
    @Test func writesThatHeldTheWriterRestWhileAnotherCallerIsActive() {
        var pace = TransferPace(
            uploadBytesPerSecond: Double(16 * Self.megabyte), downloadBytesPerSecond: Double(32 * Self.megabyte), burstSeconds: 1,
            writerShare: 0.25, activeSeconds: 1)
        // Given mallory alone: turns of 50 ms never wait, and she owes at most a burst
        #expect(pace.admit("account:mallory", bytes: 200, now: 0) == 0)
        for turn in 0..<40 {
            #expect(pace.writeDelay("account:mallory", now: Double(turn) * 0.05) == 0)
            pace.charge("account:mallory", writerSeconds: 0.05, now: Double(turn) * 0.05 + 0.05)
        }
        // When alice saves, her own 2 ms writes cost her nothing she waits for
        #expect(pace.admit("account:alice", bytes: 900, now: 2.0) == 0)
        #expect(pace.writeDelay("account:alice", now: 2.0) == 0)
        pace.charge("account:alice", writerSeconds: 0.002, now: 2.002)
        #expect(pace.writeDelay("account:alice", now: 2.05) == 0)
        // Then each of mallory's 50 ms turns costs her 200 ms: the next waits for it
        #expect(pace.writeDelay("account:mallory", now: 2.01) == 0)
        pace.charge("account:mallory", writerSeconds: 0.05, now: 2.06)
        #expect(abs(pace.writeDelay("account:mallory", now: 2.06) - 0.14) < 1e-9)
        // And while she owes, her requests are heavy work (run where it gives way to
        // others'), alice's are not
        #expect(pace.isHeavy("account:mallory", bytes: 200, now: 2.07))
        #expect(!pace.isHeavy("account:alice", bytes: 900, now: 2.07))
        #expect(pace.isHeavy("account:alice", bytes: 1 << 20, now: 2.07))
        // When alice has been quiet for a second, mallory writes at once again, and her
        // work is no longer heavy
        #expect(pace.writeDelay("account:mallory", now: 3.1) == 0)
        #expect(!pace.isHeavy("account:mallory", bytes: 200, now: 3.1))
    }

    /// A caller with many requests under way is bulk work from its first request, before
    /// it owes anything: mallory starting every pattern at once (sixteen requests) held
    /// both event loops in the first half second, before her pacing applied, and alice's
    /// saves on PostgreSQL took 35-100 ms. A mount's save beside a fetch is not.
    @Test func manyRequestsUnderWayAreHeavyWorkFromTheFirst() {
        var pace = Self.pace()
        _ = pace.admit("account:alice", bytes: 900, now: 1.0)
        _ = pace.admit("account:mallory", bytes: 200, now: 1.01)
        #expect(pace.isHeavy("account:mallory", bytes: 200, underWay: 3, now: 1.02))
        #expect(!pace.isHeavy("account:mallory", bytes: 200, underWay: 2, now: 1.02))
        #expect(!pace.isHeavy("account:alice", bytes: 900, underWay: 2, now: 1.02))
        // and alone on notesd, nothing is heavy
        #expect(!pace.isHeavy("account:mallory", bytes: 200, underWay: 16, now: 2.5))
    }

    /// The pacer notes every request, small ones included: it once looked only at large
    /// bodies, never saw alice's saves, and so never held mallory back.
    @Test func thePacerSeesSmallRequestsAsActivity() {
        let pacer = TransferPacer(Self.pace(upload: 1, download: 1, active: 60))
        #expect(pacer.delay("account:alice", bytes: 300) == 0)
        // one body and one burst at once, the next a second later
        #expect(pacer.delay("account:mallory", bytes: Self.megabyte) == 0)
        #expect(pacer.delay("account:mallory", bytes: Self.megabyte) == 0)
        #expect(pacer.delay("account:mallory", bytes: Self.megabyte) > 0.5)
        // and one never paced holds nobody back
        let off = TransferPacer(nil)
        #expect(off.delay("account:alice", bytes: 300) == 0)
        for _ in 0..<3 {
            #expect(off.delay("account:mallory", bytes: 64 * Self.megabyte) == 0)
            off.charge("account:mallory", answerBytes: 64 * Self.megabyte)
        }
    }
}
