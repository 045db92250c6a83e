import Foundation
import NotesFS
import NotesModel
import NotesMount
import NotesReplica
import Testing

/// The file model alone (a replica and a `NoteTree`, no kernel, no daemon): pages of
/// changes as a fetch brings them, and what the folders list after each.
@Suite struct FileModelTests {
    let zone = ZoneID(owner: "alice", name: "z4")
    let replica: Replica
    let tree: NoteTree

    init() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("model-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        replica = try Replica(path: "\(folder)/alice.replica.sqlite")
        tree = try NoteTree(account: "alice", replica: replica, cacheDirectory: folder) {}
        tree.zoneSeen(zone, scope: .private)
    }

    func record(_ name: String, _ type: RecordType = .folder, parent: String?, seq: Int) -> Record {
        Record(recordName: name, zone: zone, recordType: type, name: type == .folder ? name : "\(name).md", parent: parent,
               body: type == .note ? name : nil, bytes: nil, createdAt: Date(timeIntervalSince1970: 0),
               modifiedAt: Date(timeIntervalSince1970: Double(seq)), modifiedBy: "alice", changeTag: "\(seq)", shareID: nil)
    }

    func page(_ records: [Record], token: String) throws {
        tree.applyRemote(try replica.applyRemote(zone, records: records, deleted: [], token: token, scope: .private))
    }

    func names(_ path: [String]) throws -> [String] {
        var inode = try tree.lookup(parent: 2, name: zone.name).inode   // 2: private/
        for name in path { inode = try tree.lookup(parent: inode, name: name).inode }
        return try tree.list(inode).map(\.name).filter { $0 != "." && $0 != ".." }.sorted()
    }

    @Test func aChildWhoseFolderComesOnALaterPageNeverShowsAtTheTop() throws {
        // a was made in b, then b moved into c: a's change is older than b's, so a page
        // can bring a before b (what a fresh mount's first fetch of fsstress's tree did).
        try page([record("a", parent: "b", seq: 1), record("big", .note, parent: nil, seq: 2)], token: "z1.0.1.2")
        #expect(try names([]) == ["big.md"], "a flashed at the zone's top before its folder came")
        try page([record("c", parent: nil, seq: 3), record("b", parent: "c", seq: 4)], token: "z1.0.1.4")
        #expect(try names([]) == ["big.md", "c"])
        #expect(try names(["c"]) == ["b"])
        #expect(try names(["c", "b"]) == ["a"])
    }

    @Test func aRecordWhoseFolderNeverComesShowsAtTheTopWhenTheFetchEnds() throws {
        try page([record("lost", .note, parent: "gone", seq: 1)], token: "z1.0.1.1")
        #expect(try names([]).isEmpty)
        tree.showOrphans()
        #expect(try names([]) == ["lost.md"])
        // Its folder coming later moves it in.
        try page([record("gone", parent: nil, seq: 2)], token: "z1.0.1.2")
        #expect(try names([]) == ["gone"])
        #expect(try names(["gone"]) == ["lost.md"])
    }
}
