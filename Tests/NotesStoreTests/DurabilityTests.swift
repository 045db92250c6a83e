import Foundation
@testable import NotesStore
import GRDB
import Testing

@Suite struct DurabilityTests {
    /// A write that returned must survive a power cut: every commit syncs the WAL.
    /// (GRDB sets its pools' writer to NORMAL after `prepareDatabase`; this catches it.)
    /// SQLite only: on PostgreSQL a commit's durability is the server's setting
    /// (`synchronous_commit`, `fsync`), not something the store chooses per connection.
    @Test func theWriterCommitsWithSynchronousFull() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notes-durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SQLiteStore(path: folder.appendingPathComponent("notes.sqlite").path)
        let level = try store.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(level == 2, "synchronous is \(String(describing: level)); 2 is FULL")
        let mode = try store.pool.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
    }
}
