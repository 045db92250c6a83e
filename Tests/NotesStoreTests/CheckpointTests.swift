import Foundation
import NotesModel
@testable import NotesStore
import Testing

/// SQLite's log is copied back into the database as a turn of its own at the writer,
/// charged to the caller who wrote the most since the last copy, not inside whichever
/// commit crossed the mark (a small save paid for another account's 16 MB batch).
@Suite struct CheckpointTests {
    @Test func aCheckpointIsDueAfterItsPagesAndChargedToWhoWroteMost() {
        let schedule = CheckpointSchedule()
        let due = CheckpointSchedule.pages
        schedule.committed(frames: due * 6 / 10)
        #expect(schedule.wrote("account:mallory") == nil)
        schedule.committed(frames: due * 11 / 10)
        // alice's small save crosses the mark; mallory wrote most of the pages
        #expect(schedule.wrote("account:alice") == "account:mallory")
        // one at a time: none more while that one waits for its turn
        schedule.committed(frames: due * 5 / 2)
        #expect(schedule.wrote("account:mallory") == nil)
        schedule.checkpointed(logFrames: due * 5 / 2)
        schedule.committed(frames: due * 5 / 2 + due * 9 / 10)
        #expect(schedule.wrote("account:alice") == nil)
        // the log started over (everything was copied, no reader held it)
        schedule.committed(frames: due / 25)
        #expect(schedule.wrote("account:alice") == nil)
        schedule.committed(frames: due / 25 + due)
        #expect(schedule.wrote("account:bob") == "account:bob")
    }

    @Test func theLogIsCopiedBackWhileLargeNotesAreSaved() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notes-checkpoint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("notes.sqlite").path
        let store = try SQLiteStore(path: path)
        _ = try await store.createAccount(name: "alice", email: nil, isAdmin: false)
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        // When 24 MiB of notes are saved (6,000 pages of log and more)
        let text = String(repeating: "0123456789abcdef", count: 1 << 16)
        for index in 0..<24 {
            _ = try await store.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "n\(index)", recordType: .note, name: "n\(index).md", body: text)]), actor: "alice")
        }
        // Then the database file itself holds most of them: checkpoints ran without SQLite's own
        func size(_ file: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int) ?? 0 }
        let deadline = ContinuousClock.now + .seconds(60)
        while size(path) < 16 << 20 && ContinuousClock.now < deadline { await Task.yield() }
        #expect(size(path) >= 16 << 20, "database \(size(path)) bytes, log \(size(path + "-wal")) bytes")
        // And the log started over on the way: its file (which SQLite reuses rather than
        // shrinks) never held all 24 MiB.
        #expect(size(path + "-wal") < 16 << 20, "log \(size(path + "-wal")) bytes")
    }
}
