import NotesFS
import NotesModel
@testable import NotesMount
import NotesReplica
import Testing

/// The same-note rule as a value: what waits under a name, who takes it, and when the
/// wait ends, on a clock the test moves by hand.
@Suite struct EditorSavesTests {
    let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
    let plan = FolderName(parent: 2, name: "plan.md")

    func removed(_ recordName: String, at time: Double, deleted: Bool = true) -> EditorSaves.Removed {
        let record = ReplicaRecord(
            zone: zone, recordName: recordName, recordType: .note, name: "plan.md", parent: nil, size: 0, shareID: nil, changeTag: nil, createdAt: 0,
            modifiedAt: 0, modifiedBy: "alice")
        return EditorSaves.Removed(record: record, since: time, staleBase: nil, deletedInReplica: deleted)
    }

    @Test func aRemovedNoteIsTakenBackOnceByTheNextFileUnderItsName() {
        var saves = EditorSaves()
        saves.noteRemoved(removed("r1", at: 10), from: plan)
        #expect(saves.keepsFree(plan))
        #expect(saves.waits(RecordKey(zone: zone, recordName: "r1")))
        #expect(saves.takeBack(FolderName(parent: 2, name: "other.md"), now: 11) == nil, "another name took the record")
        #expect(saves.takeBack(FolderName(parent: 3, name: "plan.md"), now: 11) == nil, "the same name in another folder took the record")
        #expect(saves.takeBack(plan, now: 11)?.record.recordName == "r1")
        #expect(saves.takeBack(plan, now: 11) == nil, "a record was taken back twice")
        #expect(!saves.keepsFree(plan))
    }

    @Test func aRemovedNoteNotTakenBackWithinTheWindowIsDeletedForGood() {
        var saves = EditorSaves()
        saves.noteRemoved(removed("r1", at: 10), from: plan)
        #expect(saves.expire(olderThan: EditorSaves.window, now: 11.9).removed.isEmpty)
        // Past the window, a new file is a new note even before the tick collects the wait.
        #expect(saves.takeBack(plan, now: 12.1) == nil)
        let gone = saves.expire(olderThan: EditorSaves.window, now: 12.1).removed
        #expect(gone.map(\.record.recordName) == ["r1"])
    }

    @Test func aNoteMovedAwayAndDeletedHandsItsRecordToItsOldNameOnlyWithinTheWindow() {
        var saves = EditorSaves()
        let key = RecordKey(zone: zone, recordName: "r1")
        saves.noteMovedAway(40, key: key, from: plan, now: 10)
        #expect(saves.keepsFree(plan))
        #expect(saves.holdsSave(of: key, now: 11.9))
        #expect(!saves.holdsSave(of: key, now: 12.1), "a moved note's upload was held past the window")
        #expect(saves.handOver(deleting: 41, now: 11).isEmpty, "another file's delete handed the record over")
        #expect(saves.handOver(deleting: 40, now: 11) == [plan])
        #expect(saves.handOver(deleting: 40, now: 11).isEmpty, "the record was handed over twice")

        saves.noteMovedAway(40, key: key, from: plan, now: 20)
        #expect(saves.handOver(deleting: 40, now: 22.5).isEmpty, "deleted after the window, the note still handed its record over")
        #expect(!saves.keepsFree(plan))
    }

    @Test func aNoteMovedTwiceHandsItsRecordToTheNameItLeftLast() {
        var saves = EditorSaves()
        let key = RecordKey(zone: zone, recordName: "r1")
        let second = FolderName(parent: 2, name: "b.md")
        saves.noteMovedAway(40, key: key, from: plan, now: 10)
        saves.noteMovedAway(40, key: key, from: second, now: 10.5)
        #expect(saves.handOver(deleting: 40, now: 11) == [second, plan])
    }

    @Test func aMovedNoteKeptPastTheWindowFreesItsUploadAndName() {
        var saves = EditorSaves()
        let key = RecordKey(zone: zone, recordName: "r1")
        saves.noteMovedAway(40, key: key, from: plan, now: 10)
        #expect(!saves.expire(olderThan: EditorSaves.window, now: 11).freedMoves)
        #expect(saves.expire(olderThan: EditorSaves.window, now: 12.5).freedMoves)
        #expect(!saves.keepsFree(plan))
    }

    @Test func aRecordThatShowsAgainFromNotesdWaitsNoMore() {
        var saves = EditorSaves()
        let key = RecordKey(zone: zone, recordName: "r1")
        saves.noteRemoved(removed("r1", at: 10), from: plan)
        saves.noteMovedAway(40, key: key, from: FolderName(parent: 2, name: "a.md"), now: 10)
        saves.forget(key)
        #expect(!saves.waits(key))
        #expect(!saves.holdsSave(of: key, now: 10))
        #expect(saves.endAll().isEmpty)
    }

    @Test func unmountingEndsEveryWait() {
        var saves = EditorSaves()
        saves.noteRemoved(removed("r1", at: 10), from: plan)
        saves.noteMovedAway(40, key: RecordKey(zone: zone, recordName: "r2"), from: FolderName(parent: 2, name: "a.md"), now: 10)
        #expect(saves.endAll().map(\.record.recordName) == ["r1"])
        #expect(!saves.keepsFree(plan) && !saves.keepsFree(FolderName(parent: 2, name: "a.md")))
    }
}
