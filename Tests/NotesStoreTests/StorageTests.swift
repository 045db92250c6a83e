import Foundation
import NotesModel
import Testing

/// Quotas and version retention, on the store's injected clock (no waiting).
@Suite struct StorageTests {
    @Test(arguments: Backend.allCases)
    func aFullAccountRefusesGrowthButMayAlwaysFreeSpace(_ backend: Backend) async throws {
        // (Each record and each version also counts its row: `row`.)
        let row = StoragePolicy.rowBytes
        let f = try await Fixture(backend, storage: StoragePolicy(quotaBytes: 1_000 + 2 * row))
        let first = try await f.note("a", "a.md", body: String(repeating: "a", count: 400))
        #expect(try await f.store.usage(of: Fixture.alice).used == 400 + row)
        // A save keeps the previous text as a version: 400 + 500 now.
        f.clock.advance(by: 1)
        let second = try #require(
            try await f.save([RecordSave(recordName: "a", recordType: .note, name: "a.md", body: String(repeating: "b", count: 500), changeTag: first.changeTag)]).first)
        #expect(try await f.store.usage(of: Fixture.alice).used == 900 + 2 * row)
        let before = try await f.all()

        // Growing past the quota: refused whole, nothing saved, a sentence that says what to do.
        do {
            try await f.note("big", "big.md", body: String(repeating: "c", count: 200))
            Issue.record("a save past the quota went through")
        } catch let error as NotesError {
            #expect(error.code == .quotaExceeded)
            #expect(error.message.contains("storage is full"), "\(error.message)")
        }
        #expect(try await f.all() == before)
        #expect(try await f.store.usage(of: Fixture.alice).used == 900 + 2 * row)

        // A participant's writes count for the owner and are refused the same way.
        _ = try await f.shareWithBob("a", permission: .readWrite)
        let shared = try #require(try await f.all(as: Fixture.bob)["a"])
        #expect(shared.body == String(repeating: "b", count: 500))
        _ = second
        await f.expectFailure(.quotaExceeded) {
            try await f.save([RecordSave(recordName: "a", recordType: .note, name: "a.md", body: String(repeating: "d", count: 600), changeTag: shared.changeTag)], as: Fixture.bob)
        }
        // Bob's own account is not touched.
        #expect(try await f.store.usage(of: Fixture.bob).used == 0)

        // Deleting frees the record's bytes (its last text is kept as a version) and
        // always goes through, even over the quota.
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "a")]), actor: Fixture.alice)
        #expect(try await f.store.usage(of: Fixture.alice).used == 900 + 2 * row)
        // Versions count until retention lets them go.
        f.clock.advance(by: 31 * 86_400)
        try await f.store.pruneVersions(maxRecords: 10)
        let versions = try await f.store.versions(of: "a", in: f.aliceZone, actor: Fixture.alice)
        #expect(try await f.store.usage(of: Fixture.alice).used == 500 + row, "the newest version stays: \(versions.map(\.size))")
    }

    @Test(arguments: Backend.allCases)
    func retentionKeepsEveryVersionForAMonthThenOneADayThenOneAWeek(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        // Saves every 6 hours for 400 days: 1,600 versions.
        var record = try await f.note("diary", "diary.md", body: "0")
        let start = f.clock.now
        for index in 1...1_600 {
            f.clock.advance(by: 6 * 3_600)
            record = try #require(try await f.save([RecordSave(recordName: "diary", recordType: .note, name: "diary.md", body: "\(index)", changeTag: record.changeTag)]).first)
        }
        let all = try await f.store.versions(of: "diary", in: f.aliceZone, actor: Fixture.alice)
        #expect(all.count == 1_601, "the record itself and 1,600 earlier versions")
        var removed = 0
        while true {
            let batch = try await f.store.pruneVersions(maxRecords: 1)
            removed += batch
            if batch == 0 { break }
        }
        let kept = try await f.store.versions(of: "diary", in: f.aliceZone, actor: Fixture.alice)
        #expect(kept.count + removed == 1_601)
        let now = f.clock.now
        let ages = kept.map { now.timeIntervalSince($0.modifiedAt) / 86_400 }
        // The last 30 days: every save (4 a day), all kept (29.9: clear of the boundary).
        #expect(ages.filter { $0 < 29.9 }.count == all.filter { now.timeIntervalSince($0.modifiedAt) / 86_400 < 29.9 }.count)
        #expect(ages.filter { $0 < 29.9 }.count >= 119)
        // From 30 days to a year: at most one a day.
        let daily = kept.filter { (30..<365).contains(now.timeIntervalSince($0.modifiedAt) / 86_400) }
        #expect(Set(daily.map { Int($0.modifiedAt.timeIntervalSince1970 / 86_400) }).count == daily.count)
        #expect(daily.count >= 330)
        // Older: at most one a week.
        let weekly = kept.filter { now.timeIntervalSince($0.modifiedAt) / 86_400 >= 365 }
        #expect(Set(weekly.map { Int($0.modifiedAt.timeIntervalSince1970 / 604_800) }).count == weekly.count)
        #expect(!weekly.isEmpty && weekly.count <= 6)
        // The record itself is untouched, and usage went down with the versions.
        #expect(try await f.store.records(["diary"], in: f.aliceZone, actor: Fixture.alice).first?.body == "1600")
        // Nothing from before the first save. (Times are stored as seconds since 1970 in a
        // Double, which may come back a fraction of a microsecond off the clock's Date: the
        // first save, kept when it is alone in its week, once read as earlier than `start`.)
        #expect(kept.allSatisfy { $0.modifiedAt.timeIntervalSince(start) > -0.001 })
        // A second pass finds nothing more to do.
        #expect(try await f.store.pruneVersions(maxRecords: 100) == 0)
    }

    @Test func theNewestEarlierVersionIsAlwaysKept() {
        let rule = VersionRetention(keepAllDays: 30, keepDailyDays: 365)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let old = [400.0, 401.0, 402.0].map { now.addingTimeInterval(-$0 * 86_400) }
        // Three versions more than a year old in different weeks or the same one: the newest stays.
        #expect(!rule.expired(old, now: now).contains(0))
        // Dates far out of range do not trap.
        #expect(!rule.expired([now.addingTimeInterval(-1e30), .distantPast, now, now.addingTimeInterval(1e30)], now: now).contains(3))
        #expect(StoragePolicy.parseSize("10G") == .some(10 << 30))
        #expect(StoragePolicy.parseSize("500MiB") == .some(500 << 20))
        #expect(StoragePolicy.parseSize("none") == .some(nil))
        #expect(StoragePolicy.parseSize("-5") == nil)
        #expect(StoragePolicy.parseSize("9999999999T") == nil)
    }

    /// Tombstones were kept for ever and cost nobody's quota. After 90 days on the
    /// store's clock they go; a copy from before the deletion is told to start over, one
    /// that had seen it goes on, and a fetch from scratch lists what is there.
    @Test(arguments: Backend.allCases)
    func tombstonesGoAfterNinetyDaysAndOlderCopiesStartOver(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let gone = try await f.note("gone", "gone.md")
        try await f.note("kept", "kept.md")
        let before = try await f.store.zoneChanges(f.aliceZone, since: nil, limit: 100, actor: Fixture.alice)
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "gone", changeTag: gone.changeTag)]), actor: Fixture.alice)
        // A retention pass right away marks the counter and finds nothing old enough.
        #expect(try await f.store.pruneTombstones() == 0)
        let seen = try await f.store.zoneChanges(f.aliceZone, since: before.changeToken, limit: 100, actor: Fixture.alice)
        #expect(seen.deleted == ["gone"])
        // When 91 days pass and the retention pass runs again
        f.clock.advance(by: 91 * 86_400)
        #expect(try await f.store.pruneTombstones() == 1)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM tombstones") == 0)
        // Then a copy from before the deletion starts over, in both encodings
        await f.expectFailure(.changeTokenExpired) { _ = try await f.store.zoneChanges(f.aliceZone, since: before.changeToken, limit: 100, actor: Fixture.alice) }
        await f.expectFailure(.changeTokenExpired) { _ = try await f.store.zoneChangesJSON(f.aliceZone, since: before.changeToken, limit: 100, actor: Fixture.alice) }
        // while one that had seen the deletion goes on
        let later = try await f.store.zoneChanges(f.aliceZone, since: seen.changeToken, limit: 100, actor: Fixture.alice)
        #expect(later.records.isEmpty && later.deleted.isEmpty)
        // and from scratch the zone is what is there
        #expect(try await f.all().keys.sorted() == ["kept"])
        // A later pass has nothing left to do, and a new deletion is kept its 90 days.
        _ = try await f.store.modify(
            ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "kept", changeTag: try await f.all()["kept"]?.changeTag)]), actor: Fixture.alice)
        #expect(try await f.store.pruneTombstones() == 0)
        #expect(try await f.storedCount("SELECT COUNT(*) FROM tombstones") == 1)
    }

    /// Zones, shares and tokens cost no bytes of the quota, so an account could make them
    /// without end: each has a count per account, and giving one up makes room again.
    @Test(arguments: Backend.allCases)
    func zonesSharesAndTokensHaveACountPerAccount(_ backend: Backend) async throws {
        let f = try await Fixture(backend, storage: StoragePolicy(zonesPerAccount: 3, sharesPerAccount: 2, tokensPerAccount: 2))
        // Zones: alice has her default one; two more fit, the fourth does not.
        for name in ["two", "three"] { _ = try await f.store.createZone(ZoneID(owner: Fixture.alice, name: name), actor: Fixture.alice) }
        await f.expectFailure(.quotaExceeded) { _ = try await f.store.createZone(ZoneID(owner: Fixture.alice, name: "four"), actor: Fixture.alice) }
        try await f.store.deleteZone(ZoneID(owner: Fixture.alice, name: "three"), actor: Fixture.alice)
        _ = try await f.store.createZone(ZoneID(owner: Fixture.alice, name: "four"), actor: Fixture.alice)
        // Shares: two, then the third is refused until one stops.
        for name in ["a", "b", "c"] { try await f.note(name, "\(name).md") }
        let first = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "a"), actor: Fixture.alice)
        _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "b"), actor: Fixture.alice)
        await f.expectFailure(.quotaExceeded) { _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "c"), actor: Fixture.alice) }
        try await f.store.stopShare(id: first.id, actor: Fixture.alice)
        _ = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "c"), actor: Fixture.alice)
        // Tokens: live ones count; one that expired makes room.
        _ = try await f.store.issueToken(for: Fixture.bob, lifetime: 60, label: nil)
        _ = try await f.store.issueToken(for: Fixture.bob, lifetime: nil, label: nil)
        await f.expectFailure(.quotaExceeded) { _ = try await f.store.issueToken(for: Fixture.bob, lifetime: nil, label: nil) }
        f.clock.advance(by: 61)
        _ = try await f.store.issueToken(for: Fixture.bob, lifetime: nil, label: nil)
        // (another account's count is its own)
        _ = try await f.store.createZone(ZoneID(owner: Fixture.bob, name: "bobs"), actor: Fixture.bob)
    }
}
