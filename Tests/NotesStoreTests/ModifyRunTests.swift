import NotesModel
import NotesStoreRules
import Testing

/// The order of a modify that both backends follow: deletes that can go first, the
/// saves, then the deletes that waited for them; a failure named on its item.
@Suite struct ModifyRunTests {
    @Test func aFolderEmptiedBySavesIsDeletedAfterThemAndFailuresNameTheirItem() throws {
        let request = ModifyRequest(
            zone: ZoneID(owner: "alice", name: ZoneID.defaultZoneName),
            saves: [RecordSave(recordName: "moved", recordType: .note, name: "moved.md", parent: "kept", body: "x")],
            deletes: [RecordDelete(recordName: "old-folder"), RecordDelete(recordName: "gone")])
        var run = ModifyRun(request, saves: try RecordRules.ordered(request.saves))
        var steps: [String] = []
        while let step = run.next() {
            switch step {
            case .delete(let delete, let savedParents):
                steps.append("delete \(delete.recordName)\(savedParents.isEmpty ? " after saves" : "")")
                // The folder still holds "moved", which the save takes out: it waits.
                if delete.recordName == "old-folder" && !savedParents.isEmpty { run.waitForSaves(delete) }
            case .save(let save):
                steps.append("save \(save.recordName)")
            case .savesDone:
                steps.append("saves done")
            }
        }
        #expect(steps == ["delete old-folder", "delete gone", "save moved", "saves done", "delete old-folder after saves"])
        #expect(run.deleting == ["old-folder", "gone"])
        // A failure now is charged to the delete that ran last; the rest were not applied.
        let failure = run.failure(NotesError(.folderNotEmpty, "not empty"))
        #expect(failure.code == .folderNotEmpty)
        #expect(failure.itemErrors.first { $0.recordName == "old-folder" }?.code == .folderNotEmpty)
        #expect(failure.itemErrors.filter { $0.code == .batchRequestFailed }.map(\.recordName).sorted() == ["gone", "moved"])
    }
}
