import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// What one account can do to everyone else on the same notesd: each pattern that once
/// stopped, stalled or swelled the daemon, tried through its real socket.
@Suite(.serialized) struct NoisyNeighbourTests {
    /// A lookup naming one 4 MiB note 2,000 times was answered with 2,000 copies: an
    /// 8 GiB buffer that trapped in NIO's allocator and took notesd down for every
    /// account (1 MiB: a 2 GiB answer, 5.9 GB resident). A read-only participant could
    /// send it with any large note of a share.
    @Test func aLookupOfOneLargeNote2000TimesAnswersItOnce() async throws {
        // Given a 4 MiB note of alice's, shared read-only with bob
        let daemon = try await DaemonProcess.started()
        let alice = try await daemon.account("alice")
        let bob = try await daemon.account("bob")
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        let big = String(repeating: "0123456789abcdef", count: 1 << 18)
        _ = try await alice.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "big", recordType: .note, name: "big.md", body: big)]))
        let share = try await alice.createShare(NewShare(zone: zone, rootRecordName: "big", participants: [Invitee(name: "bob", permission: .readOnly)]))
        _ = try await bob.accept(url: share.urlToken)

        // When each of them asks for it 2,000 times in one lookup, twice
        for client in [alice, bob, alice, bob] {
            let found = try await client.records(Array(repeating: "big", count: 2_000), in: zone)
            // Then each answer holds it once
            #expect(found.count == 1 && found.first?.body == big)
        }
        // And notesd is still up, and held no more than a few copies of the note at once
        #expect(try await DaemonTests.accountName(alice) == "alice")
        #expect(daemon.peakResidentMiB < 200, "notesd's peak: \(daemon.peakResidentMiB) MiB")
        _ = try await daemon.stop()
    }
}
