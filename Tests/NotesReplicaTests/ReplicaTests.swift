import Foundation
import NotesModel
import NotesReplica
import Testing

/// The replica's rules, tested on a real SQLite file without a mount or a daemon: what
/// the upload queue hands out, what an upload's answer settles, and what a page of the
/// server's changes may and may not overwrite.
@Suite struct ReplicaTests {
    let replica: Replica
    let zone = ZoneID(owner: "alice", name: "_defaultZone")
    let other = ZoneID(owner: "alice", name: "Work")

    init() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("replica-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        replica = try Replica(path: folder.appendingPathComponent("alice.replica.sqlite").path)
    }

    func row(_ name: String, in zone: ZoneID? = nil, tag: String? = nil) -> ReplicaRecord {
        ReplicaRecord(
            zone: zone ?? self.zone, recordName: name, recordType: .note, name: "\(name).md", parent: nil, size: 0,
            shareID: nil, changeTag: tag, createdAt: 0, modifiedAt: 0, modifiedBy: "alice")
    }

    func server(_ name: String, body: String, tag: String, in zone: ZoneID? = nil) -> Record {
        Record(
            recordName: name, zone: zone ?? self.zone, recordType: .note, name: "\(name).md", parent: nil, body: body, bytes: nil,
            createdAt: Date(timeIntervalSince1970: 0), modifiedAt: Date(timeIntervalSince1970: 1), modifiedBy: "bob", changeTag: tag, shareID: nil)
    }

    func batch(limit: Int = 400, budget: Int = 1 << 30, holding: @escaping (RecordKey) -> Bool = { _ in false }) throws -> [PendingChange] {
        try replica.nextBatch(limit: limit, byteBudget: budget, skipping: [], holding: { key, deleted in deleted && holding(key) }, cost: { content, _ in content?.count ?? 0 })
    }

    @Test func aLoadInChunksHandsOverEveryRecordOnceOutlineFirst() throws {
        for index in 0..<25 { _ = try replica.saveLocal(row("n\(index)"), content: Array("x".utf8)) }
        _ = try replica.saveLocal(row("gone"), content: [])
        try replica.deleteLocal(RecordKey(zone: zone, recordName: "gone"))
        var chunks: [[ReplicaRecord]] = []
        var outlined: ReplicaOutline?
        let outline = try replica.load(inChunksOf: 4) {
            outlined = $0
        } each: {
            chunks.append($0)
        }
        // The outline comes first and counts what follows; deleted records stay out.
        #expect(outlined?.recordCount == 25 && outline.recordCount == 25)
        #expect(chunks.map(\.count) == [4, 4, 4, 4, 4, 4, 1])
        #expect(Set(chunks.joined().map(\.recordName)) == Set((0..<25).map { "n\($0)" }))
        #expect(try replica.load().records.count == 25)
        // One record at a time: more chunks than the handoff has room for.
        var seen = 0
        try replica.load(inChunksOf: 1) { _ in
        } each: {
            seen += $0.count
        }
        #expect(seen == 25)
    }

    @Test func theQueueGoesOutInOrderOneZoneAtATimeWithinItsBudget() throws {
        _ = try replica.saveLocal(row("a"), content: Array("aaaa".utf8))
        _ = try replica.saveLocal(row("w", in: other), content: Array("w".utf8))
        _ = try replica.saveLocal(row("b"), content: Array("bbbbbbbb".utf8))
        // One zone per batch, in the order the changes were made.
        #expect(try batch().map(\.record.recordName) == ["a", "b"])
        // A budget stops the batch (the first change always goes, whatever its size).
        #expect(try batch(budget: 5).map(\.record.recordName) == ["a"])
        #expect(try batch(budget: 1).map(\.record.recordName) == ["a"])
        #expect(try batch(limit: 1).map(\.record.recordName) == ["a"])
        #expect(try replica.pendingCount() == 3)
    }

    @Test func aDeleteStillHeldStopsItsZoneOnly() throws {
        _ = try replica.saveLocal(row("a", tag: "1"), content: Array("a".utf8))
        try replica.deleteLocal(RecordKey(zone: zone, recordName: "a"))
        _ = try replica.saveLocal(row("b"), content: Array("b".utf8))
        _ = try replica.saveLocal(row("w", in: other), content: Array("w".utf8))
        let held = RecordKey(zone: zone, recordName: "a")
        // What comes after a held delete in its zone waits (a freed name, then its next owner).
        #expect(try batch(holding: { $0 == held }).map(\.record.recordName) == ["w"])
        #expect(try batch().map(\.record.recordName) == ["a", "b"])
    }

    @Test func anUploadsAnswerSettlesOnlyWhatItCarried() throws {
        let key = RecordKey(zone: zone, recordName: "a")
        _ = try replica.saveLocal(row("a"), content: Array("first".utf8))
        let sent = try #require(try batch().first)
        // Edited again while the upload was under way: the newer edit stays queued, on
        // top of the tag the server gave the first.
        _ = try replica.saveLocal(row("a"), content: Array("second".utf8))
        try replica.markSaved(key, dirty: sent.record.dirty, as: server("a", body: "first", tag: "t1"))
        let again = try #require(try batch().first)
        #expect(again.content == Array("second".utf8))
        #expect(again.record.changeTag == "t1")
        try replica.markSaved(key, dirty: again.record.dirty, as: server("a", body: "second", tag: "t2"))
        #expect(try replica.pendingCount() == 0)
        #expect(try replica.contentAndTag(of: key)?.0 == Array("second".utf8))
    }

    @Test func theServersPagesNeverOverwriteLocalChanges() throws {
        let key = RecordKey(zone: zone, recordName: "a")
        _ = try replica.saveLocal(row("a"), content: Array("mine".utf8))
        // A page brings someone else's version while ours waits: ours stays.
        var effects = try replica.applyRemote(zone, records: [server("a", body: "theirs", tag: "t9")], deleted: [], token: "z1.1.1.1", scope: .private)
        #expect(effects.updated.isEmpty)
        #expect(try replica.contentAndTag(of: key)?.0 == Array("mine".utf8))
        // Deleted on the server while edited here: the edit is kept, to be created again.
        effects = try replica.applyRemote(zone, records: [], deleted: ["a"], token: "z1.1.1.2", scope: .private)
        #expect(effects.removed.isEmpty)
        #expect(try batch().first?.record.changeTag == nil)
        // Once uploaded, our own change coming back changes nothing…
        let sent = try #require(try batch().first)
        try replica.markSaved(key, dirty: sent.record.dirty, as: server("a", body: "mine", tag: "t10"))
        effects = try replica.applyRemote(zone, records: [server("a", body: "mine", tag: "t10")], deleted: [], token: "z1.1.1.3", scope: .private)
        #expect(effects.updated.isEmpty)
        // … and a later version from elsewhere is taken.
        effects = try replica.applyRemote(zone, records: [server("a", body: "newer", tag: "t11")], deleted: [], token: "z1.1.1.4", scope: .private)
        #expect(effects.updated.map(\.recordName) == ["a"])
        #expect(try replica.contentAndTag(of: key)?.0 == Array("newer".utf8))
        // A clean record deleted on the server goes.
        effects = try replica.applyRemote(zone, records: [], deleted: ["a"], token: "z1.1.1.5", scope: .private)
        #expect(effects.removed == [key])
        #expect(try replica.contentAndTag(of: key) == nil)
    }

    /// What an upload sent is remembered until its answer comes, so that after an answer
    /// lost to a stop the version it left on notesd is known as the mount's own.
    @Test func whatAnUploadSentIsKnownUntilItsAnswerComes() throws {
        let key = RecordKey(zone: zone, recordName: "a")
        _ = try replica.saveLocal(row("a"), content: Array("line 0\n".utf8))
        let sent = try #require(try batch().first)
        let first = [UInt8](repeating: 1, count: 32)
        let second = [UInt8](repeating: 2, count: 32)
        try replica.noteSending([(key, first)])
        // No answer (the mount stopped), an edit, and the next upload: both are known.
        _ = try replica.saveLocal(row("a"), content: Array("line 0\nline 1\n".utf8))
        try replica.noteSending([(key, second)])
        #expect(try replica.sentDigests(of: key) == [first, second])
        // At most the last eight are kept.
        for index in 3...12 { try replica.noteSending([(key, [UInt8](repeating: UInt8(index), count: 32))]) }
        #expect(try replica.sentDigests(of: key).map(\.[0]) == Array(5...12))
        // Once an answer comes, they are forgotten.
        try replica.markSaved(key, dirty: sent.record.dirty, as: server("a", body: "line 0\n", tag: "t1"))
        #expect(try replica.sentDigests(of: key).isEmpty)
    }

    @Test func aRefusedChangeStaysListedWithItsReason() throws {
        let key = RecordKey(zone: zone, recordName: "a")
        _ = try replica.saveLocal(row("a"), content: Array("x".utf8))
        try replica.refuse(key, reason: "Your storage is full.")
        #expect(try replica.waiting().map(\.refusal) == ["Your storage is full."])
        // A new local change clears the old refusal: it is a new attempt.
        _ = try replica.saveLocal(row("a"), content: Array("y".utf8))
        #expect(try replica.waiting().map(\.refusal) == [nil])
    }
}

/// Queue order is not folder-first; an upload must still never send a save into a folder
/// that notesd does not have yet (fsstress, `-s 4`: a note moved into a new folder, the
/// folder renamed, and a batch cut between them by a file still open for writing).
@Suite struct UploadOrderTests {
    @Test func aSaveIntoAFolderNotOnNotesdYetGoesWithThatFolder() throws {
        let fixture = try ReplicaTests()
        let replica = fixture.replica
        func row(_ name: String, type: RecordType = .note, parent: String? = nil, tag: String? = nil) -> ReplicaRecord {
            ReplicaRecord(
                zone: fixture.zone, recordName: name, recordType: type, name: name, parent: parent, size: 0,
                shareID: nil, changeTag: tag, createdAt: 0, modifiedAt: 0, modifiedBy: "alice")
        }
        _ = try replica.saveLocal(row("h1"), content: Array("1".utf8))
        _ = try replica.saveLocal(row("F", type: .folder), content: nil)
        _ = try replica.saveLocal(row("K", parent: "F", tag: "k1"), content: Array("k".utf8))
        _ = try replica.saveLocal(row("h2"), content: Array("2".utf8))
        var renamed = row("F", type: .folder)
        renamed.name = "G"
        _ = try replica.saveLocal(renamed, content: nil)
        let h2 = RecordKey(zone: fixture.zone, recordName: "h2")
        let folder = RecordKey(zone: fixture.zone, recordName: "F")
        func batch(skipping: Set<RecordKey> = [], limit: Int = 400) throws -> [String] {
            try replica.nextBatch(limit: limit, byteBudget: 1 << 30, skipping: skipping, holding: { key, _ in key == h2 }, cost: { content, _ in content?.count ?? 0 })
                .map(\.record.recordName)
        }
        // The queue is h1, K, h2 (held), F: the batch stops at h2 but takes F along.
        #expect(try batch() == ["h1", "K", "F"])
        #expect(try replica.isQueuedCreate(parentOf: RecordKey(zone: fixture.zone, recordName: "K")))
        // A folder that cannot go now holds back what goes into it.
        #expect(try batch(skipping: [folder]) == ["h1"])
        #expect(try batch(limit: 2) == ["h1"])

        // A second note into a second new folder: a cut before it keeps the first's folder.
        _ = try replica.saveLocal(row("F2", type: .folder), content: nil)
        _ = try replica.saveLocal(row("Y", parent: "F2", tag: "y1"), content: Array("y".utf8))
        var renamedAgain = row("F2", type: .folder)
        renamedAgain.name = "G2"
        _ = try replica.saveLocal(renamedAgain, content: nil)
        let second = RecordKey(zone: fixture.zone, recordName: "F2")
        // (h2 still holds the queue: h1, K, then F, F2 and Y come after it.)
        #expect(try batch() == ["h1", "K", "F"])
        // Now h2 is closed, h3 is open, and F is renamed once more (behind h3): the batch
        // h1, K, h2, Y stops at h3 and takes F for K; F2, which Y needs, cannot go, so Y
        // waits, and F stays for K.
        _ = try replica.saveLocal(row("h3"), content: Array("3".utf8))
        var thirdName = row("F", type: .folder)
        thirdName.name = "G3"
        _ = try replica.saveLocal(thirdName, content: nil)
        let h3 = RecordKey(zone: fixture.zone, recordName: "h3")
        #expect(
            try replica.nextBatch(limit: 400, byteBudget: 1 << 30, skipping: [second], holding: { key, _ in key == h3 }, cost: { content, _ in content?.count ?? 0 })
                .map(\.record.recordName) == ["h1", "K", "h2", "F"])
    }

    /// A folder moved here into one that was first moved out of it: notesd must get the
    /// move out first, or it refuses a folder moved into itself.
    @Test func aFolderMovedIntoOneMovedOutOfItGoesAfterThatMove() throws {
        let fixture = try ReplicaTests()
        let replica = fixture.replica
        func folder(_ name: String, parent: String?, tag: String) -> ReplicaRecord {
            ReplicaRecord(
                zone: fixture.zone, recordName: name, recordType: .folder, name: name, parent: parent, size: 0,
                shareID: nil, changeTag: tag, createdAt: 0, modifiedAt: 0, modifiedBy: "alice")
        }
        // On notesd B is inside A. Here B moved to the top, then A into B, then B renamed.
        _ = try replica.saveLocal(folder("B", parent: nil, tag: "b1"), content: nil)
        _ = try replica.saveLocal(folder("A", parent: "B", tag: "a1"), content: nil)
        _ = try replica.saveLocal(fixture.row("h"), content: Array("h".utf8))
        var renamed = folder("B", parent: nil, tag: "b1")
        renamed.name = "B2"
        _ = try replica.saveLocal(renamed, content: nil)
        let held = RecordKey(zone: fixture.zone, recordName: "h")
        let batch = try replica.nextBatch(limit: 400, byteBudget: 1 << 30, skipping: [], holding: { key, _ in key == held }, cost: { content, _ in content?.count ?? 0 })
        // A's move goes with B's (notesd puts B's first: a batch's folders go before what they hold).
        #expect(batch.map(\.record.recordName) == ["A", "B"])
        let saves = batch.map { RecordSave(recordName: $0.record.recordName, recordType: .folder, name: $0.record.name, parent: $0.record.parent, changeTag: $0.record.changeTag) }
        #expect(try RecordRules.ordered(saves).map(\.recordName) == ["B", "A"])
    }
}
