import NotesModel
@testable import NotesServer
import Testing

/// One caller's large bodies are let in at a pace while others use notesd, and at once
/// while it is alone; small saves are never paced.
@Suite struct WritePaceTests {
    static let megabyte = 1 << 20

    @Test func largeBodiesArePacedOnlyWhileAnotherCallerIsActive() {
        var pace = WritePace(bytesPerSecond: Double(16 * Self.megabyte), burstBytes: Double(16 * Self.megabyte), activeSeconds: 1)
        // Given mallory alone on notesd: four 16 MB batches at once all go at once
        for _ in 0..<4 { #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0) == 0) }
        // When alice saves a small note (never paced)
        #expect(pace.admit("account:alice", bytes: 900, now: 0.1) == 0)
        // Then mallory's next batches wait their turn at 16 MB/s: for the time she had
        // notesd to herself she owes at most one burst
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0.2) == 0)
        #expect(abs(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0.2) - 0.8) < 1e-9)
        #expect(abs(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0.2) - 1.8) < 1e-9)
        // And small requests of hers are never held back
        #expect(pace.admit("account:mallory", bytes: 4_000, now: 0.3) == 0)
        // When alice has been quiet for more than a second, mallory goes at once again
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 1.2) == 0)
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 1.3) == 0)
    }

    @Test func eachCallerKeepsItsOwnPace() {
        var pace = WritePace(bytesPerSecond: Double(16 * Self.megabyte), burstBytes: Double(16 * Self.megabyte), activeSeconds: 1)
        #expect(pace.admit("account:alice", bytes: 1_000, now: 0) == 0)
        // mallory's burst, then her wait
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0) == 0)
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0) == 0)
        #expect(pace.admit("account:mallory", bytes: 16 * Self.megabyte, now: 0) == 1)
        // bob's first large body is not held back by what mallory owes
        #expect(pace.admit("account:bob", bytes: 8 * Self.megabyte, now: 0.1) == 0)
    }

    /// The pacer notes every request, small ones included: it once looked only at large
    /// bodies, never saw alice's saves, and so never held mallory back.
    @Test func thePacerSeesSmallRequestsAsActivity() {
        let pacer = WritePacer(WritePace(bytesPerSecond: Double(Self.megabyte), burstBytes: Double(Self.megabyte), activeSeconds: 60))
        #expect(pacer.delay("account:alice", bytes: 300) == 0)
        // one body and one burst at once, the next a second later
        #expect(pacer.delay("account:mallory", bytes: Self.megabyte) == 0)
        #expect(pacer.delay("account:mallory", bytes: Self.megabyte) == 0)
        #expect(pacer.delay("account:mallory", bytes: Self.megabyte) > 0.5)
        // and one never paced holds nobody back
        let off = WritePacer(nil)
        #expect(off.delay("account:alice", bytes: 300) == 0)
        for _ in 0..<3 { #expect(off.delay("account:mallory", bytes: 64 * Self.megabyte) == 0) }
    }
}
