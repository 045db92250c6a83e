import Foundation
import NotesModel
import NotesStoreRules
import NotesStore
import Testing

/// The sharing half of the conformance suite: CloudKit's rules, decided by the store.
@Suite struct SharingStoreTests {
    /// alice: Work/ (folder) holding plan.md and Specs/api.md; inbox.md outside.
    static func tree(_ f: Fixture) async throws {
        try await f.folder("work", "Work")
        try await f.note("plan", "plan.md", body: "the plan", parent: "work")
        try await f.folder("specs", "Specs", parent: "work")
        try await f.note("api", "api.md", body: "the api", parent: "specs")
        try await f.note("inbox", "inbox.md", body: "private")
    }

    @Test(arguments: Backend.allCases)
    func readOnlyParticipantSeesButCannotWrite(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.store.createShare(
            NewShare(zone: f.aliceZone, rootRecordName: "work", participants: [Invitee(name: Fixture.bob, permission: .readOnly)]), actor: Fixture.alice)
        #expect(share.participants.map(\.status) == [.accepted, .pending])

        // Before accepting, bob sees an invitation and no records.
        #expect(try await f.store.invitations(actor: Fixture.bob).map(\.id) == [share.id])
        await f.expectFailure(.permissionFailure) { _ = try await f.all(as: Fixture.bob) }
        #expect(try await f.store.zones(scope: .shared, actor: Fixture.bob).isEmpty)

        _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.bob)
        await f.expectFailure(.constraintViolation) { _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.bob) }
        #expect(try await f.store.zones(scope: .shared, actor: Fixture.bob).map(\.id) == [f.aliceZone])
        let visible = try await f.all(as: Fixture.bob)
        #expect(Set(visible.keys) == ["work", "plan", "specs", "api"])
        #expect(visible["plan"]?.body == "the plan")
        #expect(try await f.store.records(["inbox", "plan"], in: f.aliceZone, actor: Fixture.bob).map(\.recordName) == ["plan"])

        // Every write fails with permissionFailure and changes nothing.
        let plan = try #require(visible["plan"])
        let before = try await f.all()
        await f.expectFailure(.permissionFailure) {
            try await f.save([RecordSave(recordName: "plan", recordType: .note, name: "plan.md", parent: "work", body: "bob was here", changeTag: plan.changeTag)], as: Fixture.bob)
        }
        await f.expectFailure(.permissionFailure) { try await f.note("new", "new.md", parent: "work", as: Fixture.bob) }
        await f.expectFailure(.permissionFailure) {
            _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "api")]), actor: Fixture.bob)
        }
        await f.expectFailure(.permissionFailure) {
            try await f.save([RecordSave(recordName: "plan", recordType: .note, name: "renamed.md", parent: "work", body: "the plan", changeTag: plan.changeTag)], as: Fixture.bob)
        }
        await f.expectFailure(.permissionFailure) { _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPermission: .readWrite), actor: Fixture.bob) }
        await f.expectFailure(.permissionFailure) {
            _ = try await f.store.addParticipants(shareID: share.id, [Invitee(name: Fixture.carol, permission: .readWrite)], actor: Fixture.bob)
        }
        await f.expectFailure(.permissionFailure) { try await f.store.stopShare(id: share.id, actor: Fixture.bob) }
        #expect(try await f.all() == before)
    }

    @Test(arguments: Backend.allCases)
    func wrongLinkPasswordsAreCountedPerClientAndWaitOutTheirWindow(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "plan", publicPermission: .readOnly), actor: Fixture.alice)
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPassword: "s3cret"), actor: Fixture.alice)
        let guesser = "203.0.113.7"
        for attempt in 1...Limits.passwordFailuresPerClient {
            await f.expectFailure(.permissionFailure) {
                _ = try await f.store.acceptShare(urlToken: share.urlToken, password: "guess \(attempt)", actor: Fixture.bob, client: guesser)
            }
        }
        // Over the count: refused before any check, even with the right password, with
        // the time left in the window.
        do {
            _ = try await f.store.acceptShare(urlToken: share.urlToken, password: "s3cret", actor: Fixture.bob, client: guesser)
            Issue.record("a guess over the limit was checked")
        } catch {
            #expect(error.code == .requestRateLimited)
            #expect((1...Int(Limits.passwordWindowSeconds)).contains(error.retryAfter ?? 0), "\(error)")
        }
        // Another client is not held back by this one.
        _ = try await f.store.acceptShare(urlToken: share.urlToken, password: "s3cret", actor: Fixture.carol, client: "198.51.100.1")
        // When the window is over, the guesser may try again.
        f.clock.advance(by: Limits.passwordWindowSeconds + 1)
        _ = try await f.store.acceptShare(urlToken: share.urlToken, password: "s3cret", actor: Fixture.bob, client: guesser)
        #expect(try await f.store.shares(actor: Fixture.bob).map(\.id) == [share.id])
    }

    @Test(arguments: Backend.allCases)
    func readWriteParticipantWorksInsideTheShareOnly(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.shareWithBob("work", permission: .readWrite)
        let plan = try #require(try await f.all(as: Fixture.bob)["plan"])
        let edited = try await f.save(
            [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", parent: "work", body: "bob's edit", changeTag: plan.changeTag)], as: Fixture.bob)[0]
        #expect(edited.modifiedBy == Fixture.bob)
        #expect(try await f.all()["plan"]?.body == "bob's edit")
        #expect(try await f.store.versions(of: "plan", in: f.aliceZone, actor: Fixture.alice).first?.modifiedBy == Fixture.bob)

        let created = try await f.note("bobs", "bob.md", body: "new", parent: "specs", as: Fixture.bob)
        #expect(created.shareID == share.id)
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "api")]), actor: Fixture.bob)

        // Never the root, never outside the share, never the share itself.
        await f.expectFailure(.permissionFailure) {
            _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "work")]), actor: Fixture.bob)
        }
        await f.expectFailure(.permissionFailure) { try await f.note("root", "root.md", as: Fixture.bob) }
        let bobs = try #require(try await f.all(as: Fixture.bob)["bobs"])
        await f.expectFailure(.permissionFailure) {
            try await f.save([RecordSave(recordName: "bobs", recordType: .note, name: "bob.md", parent: nil, body: "new", changeTag: bobs.changeTag)], as: Fixture.bob)
        }
        await f.expectFailure(.unknownItem) {
            _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "inbox")]), actor: Fixture.bob)
        }
        await f.expectFailure(.permissionFailure) { try await f.store.stopShare(id: share.id, actor: Fixture.bob) }
        #expect(try await f.all()["inbox"]?.body == "private")
    }

    @Test(arguments: Backend.allCases)
    func removedParticipantLosesAccessAtOnce(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.shareWithBob("work", permission: .readWrite)
        let dbToken = try await f.store.databaseChanges(scope: .shared, since: nil, actor: Fixture.bob).changeToken
        _ = try await f.store.removeParticipant(shareID: share.id, name: Fixture.bob, actor: Fixture.alice)
        await f.expectFailure(.permissionFailure) { _ = try await f.all(as: Fixture.bob) }
        await f.expectFailure(.permissionFailure) { try await f.note("again", "again.md", parent: "work", as: Fixture.bob) }
        await f.expectFailure(.permissionFailure) { _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.bob) }
        let changes = try await f.store.databaseChanges(scope: .shared, since: dbToken, actor: Fixture.bob)
        #expect(changes.deletedZones == [f.aliceZone])
        #expect(try await f.store.zones(scope: .shared, actor: Fixture.bob).isEmpty)
        await f.expectFailure(.unknownItem) { _ = try await f.store.share(id: share.id, actor: Fixture.bob) }
        // The share still lists bob, as removed; removing him again changes nothing.
        let listed = try await f.store.share(id: share.id, actor: Fixture.alice)
        #expect(listed.participant(named: Fixture.bob)?.status == .removed)
        #expect(try await f.store.removeParticipant(shareID: share.id, name: Fixture.bob, actor: Fixture.alice) == listed)
        #expect(try await f.store.databaseChanges(scope: .shared, since: changes.changeToken, actor: Fixture.bob).deletedZones.isEmpty)
        await f.expectFailure(.unknownItem) { _ = try await f.store.removeParticipant(shareID: share.id, name: "nobody", actor: Fixture.alice) }
    }

    @Test(arguments: Backend.allCases)
    func alreadySharedAndNesting(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "specs"), actor: Fixture.alice)
        await f.expectFailure(.alreadyShared) { _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "api"), actor: Fixture.alice) }
        await f.expectFailure(.alreadyShared) { _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "work"), actor: Fixture.alice) }
        await f.expectFailure(.alreadyShared) { _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: nil), actor: Fixture.alice) }
        await f.expectFailure(.alreadyShared) { _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "specs"), actor: Fixture.alice) }
        await f.expectFailure(.permissionFailure) { _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "inbox"), actor: Fixture.bob) }
        await f.expectFailure(.unknownItem) { _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "missing"), actor: Fixture.alice) }
        // Moving a shared folder under another share would nest shares.
        let other = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "inbox"), actor: Fixture.alice)
        #expect(other.id != share.id)
        try await f.folder("box", "Box")
        _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "box"), actor: Fixture.alice)
        let specs = try #require(try await f.all()["specs"])
        await f.expectFailure(.alreadyShared) {
            try await f.save([RecordSave(recordName: "specs", recordType: .folder, name: "Specs", parent: "box", changeTag: specs.changeTag)])
        }
    }

    @Test(arguments: Backend.allCases)
    func movesInAndOutOfAShareReachParticipants(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        _ = try await f.shareWithBob("specs", permission: .readOnly)
        var token = try await f.store.zoneChanges(f.aliceZone, since: nil, limit: 100, actor: Fixture.bob).changeToken
        // The owner moves api.md out of the shared folder: bob's next fetch drops it.
        let api = try #require(try await f.all()["api"])
        try await f.save([RecordSave(recordName: "api", recordType: .note, name: "api.md", parent: "work", body: "the api", changeTag: api.changeTag)])
        var delta = try await f.store.zoneChanges(f.aliceZone, since: token, limit: 100, actor: Fixture.bob)
        #expect(delta.deleted == ["api"])
        token = delta.changeToken
        // And back in: bob's next fetch has it again.
        let moved = try #require(try await f.all()["api"])
        try await f.save([RecordSave(recordName: "api", recordType: .note, name: "api.md", parent: "specs", body: "the api", changeTag: moved.changeTag)])
        delta = try await f.store.zoneChanges(f.aliceZone, since: token, limit: 100, actor: Fixture.bob)
        #expect(delta.records.map(\.recordName) == ["api"])
        #expect(delta.deleted.isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func zoneWideShareCoversLaterRecords(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let work = ZoneID(owner: Fixture.alice, name: "Work")
        _ = try await f.store.createZone(work, actor: Fixture.alice)
        try await f.note("a", "a.md", in: work)
        let share = try await f.shareWithBob(nil, permission: .readWrite, zone: work)
        #expect(share.isZoneWide)
        try await f.note("b", "b.md", in: work)
        #expect(Set(try await f.all(work, as: Fixture.bob).keys) == ["a", "b"])
        try await f.note("c", "c.md", in: work, as: Fixture.bob)
        #expect(try await f.all(work)["c"]?.modifiedBy == Fixture.bob)
        // Bob leaves; the share goes on for the owner, and bob sees nothing.
        try await f.store.leaveShare(id: share.id, actor: Fixture.bob)
        await f.expectFailure(.permissionFailure) { _ = try await f.all(work, as: Fixture.bob) }
        await f.expectFailure(.permissionFailure) { try await f.store.leaveShare(id: share.id, actor: Fixture.alice) }
        #expect(try await f.store.share(id: share.id, actor: Fixture.alice).participants.first { $0.name == Fixture.bob }?.status == .removed)
    }

    @Test(arguments: Backend.allCases)
    func stoppingAndDeletingTheRootEndTheShare(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.shareWithBob("plan", permission: .readWrite)
        // A read-write participant edits the root note (whose parent he cannot see).
        let plan = try #require(try await f.all(as: Fixture.bob)["plan"])
        try await f.save(
            [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", parent: plan.parent, body: "edited by bob", changeTag: plan.changeTag)], as: Fixture.bob)
        #expect(try await f.all()["plan"]?.body == "edited by bob")
        try await f.store.stopShare(id: share.id, actor: Fixture.alice)
        await f.expectFailure(.permissionFailure) { _ = try await f.all(as: Fixture.bob) }
        #expect(try await f.all()["plan"]?.shareID == nil)
        await f.expectFailure(.unknownItem) { _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.carol) }

        let again = try await f.shareWithBob("plan", permission: .readWrite)
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "plan")]), actor: Fixture.alice)
        await f.expectFailure(.unknownItem) { _ = try await f.store.share(id: again.id, actor: Fixture.alice) }
        await f.expectFailure(.permissionFailure) { _ = try await f.all(as: Fixture.bob) }
    }

    /// Versions were looked up by record name alone, so a record made under the
    /// name of a deleted one read that one's history, outside any share.
    @Test(arguments: Backend.allCases)
    func aRecordMadeUnderADeletedOnesNameDoesNotReadItsHistory(_ backend: Backend) async throws {
        // Given a private note with two versions, deleted, and bob a read-write participant of Work
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let secret = try await f.note("secret", "secret.md", body: "salary: 1")
        try await f.save([RecordSave(recordName: "secret", recordType: .note, name: "secret.md", body: "salary: 2", changeTag: secret.changeTag)])
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "secret")]), actor: Fixture.alice)
        _ = try await f.shareWithBob("work", permission: .readWrite)

        // When bob creates a note inside the share under that record name
        try await f.note("secret", "mine.md", body: "bob's", parent: "work", as: Fixture.bob)

        // Then its history is its own, for him and for alice
        for actor in [Fixture.bob, Fixture.alice] {
            let versions = try await f.store.versions(of: "secret", in: f.aliceZone, actor: actor)
            #expect(versions.map(\.body) == ["bob's"], "as \(actor)")
        }
        // And a deleted record's own history stays readable by its owner (for restoring)
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "secret")]), actor: Fixture.alice)
        #expect(try await f.store.versions(of: "secret", in: f.aliceZone, actor: Fixture.alice).map(\.body) == ["bob's"])
        await f.expectFailure(.unknownItem) { _ = try await f.store.versions(of: "secret", in: f.aliceZone, actor: Fixture.bob) }
    }

    /// The rule, as Google Docs and Dropbox have it: whoever may read a note reads all of
    /// its history, also from before it was shared with them.
    @Test(arguments: Backend.allCases)
    func participantsReadTheHistoryFromBeforeTheyJoined(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let plan = try await f.all()["plan"]!
        try await f.save([RecordSave(recordName: "plan", recordType: .note, name: "plan.md", parent: "work", body: "the plan, v2", changeTag: plan.changeTag)])
        _ = try await f.shareWithBob("work", permission: .readOnly)
        #expect(try await f.store.versions(of: "plan", in: f.aliceZone, actor: Fixture.bob).map(\.body) == ["the plan, v2", "the plan"])
        await f.expectFailure(.unknownItem) { _ = try await f.store.versions(of: "inbox", in: f.aliceZone, actor: Fixture.bob) }
    }

    @Test(arguments: Backend.allCases)
    func anExpiredLinkAnswersLikeAnUnknownOneOnTheStoresClock(_ backend: Backend) async throws {
        // Given a public link that expires in a minute
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "plan", publicPermission: .readOnly), actor: Fixture.alice)
        let updated = try await f.store.updateShare(id: share.id, ShareUpdate(publicExpiresIn: 60), actor: Fixture.alice)
        #expect(updated.publicExpiresAt.map { abs($0.timeIntervalSince(f.clock.now) - 60) < 0.01 } == true)
        // When the clock is short of it, the page serves; once it passes, page and accept answer "unknown"
        f.clock.advance(by: 59.9)
        #expect(try await f.store.publicShare(urlToken: share.urlToken).records.contains { $0.recordName == "plan" })
        f.clock.advance(by: 0.2)
        await f.expectFailure(.unknownItem) { _ = try await f.store.publicShare(urlToken: share.urlToken) }
        await f.expectFailure(.unknownItem) { _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.carol) }
        // Then 0 removes the expiry, and the link works again
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicExpiresIn: 0), actor: Fixture.alice)
        #expect(try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.carol).participant(named: Fixture.carol) != nil)
    }

    /// A password link's pages open with the pass that the right password earns, and
    /// with nothing else; the pass ends with the link, its password, its URL or its own
    /// expiry (all on the store's clock).
    @Test(arguments: Backend.allCases)
    func aLinkPasswordEarnsAPassThatEndsWithTheLink(_ backend: Backend) async throws {
        // Given a public link with a password that expires in 40 days
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "work", publicPermission: .readOnly), actor: Fixture.alice)
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicExpiresIn: 40 * 86_400, publicPassword: "open sesame"), actor: Fixture.alice)
        let token = share.urlToken

        // When a visitor has no pass, or a forged one, the pages ask for the password
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.publicShare(urlToken: token, pass: nil) }
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.publicShare(urlToken: token, pass: "99999999999.0000") }
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.publicRecord(urlToken: token, recordName: "plan", pass: "garbage") }
        // and a wrong password earns nothing
        await f.expectFailure(.permissionFailure) { _ = try await f.store.unlockPublicLink(urlToken: token, password: "open says me", client: "192.0.2.7") }

        // Then the right one earns a pass that opens the pages, for 30 days
        let unlocked = try #require(try await f.store.unlockPublicLink(urlToken: token, password: "open sesame", client: "192.0.2.7"))
        #expect(abs(unlocked.expires.timeIntervalSince(f.clock.now) - LinkPass.lifetime) < 1)
        #expect(try await f.store.publicShare(urlToken: token, pass: unlocked.pass).records.contains { $0.recordName == "plan" })
        #expect(try await f.store.publicRecord(urlToken: token, recordName: "plan", pass: unlocked.pass).body == "the plan")
        // and only for this link, and not once it has expired
        let other = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "inbox", publicPermission: .readOnly), actor: Fixture.alice)
        _ = try await f.store.updateShare(id: other.id, ShareUpdate(publicPassword: "open sesame"), actor: Fixture.alice)
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.publicShare(urlToken: other.urlToken, pass: unlocked.pass) }
        f.clock.advance(by: LinkPass.lifetime + 1)
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.publicShare(urlToken: token, pass: unlocked.pass) }

        // A pass made near the link's end ends with the link
        let late = try #require(try await f.store.unlockPublicLink(urlToken: token, password: "open sesame", client: nil))
        #expect(abs(late.expires.timeIntervalSince(f.clock.now) - (10 * 86_400 - 1)) < 2)
        f.clock.advance(by: 10 * 86_400)
        await f.expectFailure(.unknownItem) { _ = try await f.store.publicShare(urlToken: token, pass: late.pass) }
        await f.expectFailure(.unknownItem) { _ = try await f.store.unlockPublicLink(urlToken: token, password: "open sesame", client: nil) }

        // A new password ends every pass made with the old one; rotating the URL ends them too
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicExpiresIn: 0), actor: Fixture.alice)
        let before = try #require(try await f.store.unlockPublicLink(urlToken: token, password: "open sesame", client: nil))
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPassword: "new words"), actor: Fixture.alice)
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.publicShare(urlToken: token, pass: before.pass) }
        let after = try #require(try await f.store.unlockPublicLink(urlToken: token, password: "new words", client: nil))
        let rotated = try await f.store.updateShare(id: share.id, ShareUpdate(rotateURL: true), actor: Fixture.alice)
        await f.expectFailure(.unknownItem) { _ = try await f.store.publicShare(urlToken: token, pass: after.pass) }
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.publicShare(urlToken: rotated.urlToken, pass: after.pass) }
        // and removing the password opens the link to anyone (unlocking is then a no-op)
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPassword: ""), actor: Fixture.alice)
        #expect(try await f.store.publicShare(urlToken: rotated.urlToken, pass: nil).records.contains { $0.recordName == "plan" })
        #expect(try await f.store.unlockPublicLink(urlToken: rotated.urlToken, password: "anything", client: nil) == nil)
    }

    @Test(arguments: Backend.allCases)
    func viewsOfAPublicLinkAddUpAndStartAgainWithANewURL(_ backend: Backend) async throws {
        // Given two public links
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let plan = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "plan", publicPermission: .readOnly), actor: Fixture.alice)
        let inbox = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "inbox", publicPermission: .readOnly), actor: Fixture.alice)
        #expect(plan.publicViews == 0)
        // When views come in batches, with a token that is no link among them
        try await f.store.countPublicViews([plan.urlToken: 3, inbox.urlToken: 1, "no-such-token": 7])
        try await f.store.countPublicViews([plan.urlToken: 2])
        try await f.store.countPublicViews([:])
        // Then each link has its own sum
        #expect(try await f.store.share(id: plan.id, actor: Fixture.alice).publicViews == 5)
        #expect(try await f.store.share(id: inbox.id, actor: Fixture.alice).publicViews == 1)
        // and a new URL is a new link: its count starts again
        let rotated = try await f.store.updateShare(id: plan.id, ShareUpdate(rotateURL: true), actor: Fixture.alice)
        #expect(rotated.publicViews == 0)
        try await f.store.countPublicViews([plan.urlToken: 4])
        #expect(try await f.store.share(id: plan.id, actor: Fixture.alice).publicViews == 0)
    }

    /// Deleting an account, in one transaction: its zones and tokens go, its shares stop,
    /// it leaves the shares of others, and what it wrote there keeps its name.
    @Test(arguments: Backend.allCases)
    func aDeletedAccountTakesItsZonesAndLeavesOthersShares(_ backend: Backend) async throws {
        // Given alice's folder shared read-write with bob, who edited a note in it and
        // shares a zone of his own with carol
        let f = try await Fixture(backend)
        try await Self.tree(f)
        _ = try await f.shareWithBob("work", permission: .readWrite)
        let plan = try await f.all()["plan"]!
        try await f.save([RecordSave(recordName: "plan", recordType: .note, name: "plan.md", parent: "work", body: "bob was here", changeTag: plan.changeTag)], as: Fixture.bob)
        let bobsZone = ZoneID(owner: Fixture.bob, name: "Bob")
        _ = try await f.store.createZone(bobsZone, actor: Fixture.bob)
        _ = try await f.store.modify(
            ModifyRequest(
                zone: bobsZone,
                saves: [
                    RecordSave(recordName: "b1", recordType: .note, name: "b1.md", body: "one"),
                    RecordSave(recordName: "b2", recordType: .note, name: "b2.md", body: "two"),
                ]), actor: Fixture.bob)
        let bobsShare = try await f.store.createShare(
            NewShare(zone: bobsZone, rootRecordName: nil, participants: [Invitee(name: Fixture.carol, permission: .readOnly)]), actor: Fixture.bob)
        _ = try await f.store.acceptShare(urlToken: bobsShare.urlToken, actor: Fixture.carol)
        let token = try await f.store.issueToken(for: Fixture.bob, lifetime: nil)

        // When bob's account is deleted
        let deleted = try await f.store.deleteAccount(Fixture.bob)

        // Then it says what went, and it is gone: his zone, his share for carol, his token
        #expect(deleted == API.AccountDeleted(name: Fixture.bob, zones: 2, records: 2, sharesStopped: 1, sharesLeft: 1))
        #expect(try await f.store.account(named: Fixture.bob) == nil)
        #expect(try await f.store.authenticate(token: token) == nil)
        #expect(try await f.store.zones(scope: .shared, actor: Fixture.carol).isEmpty)
        // alice's share no longer has him, and the note he edited keeps his name as its author
        let share = try #require(try await f.store.shares(actor: Fixture.alice).first)
        #expect(share.participant(named: Fixture.bob)?.status == .removed)
        let edited = try await f.all()["plan"]!
        #expect(edited.body == "bob was here" && edited.modifiedBy == Fixture.bob)
        #expect(try await f.store.usage(of: Fixture.bob).used == 0)
        // and an account that is not there cannot be deleted
        await f.expectFailure(.unknownItem) { _ = try await f.store.deleteAccount(Fixture.bob) }
    }

    @Test(arguments: Backend.allCases)
    func wrongPasswordsOnALinksPageAreCountedAsWrongAcceptsAre(_ backend: Backend) async throws {
        // Given a password link
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "plan", publicPermission: .readOnly), actor: Fixture.alice)
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPassword: "open sesame"), actor: Fixture.alice)
        // When one address guesses up to the limit
        for _ in 0..<Limits.passwordFailuresPerClient {
            await f.expectFailure(.permissionFailure) { _ = try await f.store.unlockPublicLink(urlToken: share.urlToken, password: "guess", client: "192.0.2.9") }
        }
        // Then even the right password waits out the window, from that address; another address gets in
        await f.expectFailure(.requestRateLimited) { _ = try await f.store.unlockPublicLink(urlToken: share.urlToken, password: "open sesame", client: "192.0.2.9") }
        #expect(try await f.store.unlockPublicLink(urlToken: share.urlToken, password: "open sesame", client: "192.0.2.10") != nil)
        f.clock.advance(by: Limits.passwordWindowSeconds + 1)
        #expect(try await f.store.unlockPublicLink(urlToken: share.urlToken, password: "open sesame", client: "192.0.2.9") != nil)
    }

    @Test(arguments: Backend.allCases)
    func publicLinksAndEmailInvitations(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await Self.tree(f)
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "plan"), actor: Fixture.alice)
        await f.expectFailure(.permissionFailure) { _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.carol) }
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPermission: .readOnly), actor: Fixture.alice)
        let accepted = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.carol)
        #expect(accepted.participant(named: Fixture.carol)?.role == .publicUser)
        #expect(try await f.all(as: Fixture.carol)["plan"]?.body == "the plan")
        await f.expectFailure(.permissionFailure) {
            try await f.save([RecordSave(recordName: "plan", recordType: .note, name: "plan.md", parent: "work", body: "x", changeTag: "1")], as: Fixture.carol)
        }
        // Turning the link off shuts public users out; rotating the URL revokes it.
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPermission: PublicPermission.none), actor: Fixture.alice)
        await f.expectFailure(.permissionFailure) { _ = try await f.all(as: Fixture.carol) }
        let rotated = try await f.store.updateShare(id: share.id, ShareUpdate(publicPermission: .readOnly, rotateURL: true), actor: Fixture.alice)
        #expect(rotated.urlToken != share.urlToken)
        await f.expectFailure(.unknownItem) { _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.carol) }
        await f.expectFailure(.unknownItem) { _ = try await f.store.acceptShare(urlToken: "no-such-token", actor: Fixture.carol) }

        // An email with no account stays pending and resolves when the account appears.
        _ = try await f.store.addParticipants(shareID: share.id, [Invitee(email: "dave@example.com", permission: .readWrite)], actor: Fixture.alice)
        _ = try await f.store.createAccount(name: "dave", email: "dave@example.com", isAdmin: false)
        #expect(try await f.store.invitations(actor: "dave").map(\.id) == [share.id])
        _ = try await f.store.acceptShare(urlToken: rotated.urlToken, actor: "dave")
        #expect(try await f.all(as: "dave")["plan"] != nil)
        await f.expectFailure(.unknownItem) { _ = try await f.store.addParticipants(shareID: share.id, [Invitee(name: "nobody", permission: .readOnly)], actor: Fixture.alice) }
        await f.expectFailure(.invalidArguments) { _ = try await f.store.acceptShare(urlToken: rotated.urlToken, actor: Fixture.alice) }
    }

    @Test(arguments: Backend.allCases)
    func participantLimit(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.note("n", "n.md")
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "n"), actor: Fixture.alice)
        let emails = (0..<(Limits.maxParticipants - 1)).map { Invitee(email: "p\($0)@example.com", permission: .readOnly) }
        let full = try await f.store.addParticipants(shareID: share.id, emails, actor: Fixture.alice)
        #expect(full.participants.count == Limits.maxParticipants)
        await f.expectFailure(.limitExceeded) {
            _ = try await f.store.addParticipants(shareID: share.id, [Invitee(name: Fixture.bob, permission: .readOnly)], actor: Fixture.alice)
        }
    }
}
