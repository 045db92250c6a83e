import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// What each caller learns of others: the people in a share, and which accounts and
/// zones exist.
@Suite(.serialized) struct PrivacyTests {
    /// Anyone who joined through a public link saw every participant of the share with
    /// the email of each one invited by email, pending invitations to addresses that
    /// never signed up and removed participants included; pending invitees saw the same.
    @Test func aShareShowsEachCallerOnlyWhatTheirPlaceInItAllows() async throws {
        // Given alice's folder shared with bob (by name), carol (by email), an address with
        // no account yet, dave (removed) and gina (invited, pending), and public read-only
        let daemon = try await DaemonProcess.started()
        let alice = try await daemon.account("alice", email: "alice@example.com")
        let bob = try await daemon.account("bob", email: "bob@example.com")
        let carol = try await daemon.account("carol", email: "carol@example.com")
        let dave = try await daemon.account("dave")
        let frank = try await daemon.account("frank")
        let gina = try await daemon.account("gina")
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        _ = try await alice.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "docs", recordType: .folder, name: "docs")]))
        let invited: [Invitee] = [
            Invitee(name: "bob", permission: .readWrite), Invitee(email: "carol@example.com", permission: .readOnly),
            Invitee(email: "nobody-yet@example.com", permission: .readOnly), Invitee(name: "dave", permission: .readOnly),
            Invitee(name: "gina", permission: .readOnly),
        ]
        let share = try await alice.createShare(NewShare(zone: zone, rootRecordName: "docs", publicPermission: .readOnly, participants: invited))
        for client in [bob, carol, dave] { _ = try await client.accept(url: share.urlToken) }
        _ = try await alice.removeParticipant(shareID: share.id, name: "dave")
        // When frank joins through the public link
        _ = try await frank.accept(url: share.urlToken)

        // Then alice, the owner, sees everyone with their emails
        let owners = try await alice.share(id: share.id).participants
        #expect(Set(owners.compactMap(\.name)) == ["alice", "bob", "carol", "dave", "gina", "frank"])
        #expect(owners.contains { $0.email == "nobody-yet@example.com" } && owners.contains { $0.email == "carol@example.com" })
        #expect(try await alice.share(id: share.id).publicViews != nil)
        // And bob, a member, sees who is in by name, and no address at all
        let members = try await bob.share(id: share.id).participants
        #expect(Set(members.compactMap(\.name)) == ["alice", "bob", "carol", "frank"], "\(members)")
        #expect(members.allSatisfy { $0.name == "bob" || $0.email == nil } && members.allSatisfy { $0.status == .accepted || $0.role == .owner })
        // And frank, in by the link, sees the owner and himself, nothing else
        let joined = try await frank.share(id: share.id)
        #expect(joined.participants.compactMap(\.name).sorted() == ["alice", "frank"] && joined.participants.allSatisfy { $0.email == nil })
        #expect(joined.publicViews == nil)
        #expect(try await frank.shares().first { $0.id == share.id }?.participants.count == 2)
        // And gina, invited but not in yet, sees the same through her invitations and the share
        let invitation = try #require(try await gina.invitations().first { $0.id == share.id })
        #expect(invitation.participants.compactMap(\.name).sorted() == ["alice", "gina"] && invitation.participants.allSatisfy { $0.email == nil })
        #expect(try await gina.share(id: share.id).participants.count == 2)
        _ = try await daemon.stop()
    }

    /// Asking for alice's zone `Divorce` and for a zone of `nosuchuser` gave two
    /// different answers, which told anyone which accounts and zones exist.
    @Test func aZoneOfAnotherAccountAnswersTheSameWhetherItExistsOrNot() async throws {
        // Given alice's zone Divorce, and bob who has no part in it
        let daemon = try await DaemonProcess.started()
        let alice = try await daemon.account("alice")
        let bob = try await daemon.account("bob")
        _ = try await alice.createZone(named: "Divorce")
        // When bob asks for it, for a zone alice does not have, and for one of an account that does not exist
        var answers: [String] = []
        for zone in [ZoneID(owner: "alice", name: "Divorce"), ZoneID(owner: "alice", name: "Holidays"), ZoneID(owner: "nosuchuser", name: "Divorce")] {
            for ask in [{ _ = try await bob.zoneChanges(zone, since: nil) }, { _ = try await bob.records(["x"], in: zone) }] {
                do {
                    try await ask()
                    Issue.record("bob read \(zone)")
                } catch let error as NotesError {
                    // Then every answer is the same, but for the names he gave
                    answers.append("\(error.code) " + error.message.replacingOccurrences(of: zone.owner, with: "OWNER").replacingOccurrences(of: zone.name, with: "ZONE"))
                }
            }
        }
        #expect(Set(answers).count == 1, "\(answers)")
        _ = try await daemon.stop()
    }
}
