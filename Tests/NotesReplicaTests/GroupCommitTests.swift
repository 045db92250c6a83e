import Foundation
import NotesModel
@testable import NotesReplica
import Synchronization
import Testing

/// The replica's writer: one order for every write, commits shared by whatever is
/// queued together, a failing write alone in its failure, and a `kill -9` that loses
/// exactly what was not committed yet.
@Suite struct GroupCommitTests {
    let path: String

    init() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("group-commit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        path = folder.appendingPathComponent("alice.replica.sqlite").path
    }

    func row(_ name: String) -> ReplicaRecord {
        ReplicaRecord(
            zone: ZoneID(owner: "alice", name: "_defaultZone"), recordName: name, recordType: .note, name: "\(name).md", parent: nil, size: 0,
            shareID: nil, changeTag: nil, createdAt: 0, modifiedAt: 0, modifiedBy: "alice")
    }

    @Test func queuedWritesRunInOrderAndEveryReadSeesThem() throws {
        let replica = try Replica(path: path, commitsInBackground: false)
        let key = row("a").key
        _ = replica.saveLocalLater(row("a"), content: Array("one".utf8), onFailure: { _ in })
        replica.deleteLocalLater(key, onFailure: { _ in })
        let last = replica.saveLocalLater(row("a"), content: Array("two".utf8), onFailure: nil)
        #expect(!replica.hasSettled(last), "nothing commits until someone reads or waits")
        #expect(try replica.contentAndTag(of: key)?.0 == Array("two".utf8))
        #expect(replica.hasSettled(last))
        #expect(replica.writer.transactions == 1, "three writes queued together, one commit")
    }

    @Test func writersOnManyThreadsShareCommits() throws {
        // Every thread queues its writes, then all wait for theirs at once (as closes
        // on several FUSE threads do): the first to wait commits them all, in one
        // transaction, and the others find theirs done. (Writes queued while a commit
        // runs go into the next one; which ones that is depends on timing, so the test
        // queues first and waits after.)
        let replica = try Replica(path: path, commitsInBackground: false)
        let threads = 8
        let each = 40
        let tickets = Mutex<[WriteTicket]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let mine = (0..<each).map { index in
                replica.saveLocalLater(row("t\(thread)-\(index)"), content: Array("x".utf8), onFailure: nil)
            }
            tickets.withLock { $0 += mine }
        }
        let all = tickets.withLock { $0 }
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for ticket in all[(thread * each)..<((thread + 1) * each)] { try? replica.wait(for: ticket) }
        }
        #expect(try replica.pendingCount() == threads * each)
        #expect(replica.writer.transactions == 1, "\(replica.writer.transactions) commits for \(threads * each) writes queued together")
    }

    @Test func aWriteThatFailsDoesNotTakeTheOthersInItsCommitDown() throws {
        struct Refused: Error {}
        let replica = try Replica(path: path, commitsInBackground: false)
        let told = DispatchSemaphore(value: 0)
        _ = replica.saveLocalLater(row("before"), content: [], onFailure: { _ in })
        let bad = replica.writeLater(
            "fail on purpose",
            onFailure: { error in
                if error.message.contains("fail on purpose") { told.signal() }
            }
        ) { _ in throw Refused() }
        let after = replica.saveLocalLater(row("after"), content: [], onFailure: nil)
        try replica.wait(for: after)
        #expect(told.wait(timeout: .now() + 60) == .success, "the failure reached onFailure")
        // Settled once onFailure has returned (it signalled just before that).
        let deadline = Date().addingTimeInterval(60)
        while !replica.hasSettled(bad) && Date() < deadline { usleep(1_000) }
        #expect(replica.hasSettled(bad))
        #expect(try replica.contentAndTag(of: row("before").key) != nil)
        #expect(try replica.contentAndTag(of: row("after").key) != nil)
    }

    @Test func killNineLosesExactlyWhatWasNotCommitted() throws {
        let replica = try Replica(path: path, commitsInBackground: false)
        let closed = replica.saveLocalLater(row("closed"), content: Array("kept".utf8), onFailure: nil)
        try replica.wait(for: closed)
        replica.deleteLocalLater(row("closed").key, onFailure: { _ in })
        replica.abandonQueuedWrites()
        let again = try Replica(path: path)
        #expect(try again.contentAndTag(of: row("closed").key)?.0 == Array("kept".utf8))
        #expect(try again.pendingCount() == 1)
    }
}
