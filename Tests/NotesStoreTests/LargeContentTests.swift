import Foundation
import Logging
import NotesModel
import NotesStoreRules
import PostgresNIO
import Testing

/// Contents of 4 KiB and more are written apart from the modify that uses them, so the
/// modify's transaction holds the writer for milliseconds: the store reads them back as
/// if they were inline, counts them once, and leaves none behind.
@Suite struct LargeContentTests {
    static let large = String(repeating: "0123456789abcdef", count: 1_024)  // 16 KiB

    @Test(arguments: Backend.allCases)
    func largeNotesReadBackThroughEveryPathAndCountOnce(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let body = Self.large + "\u{0}after a NUL"
        let first = try await f.note("big", "big.md", body: body)
        let file = try #require(
            try await f.save([RecordSave(recordName: "pdf", recordType: .file, name: "scan.pdf", bytes: Data(repeating: 7, count: 9_000))]).first)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM contents") == 2)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM records WHERE body IS NOT NULL OR bytes IS NOT NULL") == 0)

        // Changes (both encodings), lookup and the public record all read the same bytes.
        let readInChanges = try await f.all()["big"]?.body == body
        #expect(readInChanges)
        #expect(try await f.all()["pdf"]?.bytes == Data(repeating: 7, count: 9_000))
        let looked = try await f.store.records(["big", "pdf"], in: f.aliceZone, actor: Fixture.alice)
        let readInLookup = looked.first { $0.recordName == "big" }?.body == body
        #expect(readInLookup)
        let json = try await f.store.zoneChangesJSON(f.aliceZone, since: nil, limit: 100, actor: Fixture.alice)
        let decoded = try NotesJSON.decoder().decode(ZoneChanges.self, from: Data(json.json))
        let readInJSON = decoded.records.first { $0.recordName == "big" }?.body == body
        #expect(readInJSON)
        // (and two rows: `StoragePolicy.rowBytes` each)
        #expect(try await f.store.usage(of: Fixture.alice).used == Int64(body.utf8.count + 9_000) + 2 * StoragePolicy.rowBytes)

        // An edit keeps the earlier text as a version; the version reads it back.
        f.clock.advance(by: 1)
        let edited = body + " edited"
        _ = try await f.save([RecordSave(recordName: "big", recordType: .note, name: "big.md", body: edited, changeTag: first.changeTag)])
        let versions = try await f.store.versions(of: "big", in: f.aliceZone, actor: Fixture.alice)
        // (The current state first, then the earlier ones.)
        #expect(versions.map(\.size) == [edited.utf8.count, body.utf8.count])
        let earlierRead = versions.last?.body == body
        #expect(earlierRead)
        #expect(try await f.store.usage(of: Fixture.alice).used == Int64(body.utf8.count + edited.utf8.count + 9_000) + 3 * StoragePolicy.rowBytes)

        // A file's new bytes: its old bytes go (a version keeps no file's bytes).
        _ = try await f.save([RecordSave(recordName: "pdf", recordType: .file, name: "scan.pdf", bytes: Data(repeating: 8, count: 9_000), changeTag: file.changeTag)])
        #expect(try await f.storedCount("SELECT COUNT(*) FROM contents") == 3)

        // Deleted, then restored from the trash: the same text comes back.
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "big")]), actor: Fixture.alice)
        _ = try await f.store.restoreFromTrash("big", in: f.aliceZone, parent: nil, name: nil, actor: Fixture.alice)
        let restored = try await f.all()["big"]?.body == edited
        #expect(restored)

        // Deleting the zone's records and letting their history go leaves no content behind.
        let current = try await f.all()
        _ = try await f.store.modify(
            ModifyRequest(zone: f.aliceZone, deletes: current.keys.sorted().map { RecordDelete(recordName: $0) }), actor: Fixture.alice)
        f.clock.advance(by: 400 * 86_400)
        _ = try await f.store.purgeTrash(maxRecords: 100)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM versions") == 0)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM contents") == 0)
        #expect(try await f.store.usage(of: Fixture.alice).used == 0)
    }

    @Test(arguments: Backend.allCases)
    func aRefusedBatchLeavesNoContentBehind(_ backend: Backend) async throws {
        let f = try await Fixture(backend, storage: StoragePolicy(quotaBytes: 100_000))
        let kept = try await f.note("kept", "kept.md", body: Self.large)
        let before = try await f.store.usage(of: Fixture.alice).used

        // A stale tag on the last item refuses the whole batch, its large contents too.
        let stale =
            (0..<8).map { RecordSave(recordName: "n\($0)", recordType: .note, name: "n\($0).md", body: Self.large + "\($0)") }
            + [RecordSave(recordName: "kept", recordType: .note, name: "kept.md", body: Self.large + "!", changeTag: "stale")]
        await f.expectFailure(.serverRecordChanged) { try await f.save(stale) }
        #expect(try await f.storedCount("SELECT COUNT(*) FROM contents") == 1)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM staged_contents") == 0)
        #expect(try await f.store.usage(of: Fixture.alice).used == before)

        // Past the quota: refused with the quota's reason, nothing left behind either.
        let tooMuch = (0..<8).map { RecordSave(recordName: "q\($0)", recordType: .note, name: "q\($0).md", body: Self.large + "\($0)") }
        await f.expectFailure(.quotaExceeded) { try await f.save(tooMuch) }
        #expect(try await f.storedCount("SELECT COUNT(*) FROM contents") == 1)
        #expect(try await f.store.usage(of: Fixture.alice).used == before)

        // Someone who may only read writes nothing at all, and hears why.
        _ = try await f.shareWithBob("kept", permission: .readOnly)
        await f.expectFailure(.permissionFailure) {
            try await f.save([RecordSave(recordName: "kept", recordType: .note, name: "kept.md", body: Self.large + "?", changeTag: kept.changeTag)], as: Fixture.bob)
        }
        #expect(try await f.storedCount("SELECT COUNT(*) FROM contents") == 1)
        let unchanged = try await f.all()["kept"]?.body == Self.large
        #expect(unchanged)
    }

    @Test(arguments: Backend.allCases)
    func contentsAModifyNeverCameForGoWithTheRetentionPass(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.note("kept", "kept.md", body: Self.large)
        // What notesd stopping between a batch's contents and its transaction leaves.
        try await f.playOlderVersion("INSERT INTO contents (id, owner, body, size) VALUES (999, 'alice', 'orphan', 6)", [])
        try await f.playOlderVersion("INSERT INTO staged_contents (content_id, staged_at) VALUES (999, \(f.clock.now.timeIntervalSince1970))", [])
        _ = try await f.store.pruneVersions(maxRecords: 10)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM contents") == 2, "a modify may still be on its way")
        f.clock.advance(by: 2 * 3_600)
        _ = try await f.store.pruneVersions(maxRecords: 10)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM contents") == 1)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM staged_contents") == 0)
        let unchanged = try await f.all()["kept"]?.body == Self.large
        #expect(unchanged)
    }

    /// Contents were counted toward usage as they were written, so each group's
    /// transaction took the owner's usage row until its commit; the owner's modify, which
    /// holds the change counter that every save on the database needs, then waited for it.
    /// Now a group's transaction holds nothing a modify needs.
    @Test func aModifyDoesNotWaitForTheOwnersContentsStillBeingWritten() async throws {
        let f = try await Fixture(.postgres)
        try await f.note("first", "first.md", body: Self.large)
        let logger = Logger(label: "test")
        try await f.pool!.database.client.withConnection { connection in
            // Given one of alice's groups of contents being written, its transaction open
            try await connection.query("BEGIN", logger: logger)
            try await connection.query("INSERT INTO contents (owner, body, size) VALUES ('alice', '\\x00'::bytea, 1)", logger: logger)
            // When alice (and bob) save large notes meanwhile
            let finished = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    (try? await f.note("second", "second.md", body: Self.large)) != nil
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(60))
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            try await connection.query("ROLLBACK", logger: logger)
            // Then the save went through while that transaction stayed open
            #expect(finished, "alice's save waited for her contents' open transaction")
        }
        #expect(try await f.store.usage(of: Fixture.alice).used == Int64(2 * Self.large.utf8.count) + 2 * StoragePolicy.rowBytes)
    }

    @Test func aBatchsContentsGoInTransactionsOfAtMostOneMebibyte() {
        let saves =
            (0..<400).map { RecordSave(recordName: "n\($0)", recordType: .note, name: "n\($0).md", body: String(repeating: "x", count: 40_000)) }
            + [RecordSave(recordName: "small", recordType: .note, name: "small.md", body: "a line")]
        let groups = SeparateContents.groups(saves)
        #expect(groups.flatMap { $0 }.count == 400, "every large content, and the small note inline")
        for group in groups {
            #expect(group.reduce(0) { $0 + saves[$1].contentSize } <= SeparateContents.bytesPerTransaction)
        }
        #expect(!SeparateContents.isSmall(saves, deletes: 0))
    }
}
