import Foundation
import NotesModel
import Testing

/// The trash, on both backends and the store's injected clock: who deleted what, what a
/// participant sees, restoring the same record with its history, and the purge.
@Suite struct TrashTests {
    @Test(arguments: Backend.allCases)
    func aDeletedNoteComesBackAsTheSameNoteWithItsHistory(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let folder = try await f.folder("f", "Plans")
        var note = try await f.note("n", "todo.md", body: "one", parent: "f")
        f.clock.advance(by: 60)
        note = try #require(try await f.save([RecordSave(recordName: "n", recordType: .note, name: "todo.md", parent: "f", body: "one\ntwo", changeTag: note.changeTag)]).first)
        _ = folder
        // Deleting the folder and its note in one operation trashes both, with who and when.
        f.clock.advance(by: 60)
        let deletedAt = f.clock.now
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "f"), RecordDelete(recordName: "n")]), actor: Fixture.alice)
        let trash = try await f.store.trash(in: f.aliceZone, actor: Fixture.alice)
        #expect(Set(trash.map(\.recordName)) == ["f", "n"])
        let trashedNote = try #require(trash.first { $0.recordName == "n" })
        #expect(trashedNote.name == "todo.md" && trashedNote.parent == "f" && trashedNote.size == 7)
        #expect(trashedNote.deletedBy == Fixture.alice)
        #expect(abs(trashedNote.deletedAt.timeIntervalSince(deletedAt)) < 0.01)
        #expect(trashedNote.changeTag == note.changeTag)

        // Restoring the folder brings the note back inside it: same record names, the
        // text it had, and its history joined to the versions from before.
        let restored = try await f.store.restoreFromTrash("f", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.alice)
        #expect(Set(restored.map(\.recordName)) == ["f", "n"])
        let all = try await f.all()
        #expect(all["n"]?.body == "one\ntwo" && all["n"]?.parent == "f" && all["f"]?.name == "Plans")
        let history = try await f.store.versions(of: "n", in: f.aliceZone, actor: Fixture.alice)
        #expect(history.map(\.body) == ["one\ntwo", "one\ntwo", "one"], "the restored note, its last version before the delete, and the first")
        #expect(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).isEmpty)

        // A restore elsewhere and under another name; a name not in the trash is refused.
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "n")]), actor: Fixture.alice)
        let elsewhere = try await f.store.restoreFromTrash("n", in: f.aliceZone, parent: .some(nil), name: "todo (restored).md", actor: Fixture.alice)
        #expect(elsewhere.first?.parent == nil && elsewhere.first?.name == "todo (restored).md")
        await f.expectFailure(.unknownItem) {
            _ = try await f.store.restoreFromTrash("n", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.alice)
        }
    }

    /// A restore is one transaction: refused by one of its saves (here the parent it names
    /// is not there), it leaves the note in the trash and its history where it was, so a
    /// later restore still brings both back.
    @Test(arguments: Backend.allCases)
    func aRefusedRestoreLeavesTheTrashAndTheHistoryAsTheyWere(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        var note = try await f.note("n", "todo.md", body: "one")
        note = try #require(try await f.save([RecordSave(recordName: "n", recordType: .note, name: "todo.md", body: "one two", changeTag: note.changeTag)]).first)
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "n")]), actor: Fixture.alice)
        await f.expectFailure(.referenceViolation) {
            _ = try await f.store.restoreFromTrash("n", in: f.aliceZone, parent: .some("no-such-folder"), name: nil, actor: Fixture.alice)
        }
        #expect(try await f.all()["n"] == nil)
        #expect(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).map(\.recordName) == ["n"])
        _ = try await f.store.restoreFromTrash("n", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.alice)
        let history = try await f.store.versions(of: "n", in: f.aliceZone, actor: Fixture.alice)
        #expect(history.map(\.body) == ["one two", "one two", "one"])
        #expect(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func participantsSeeTheTrashOfWhatTheyReadAndRestoreOnlyWithWriteRights(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        _ = try await f.folder("shared", "Shared")
        _ = try await f.note("a", "a.md", body: "in the share", parent: "shared")
        _ = try await f.note("private", "private.md", body: "not shared")
        let share = try await f.shareWithBob("shared", permission: .readOnly)
        _ = share
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "a"), RecordDelete(recordName: "private")]), actor: Fixture.alice)
        // Bob sees what was deleted from the share, not alice's private note.
        let seen = try await f.store.trash(in: f.aliceZone, actor: Fixture.bob)
        #expect(seen.map(\.recordName) == ["a"])
        // The JSON a backend writes straight from its rows says the same, for both.
        for actor in [Fixture.alice, Fixture.bob] {
            let json = try await f.store.trashJSON(in: f.aliceZone, actor: actor)
            // (Times travel as ISO 8601 to the millisecond.)
            func milliseconds(_ entries: [TrashedRecord]) -> [TrashedRecord] {
                entries.map {
                    var entry = $0
                    entry.deletedAt = Date(timeIntervalSince1970: (entry.deletedAt.timeIntervalSince1970 * 1_000).rounded(.down) / 1_000)
                    return entry
                }
            }
            let decoded = try NotesJSON.decoder().decode(API.Trash.self, from: Data(json)).trash
            #expect(milliseconds(decoded) == milliseconds(try await f.store.trash(in: f.aliceZone, actor: actor)), "\(String(decoding: json, as: UTF8.self))")
        }
        #expect(seen.first?.deletedBy == Fixture.alice)
        // Read-only: no restore; nothing changes.
        await f.expectFailure(.permissionFailure) {
            _ = try await f.store.restoreFromTrash("a", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.bob)
        }
        #expect(try await f.all()["a"] == nil)
        // A stranger sees nothing of the zone.
        await f.expectFailure(.permissionFailure) {
            _ = try await f.store.trash(in: f.aliceZone, actor: Fixture.carol)
        }
    }

    @Test(arguments: Backend.allCases)
    func theTrashIsEmptiedOfWhatWasDeletedMoreThanItsDaysAgoWithItsHistory(_ backend: Backend) async throws {
        let f = try await Fixture(backend, storage: StoragePolicy(trashDays: 30))
        var note = try await f.note("old", "old.md", body: "1")
        note = try #require(try await f.save([RecordSave(recordName: "old", recordType: .note, name: "old.md", body: "12", changeTag: note.changeTag)]).first)
        _ = try await f.note("new", "new.md", body: "fresh")
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "old")]), actor: Fixture.alice)
        let usedWithOld = try await f.store.usage(of: Fixture.alice).used
        f.clock.advance(by: 20 * 86_400)
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "new")]), actor: Fixture.alice)
        // 29 days after the first delete: nothing goes.
        f.clock.advance(by: 9 * 86_400)
        #expect(try await f.store.purgeTrash(maxRecords: 10) == 0)
        // 31 days: the first goes with its versions; the second stays.
        f.clock.advance(by: 2 * 86_400)
        #expect(try await f.store.purgeTrash(maxRecords: 1) == 1)
        #expect(try await f.store.trash(in: f.aliceZone, actor: Fixture.alice).map(\.recordName) == ["new"])
        await f.expectFailure(.unknownItem) {
            _ = try await f.store.versions(of: "old", in: f.aliceZone, actor: Fixture.alice)
        }
        #expect(
            try await f.store.usage(of: Fixture.alice).used == usedWithOld - 3 - 2 * StoragePolicy.rowBytes, "the two versions of old.md (1 + 2 bytes and their rows) are freed")
        #expect(try await f.store.purgeTrash(maxRecords: 10) == 0)
    }
}
