import Foundation
import NotesModel
import Testing

/// A trashed folder larger than one modify comes back in turns (`RestoreRules`), on
/// both backends: whole, or not at all, and seen by no one until the last turn.
@Suite struct LargeRestoreTests {
    /// A folder of `count` notes (and a subfolder holding a tenth of them), deleted a
    /// batch at a time; returns the bodies by record name.
    static func trashedFolder(_ f: Fixture, notes count: Int) async throws -> [String: String] {
        let (bodies, names) = try await folder(f, notes: count)
        try await delete(f, names)
        return bodies
    }

    static func folder(_ f: Fixture, notes count: Int) async throws -> (bodies: [String: String], names: [String]) {
        _ = try await f.folder("f", "Archive")
        _ = try await f.folder("sub", "Older", parent: "f")
        var bodies: [String: String] = [:]
        let saves = (0..<count).map { index in
            let body = "# Note \(index)\n\nkept \(index)"
            bodies["n\(index)"] = body
            return RecordSave(recordName: "n\(index)", recordType: .note, name: "note \(index).md", parent: index % 10 == 0 ? "sub" : "f", body: body)
        }
        for start in stride(from: 0, to: saves.count, by: Limits.maxBatchItems) {
            _ = try await f.save(Array(saves[start..<min(start + Limits.maxBatchItems, saves.count)]))
        }
        return (bodies, saves.map(\.recordName) + ["sub", "f"])
    }

    /// Deletes `names` (children before their folders) a batch at a time.
    static func delete(_ f: Fixture, _ names: [String]) async throws {
        for start in stride(from: 0, to: names.count, by: Limits.maxBatchItems) {
            let turn = names[start..<min(start + Limits.maxBatchItems, names.count)]
            _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: turn.map { RecordDelete(recordName: $0) }), actor: Fixture.alice)
        }
    }

    @Test(arguments: Backend.allCases)
    func aTrashedFolderOfFiveHundredNotesComesBackWhole(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let bodies = try await Self.trashedFolder(f, notes: 500)
        let before = try await f.store.zoneChanges(f.aliceZone, since: nil, limit: 10, actor: Fixture.alice)
        #expect(before.records.isEmpty)

        let restored = try await f.store.restoreFromTrash("f", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.alice)
        #expect(restored.count == 502)
        #expect(restored.allSatisfy { $0.body == nil }, "the answer lists the records, not their content")
        let all = try await f.all()
        #expect(all.count == 502)
        #expect(bodies.allSatisfy { all[$0.key]?.body == $0.value })
        #expect(all["n10"]?.parent == "sub" && all["n11"]?.parent == "f" && all["sub"]?.parent == "f")
        #expect(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).isEmpty)
        // A client that had fetched before the restore gets all of it from its token.
        var seen = Set<String>()
        var token: String? = before.changeToken
        while true {
            let page = try await f.store.zoneChanges(f.aliceZone, since: token, limit: 150, actor: Fixture.alice)
            seen.formUnion(page.records.map(\.recordName))
            token = page.changeToken
            if !page.moreComing { break }
        }
        #expect(seen.count == 502)
        // Each note's history joined its versions from before the delete.
        let history = try await f.store.versions(of: "n7", in: f.aliceZone, actor: Fixture.alice)
        #expect(history.count == 2)
    }

    /// Between its first turn and its last, a restore's records are in no change page,
    /// no lookup and no public page, and the zone's pages stop before its first change
    /// (a save made meanwhile waits with it); finishing shows everything at once.
    @Test(arguments: Backend.allCases)
    func aRestoreUnderWayIsSeenByNoOneUntilItsLastTurn(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        _ = try await f.folder("f", "Public")
        _ = try await f.note("a", "a.md", body: "one", parent: "f")
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "f", publicPermission: .readOnly), actor: Fixture.alice)
        _ = try await f.note("b", "b.md", body: "two", parent: "f")
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "b")]), actor: Fixture.alice)
        let start = try await f.store.zoneChanges(f.aliceZone, since: nil, limit: 100, actor: Fixture.alice)

        let subtree = try await f.store.trashedContent(in: f.aliceZone, under: "b", actor: Fixture.alice)
        try await f.store.beginRestore("r1", in: f.aliceZone, actor: Fixture.alice)
        let turn = try await f.store.trashedBodies(subtree, in: f.aliceZone)
        _ = try await f.store.modify(
            ModifyRequest(zone: f.aliceZone, saves: TrashRules.saves(restoring: turn, root: "b", parent: "f", name: nil)), actor: Fixture.alice,
            restoring: subtree.map { ($0.record.recordName, $0.createdSeq) }, restore: "r1")
        _ = try await f.note("c", "c.md", body: "saved meanwhile")

        let during = try await f.store.zoneChanges(f.aliceZone, since: start.changeToken, limit: 100, actor: Fixture.alice)
        #expect(during.records.isEmpty && !during.moreComing, "the page stops before the restore's first change")
        #expect(try await f.store.lookUp(["b"], in: f.aliceZone, actor: Fixture.alice).records.isEmpty)
        #expect(try await f.store.publicShare(urlToken: share.urlToken).records.map(\.recordName).sorted() == ["a", "f"])
        await f.expectFailure(.unknownItem) { _ = try await f.store.publicRecord(urlToken: share.urlToken, recordName: "b", pass: nil) }
        #expect(try await f.store.unfinishedRestores(startedBefore: f.clock.now.addingTimeInterval(1)).map(\.id) == ["r1"])

        try await f.store.finishRestore("r1", in: f.aliceZone)
        let after = try await f.store.zoneChanges(f.aliceZone, since: during.changeToken, limit: 100, actor: Fixture.alice)
        #expect(after.records.map(\.recordName).sorted() == ["b", "c"])
        #expect(try await f.store.lookUp(["b"], in: f.aliceZone, actor: Fixture.alice).records.first?.body == "two")
        #expect(try await f.store.publicShare(urlToken: share.urlToken).records.map(\.recordName).sorted() == ["a", "b", "f"])
        #expect(try await f.store.unfinishedRestores(startedBefore: f.clock.now.addingTimeInterval(1)).isEmpty)
    }

    /// notesd stopped in the middle of a restore: at the next start the turns done are
    /// taken back, the folder is whole in the trash again, and the zone's pages move on.
    @Test(arguments: Backend.allCases)
    func aRestoreCutShortIsTakenBackAndTheFolderStaysInTheTrash(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        _ = try await Self.trashedFolder(f, notes: 250)
        let trashed = Set(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).map(\.recordName))
        #expect(trashed.count == 252)
        let subtree = try await f.store.trashedContent(in: f.aliceZone, under: "f", actor: Fixture.alice)
        try await f.store.beginRestore("cut", in: f.aliceZone, actor: Fixture.alice)
        let first = try await f.store.trashedBodies(RestoreRules.turns(subtree)[0], in: f.aliceZone)
        _ = try await f.store.modify(
            ModifyRequest(zone: f.aliceZone, saves: TrashRules.saves(restoring: first, root: "f", parent: nil, name: nil)), actor: Fixture.alice,
            restoring: first.map { ($0.record.recordName, $0.createdSeq) }, restore: "cut")
        #expect(try await f.all().isEmpty)
        // Not yet abandoned: a restore begun now is left alone.
        #expect(try await f.store.undoUnfinishedRestores(startedBefore: f.clock.now.addingTimeInterval(-RestoreRules.abandonedAfterSeconds)) == 0)

        #expect(try await f.store.undoUnfinishedRestores(startedBefore: .distantFuture) == 1)
        #expect(try await f.all().isEmpty, "nothing of the folder shows, and the pages are no longer held")
        _ = try await f.note("later", "later.md")
        #expect(try await f.all().keys.sorted() == ["later"])
        #expect(Set(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).map(\.recordName)) == trashed)
        let restored = try await f.store.restoreFromTrash("f", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.alice)
        #expect(restored.count == 252)
        #expect(try await f.all().count == 253)
    }

    /// A turn refused (two trashed notes that would take the same name) takes back the
    /// turns before it: the folder stays in the trash, whole, and nothing shows.
    @Test(arguments: Backend.allCases)
    func aRestoreRefusedInALaterTurnLeavesTheFolderInTheTrash(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let (_, names) = try await Self.folder(f, notes: 250)
        // A note deleted from the folder earlier, whose name another note took since.
        try await Self.delete(f, ["n249"])
        _ = try await f.note("twin", "note 249.md", body: "a twin", parent: "f")
        try await Self.delete(f, ["twin"] + names.filter { $0 != "n249" })
        let trashed = Set(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).map(\.recordName))
        #expect(trashed.count == 253)

        await f.expectFailure(.constraintViolation) {
            _ = try await f.store.restoreFromTrash("f", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.alice)
        }
        #expect(try await f.all().isEmpty)
        #expect(Set(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).map(\.recordName)) == trashed)
        #expect(try await f.store.unfinishedRestores(startedBefore: .distantFuture).isEmpty)
    }

    @Test func undoTurnsDeleteChildrenBeforeTheirFolders() {
        let records: [(recordName: String, parent: String?)] = [("root", nil), ("a", "root"), ("b", "a"), ("c", "b"), ("d", "root"), ("e", "outside")]
        let order = RestoreRules.undoTurns(records).flatMap { $0 }
        #expect(Set(order) == Set(records.map(\.recordName)))
        func position(_ name: String) -> Int { order.firstIndex(of: name)! }
        #expect(position("c") < position("b") && position("b") < position("a") && position("a") < position("root") && position("d") < position("root"))
    }
}
