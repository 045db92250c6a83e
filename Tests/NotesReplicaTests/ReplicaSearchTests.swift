import Foundation
import GRDB
import Logging
import NotesModel
import NotesReplica
import NotesSearch
import NotesSearchSQLite
import Testing

/// The replica's own search index on real SQLite files: every kind of write reaches
/// it, and what the replica no longer holds is no longer found.
@Suite struct ReplicaSearchTests {
    let replica: Replica
    let zone = ZoneID(owner: "alice", name: "_defaultZone")

    init() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("replica-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        replica = try Replica(path: folder.appendingPathComponent("alice.replica.sqlite").path)
    }

    func row(_ name: String) -> ReplicaRecord {
        ReplicaRecord(
            zone: zone, recordName: name, recordType: .note, name: "\(name).md", parent: nil, size: 0,
            shareID: nil, changeTag: nil, createdAt: 0, modifiedAt: 0, modifiedBy: "alice")
    }

    func found(_ search: ReplicaSearch, _ query: String) async throws -> [String] {
        // Every note saved so far in the index, however long a busy machine takes.
        while try await search.indexer?.waitForVisibleSaves(of: "alice", seconds: 10) == false {}
        let request = try SearchRules.Request(API.Search(query: query))
        return try search.search(request, in: nil, account: "alice").map(\.path)
    }

    func remote(_ name: String, body: String, tag: String) -> NotesModel.Record {
        Record(
            recordName: name, zone: zone, recordType: .note, name: "\(name).md", parent: nil, body: body, bytes: nil,
            createdAt: Date(timeIntervalSince1970: 0), modifiedAt: Date(timeIntervalSince1970: 1), modifiedBy: "bob", changeTag: tag, shareID: nil)
    }

    /// A note saved twice: the replica's upsert once carried its conflict rule into the
    /// trigger that queues the note for the index, and the second save failed.
    @Test func aNoteSavedAgainIsQueuedOnceAndSaved() async throws {
        _ = try replica.saveLocal(row("a"), content: Array("first words".utf8))
        _ = try replica.saveLocal(row("a"), content: Array("second words".utf8))
        _ = try replica.applyRemote(zone, records: [remote("r", body: "remote words", tag: "t1")], deleted: [], token: "1", scope: .private)
        _ = try replica.applyRemote(zone, records: [remote("r", body: "third words", tag: "t2")], deleted: [], token: "2", scope: .private)
        let search = try ReplicaSearch(replica: replica, logger: Logger(label: "test"))
        #expect(try await found(search, "second") == ["private/a.md"])
        #expect(try await found(search, "third") == ["private/r.md"])
        #expect(try await found(search, "first OR remote").isEmpty)
        #expect(try search.waitingCount() == 0)
    }

    @Test func localDeletesAndRemoteDeletesLeaveTheIndex() async throws {
        let search = try ReplicaSearch(replica: replica, logger: Logger(label: "test"))
        _ = try replica.saveLocal(row("a"), content: Array("budget review".utf8))
        _ = try replica.applyRemote(zone, records: [remote("b", body: "budget plan", tag: "t1")], deleted: [], token: "1", scope: .private)
        #expect(try await found(search, "budget").sorted() == ["private/a.md", "private/b.md"])
        try replica.deleteLocal(RecordKey(zone: zone, recordName: "a"))
        #expect(try await found(search, "budget") == ["private/b.md"])
        _ = try replica.applyRemote(zone, records: [], deleted: ["b"], token: "2", scope: .private)
        #expect(try await found(search, "budget").isEmpty)
        // Opened again (a remount), it goes on from where it was.
        search.close()
        _ = try replica.saveLocal(row("c"), content: Array("budget again".utf8))
        let reopened = try ReplicaSearch(replica: replica, logger: Logger(label: "test"))
        #expect(try await found(reopened, "budget") == ["private/c.md"])
    }

    /// A write of the index file, which has the replica attached, once took the
    /// replica's write lock too (a pool's IMMEDIATE transaction locks every attached
    /// file): the mount's saves then waited for the index, or failed after the busy
    /// timeout. A save while the index writes goes through.
    @Test func writingTheIndexNeverHoldsTheReplicasWriter() throws {
        let search = try ReplicaSearch(replica: replica, logger: Logger(label: "test"))
        defer { search.close() }
        var configuration = Configuration()
        let replicaPath = replica.path
        configuration.prepareDatabase { db in try db.execute(sql: "ATTACH DATABASE ? AS replica", arguments: [replicaPath]) }
        let pool = try DatabasePool(path: ReplicaSearch.path(besides: replica.path), configuration: configuration)
        let writing = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let thread = Thread {
            _ = try? SearchIndexFile.write(pool) { db in
                try db.execute(sql: "INSERT OR REPLACE INTO progress (owner, indexed_through) VALUES ('held', 1)")
                writing.signal()
                release.wait()
            }
        }
        thread.start()
        writing.wait()
        defer { release.signal() }
        #expect(throws: Never.self) { try replica.saveLocal(row("a"), content: Array("saved while the index writes".utf8)) }
    }
}
