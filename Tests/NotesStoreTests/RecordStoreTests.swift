import Foundation
import NotesModel
import Testing

/// The record half of the conformance suite: every backend must pass it unchanged.
@Suite struct RecordStoreTests {
    /// Names may no longer hold control characters or bidirectional controls;
    /// a name stored before the rule stays readable, and editable under that name.
    @Test(arguments: Backend.allCases)
    func invisibleCharactersAreRefusedInNewNamesOnly(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        for name in ["a\nb.md", "tab\there.md", "esc\u{1B}[31m.md", "evil\u{202E}dm.exe", "x\u{2066}y.md", "del\u{7F}.md"] {
            await f.expectFailure(.invalidArguments) { try await f.note("n-\(name.utf8.count)", name) }
        }
        // Given a name stored by an older notesd
        let old = try await f.note("old", "plain.md", body: "one")
        try await f.playOlderVersion("UPDATE records SET name = ? WHERE record_name = 'old'", ["line\nbreak.md"])
        // Then it reads back, takes a new body under its name, and can be renamed to a visible one
        #expect(try await f.all()["old"]?.name == "line\nbreak.md")
        let edited = try await f.save([RecordSave(recordName: "old", recordType: .note, name: "line\nbreak.md", body: "two", changeTag: old.changeTag)])[0]
        await f.expectFailure(.invalidArguments) {
            try await f.save([RecordSave(recordName: "old", recordType: .note, name: "still\u{202E}bad.md", body: "two", changeTag: edited.changeTag)])
        }
        try await f.save([RecordSave(recordName: "old", recordType: .note, name: "line break.md", body: "two", changeTag: edited.changeTag)])
        #expect(try await f.all()["old"]?.name == "line break.md")
    }

    /// A page of changes had a record count but no byte bound (2,000 × 16 MiB).
    @Test(arguments: Backend.allCases)
    func aPageOfChangesStopsPastItsByteBound(_ backend: Backend) async throws {
        // Given four notes of 3 MiB (12 MiB, more than a page's 8 MiB)
        let f = try await Fixture(backend)
        let big = String(repeating: "x", count: 3 << 20)
        for index in 0..<4 { try await f.note("big\(index)", "big\(index).md", body: big) }
        // When a client pages through the zone, both ways the server writes pages
        let first = try await f.store.zoneChanges(f.aliceZone, since: nil, limit: 2_000, actor: Fixture.alice)
        let firstJSON = try await f.store.zoneChangesJSON(f.aliceZone, since: nil, limit: 2_000, actor: Fixture.alice)
        // Then the first page stops past 8 MiB, says more is coming, and the next has the rest
        #expect(first.records.count == 3 && first.moreComing)
        #expect(firstJSON.moreComing && firstJSON.changeToken == first.changeToken && firstJSON.json.count < 10 << 20)
        let second = try await f.store.zoneChanges(f.aliceZone, since: first.changeToken, limit: 2_000, actor: Fixture.alice)
        #expect(second.records.map(\.recordName) == ["big3"] && !second.moreComing)
        #expect(try await f.all().count == 4)
    }

    /// The exerciser's finding: a note whose text holds a NUL (a file written with a hole)
    /// was stored cut at the NUL, so notesd kept an empty note.
    @Test(arguments: Backend.allCases)
    func aNoteWithNULBytesKeepsEveryByte(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let text = "ab\u{0}\u{0}cd\u{0}é\n"
        let saved = try await f.note("n", "n.md", body: text)
        #expect(try await f.store.records(["n"], in: f.aliceZone, actor: Fixture.alice).first?.body == text)
        #expect(try await f.all()["n"]?.body == text)
        let page = try await f.store.zoneChangesJSON(f.aliceZone, since: nil, limit: 100, actor: Fixture.alice)
        #expect(String(decoding: page.json, as: UTF8.self).contains(#"ab\u0000\u0000cd\u0000é\n"#))
        try await f.save([RecordSave(recordName: "n", recordType: .note, name: "n.md", body: "next", changeTag: saved.changeTag)])
        let versions = try await f.store.versions(of: "n", in: f.aliceZone, actor: Fixture.alice)
        #expect(versions.map(\.body) == ["next", text])
        #expect(versions.last?.size == text.utf8.count)
    }

    @Test(arguments: Backend.allCases)
    func createUpdateAndStaleTag(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let created = try await f.note("n1", "plan.md", body: "v1")
        let updated = try await f.save([RecordSave(recordName: "n1", recordType: .note, name: "plan.md", body: "v2", changeTag: created.changeTag)])[0]
        #expect(updated.changeTag != created.changeTag)
        #expect(updated.modifiedBy == Fixture.alice)

        // Given a stale tag, when saving, then serverRecordChanged carries the server's record and nothing changes.
        do {
            _ = try await f.save([RecordSave(recordName: "n1", recordType: .note, name: "plan.md", body: "lost?", changeTag: created.changeTag)])
            Issue.record("a stale change tag was accepted")
        } catch let error as NotesError {
            #expect(error.code == .serverRecordChanged)
            #expect(error.serverRecord?.body == "v2")
            #expect(error.serverRecord?.changeTag == updated.changeTag)
        }
        // Creating over an existing record (no tag) is also a conflict, never an overwrite.
        await f.expectFailure(.serverRecordChanged) { try await f.note("n1", "plan.md", body: "overwrite") }
        #expect(try await f.all()["n1"]?.body == "v2")
    }

    @Test(arguments: Backend.allCases)
    func batchIsAtomic(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.note("taken", "taken.md")
        let saves =
            (0..<5).map { RecordSave(recordName: "r\($0)", recordType: .note, name: "\($0).md", body: "x") }
            + [RecordSave(recordName: "dup", recordType: .note, name: "taken.md", body: "clash")]
        do {
            _ = try await f.save(saves)
            Issue.record("a batch with a name clash was applied")
        } catch let error as NotesError {
            #expect(error.code == .constraintViolation)
            #expect(error.itemErrors.count == 6)
            #expect(error.itemErrors.filter { $0.code == .batchRequestFailed }.count == 5)
            #expect(error.itemErrors.first { $0.recordName == "dup" }?.code == .constraintViolation)
        }
        #expect(try await f.all().keys.sorted() == ["taken"])

        let full = (0..<Limits.maxBatchItems).map { RecordSave(recordName: "b\($0)", recordType: .note, name: "b\($0).md", body: "x") }
        #expect(try await f.save(full).count == 400)
        let tooMany = (0...Limits.maxBatchItems).map { RecordSave(recordName: "c\($0)", recordType: .note, name: "c\($0).md", body: "x") }
        await f.expectFailure(.limitExceeded) { try await f.save(tooMany) }
        #expect(try await f.all().count == 401)
    }

    /// PostgreSQL writes a batch's saves together: a name taken in the middle of a batch
    /// must still be reported on the save that took it, and nothing of the batch stay.
    @Test(arguments: Backend.allCases)
    func aNameTakenInTheMiddleOfABatchIsReportedOnItsSave(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.note("taken", "taken.md")
        let before = try await f.save((0..<6).map { RecordSave(recordName: "r\($0)", recordType: .note, name: "\($0).md", body: "one") })
        var saves = before.map { RecordSave(recordName: $0.recordName, recordType: .note, name: $0.name, body: "two", changeTag: $0.changeTag) }
        saves[2].name = "taken.md"
        saves.append(RecordSave(recordName: "new", recordType: .note, name: "new.md", body: "new"))
        do {
            _ = try await f.save(saves)
            Issue.record("a batch with a name clash was applied")
        } catch let error as NotesError {
            #expect(error.code == .constraintViolation)
            #expect(error.itemErrors.first { $0.code != .batchRequestFailed }?.recordName == "r2")
            #expect(error.itemErrors.filter { $0.code == .batchRequestFailed }.count == 6)
        }
        let after = try await f.all()
        #expect(after["new"] == nil && after.values.filter { $0.body == "two" }.isEmpty)
        // (a record's versions begin with its current state)
        #expect(try await f.store.versions(of: "r0", in: f.aliceZone, actor: Fixture.alice, limit: 10, before: nil).versions.map(\.body) == ["one"])
    }

    /// A batch of updates and creations written together keeps each record's previous
    /// state as its version and stores each content as it was sent: empty text, none,
    /// a file's bytes, a folder and the notes created inside it in the same batch.
    @Test(arguments: Backend.allCases)
    func aBatchWrittenTogetherKeepsEveryVersionAndContent(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let first = try await f.save(
            [
                RecordSave(recordName: "text", recordType: .note, name: "text.md", body: "first"),
                RecordSave(recordName: "file", recordType: .file, name: "file.bin", bytes: Data([1, 2, 3])),
            ])
        let tags = Dictionary(uniqueKeysWithValues: first.map { ($0.recordName, $0.changeTag) })
        let saved = try await f.save(
            [
                RecordSave(recordName: "text", recordType: .note, name: "renamed.md", body: "", changeTag: tags["text"]),
                RecordSave(recordName: "file", recordType: .file, name: "file.bin", bytes: Data([0, 255]), changeTag: tags["file"]),
                RecordSave(recordName: "folder", recordType: .folder, name: "folder"),
                RecordSave(recordName: "inside", recordType: .note, name: "inside.md", parent: "folder", body: "in"),
            ])
        #expect(saved.map(\.recordName) == ["text", "file", "folder", "inside"])
        let all = try await f.all()
        #expect(all["text"]?.body == "" && all["text"]?.name == "renamed.md")
        #expect(all["file"]?.bytes == Data([0, 255]) && all["file"]?.body == nil)
        #expect(all["folder"]?.recordType == .folder && all["folder"]?.body == nil && all["folder"]?.bytes == nil)
        #expect(all["inside"]?.parent == "folder" && all["inside"]?.body == "in")
        // (four records and two versions, `StoragePolicy.rowBytes` each)
        #expect(try await f.store.usage(of: Fixture.alice).used == 0 + 2 + 2 + 5 + 6 * StoragePolicy.rowBytes)
        let versions = try await f.store.versions(of: "text", in: f.aliceZone, actor: Fixture.alice, limit: 10, before: nil).versions
        // (a record's versions begin with its current state)
        #expect(versions.map(\.body) == ["", "first"] && versions.map(\.name) == ["renamed.md", "text.md"])
        #expect(try await f.store.versions(of: "file", in: f.aliceZone, actor: Fixture.alice, limit: 10, before: nil).versions.map(\.size) == [2, 3])
        // and the saved change tags are the ones the next save must name
        let again = try await f.save(
            saved.filter { $0.recordType == .note }.map {
                RecordSave(recordName: $0.recordName, recordType: .note, name: $0.name, parent: $0.parent, body: "3", changeTag: $0.changeTag)
            })
        #expect(again.count == 2)
        // and usage counted each text once: the records' 1 + 2 + 1 bytes, the versions' "first" and "in"
        // (a file's kept version holds no bytes)
        #expect(try await f.store.usage(of: Fixture.alice).used == 4 + 7 + 8 * StoragePolicy.rowBytes)
    }

    @Test(arguments: Backend.allCases)
    func badInputChangesNothing(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.folder("f", "Folder")
        try await f.folder("g", "Inner", parent: "f")
        let before = try await f.all()
        for name in ["a/b", "..", "a\u{0}b", String(repeating: "n", count: 10_000), ""] {
            await f.expectFailure(.invalidArguments) { try await f.note("x", name) }
            await f.expectFailure(.invalidArguments) { try await f.note(name, "ok.md") }
        }
        await f.expectFailure(.limitExceeded) { try await f.note("big", "big.md", body: String(repeating: "a", count: Limits.maxBodyBytes + 1)) }
        // A parent in another zone does not exist in this one.
        _ = try await f.store.createZone(ZoneID(owner: Fixture.alice, name: "Work"), actor: Fixture.alice)
        try await f.folder("w", "W", in: ZoneID(owner: Fixture.alice, name: "Work"))
        await f.expectFailure(.referenceViolation) { try await f.note("x", "x.md", parent: "w") }
        // A folder cannot move into its own descendant, nor a note hold records.
        let folder = try #require(before["f"])
        await f.expectFailure(.invalidArguments) {
            try await f.save([RecordSave(recordName: "f", recordType: .folder, name: "Folder", parent: "g", changeTag: folder.changeTag)])
        }
        try await f.note("n", "n.md")
        await f.expectFailure(.invalidArguments) { try await f.note("y", "y.md", parent: "n") }
        // A non-empty folder cannot be deleted alone; with its content it can.
        await f.expectFailure(.folderNotEmpty) {
            _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "f")]), actor: Fixture.alice)
        }
        let after = try await f.all()
        #expect(after["f"] == before["f"] && after["g"] == before["g"])
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "f"), RecordDelete(recordName: "g")]), actor: Fixture.alice)
        #expect(try await f.all().keys.sorted() == ["n"])
    }

    /// A mount that moved a note out of a folder and then removed the folder sends both
    /// in one operation: the folder goes once the saves have emptied it (deletes are
    /// applied first otherwise, and the folder came back under fsstress).
    @Test(arguments: Backend.allCases)
    func aFolderEmptiedByTheSameOperationsSavesIsDeletedAfterThem(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.folder("f2", "F2")
        try await f.folder("g", "G")
        let k2 = try await f.note("k2", "k2.md", parent: "f2")
        let moveOut = RecordSave(recordName: "k2", recordType: .note, name: "k2.md", parent: "g", body: "text", changeTag: k2.changeTag)
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, saves: [moveOut], deletes: [RecordDelete(recordName: "f2")]), actor: Fixture.alice)
        var all = try await f.all()
        #expect(all["f2"] == nil && all["k2"]?.parent == "g")
        // A save into a folder the same operation deletes finds it gone, and nothing happens.
        let moved = try #require(all["k2"])
        try await f.folder("f3", "F3")
        let moveIn = RecordSave(recordName: "k2", recordType: .note, name: "k2.md", parent: "f3", body: "text", changeTag: moved.changeTag)
        await f.expectFailure(.referenceViolation) {
            _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, saves: [moveIn], deletes: [RecordDelete(recordName: "f3")]), actor: Fixture.alice)
        }
        all = try await f.all()
        #expect(all["f3"] != nil && all["k2"]?.parent == "g")
        // A note left behind keeps it too.
        try await f.note("k3", "k3.md", parent: "f3")
        let k4 = try await f.note("k4", "k4.md", parent: "f3")
        await f.expectFailure(.folderNotEmpty) {
            let away = RecordSave(recordName: "k4", recordType: .note, name: "k4.md", parent: "g", body: "text", changeTag: k4.changeTag)
            _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, saves: [away], deletes: [RecordDelete(recordName: "f3")]), actor: Fixture.alice)
        }
        #expect(try await f.all()["k4"]?.parent == "f3")
    }

    @Test(arguments: Backend.allCases)
    func changePagesAsJSONAreThePagesAsValues(_ backend: Backend) async throws {
        // Given notes with every kind of text, a file, folders, deletes, moves and a share
        let f = try await Fixture(backend)
        try await f.folder("work", "Work")
        try await f.folder("sub", "Sub \"quoted\"", parent: "work")
        try await f.save(
            (0..<9).map {
                RecordSave(
                    recordName: "n\($0)", recordType: .note, name: "\($0) é.md", parent: $0 % 2 == 0 ? "sub" : nil,
                    body: "line \($0)\n\t\"quote\" \\ back \u{1} 日本 🎉 " + String(repeating: "x", count: $0 * 7))
            })
        try await f.save([RecordSave(recordName: "pic", recordType: .file, name: "pic.png", bytes: Data([0, 1, 2, 250, 255]))])
        try await f.note("empty", "empty.md", body: "")
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "n1"), RecordDelete(recordName: "n3")]), actor: Fixture.alice)
        try await f.note("n1", "back again.md", body: "again")
        let share = try await f.store.createShare(
            NewShare(zone: f.aliceZone, rootRecordName: "work", participants: [Invitee(name: Fixture.bob, permission: .readWrite)]), actor: Fixture.alice)
        _ = try await f.store.acceptShare(urlToken: share.urlToken, actor: Fixture.bob)

        // Then for the owner and the participant, page by page, the JSON says what the values say
        for actor in [Fixture.alice, Fixture.bob] {
            for limit in [1, 3, 7, 100] {
                var token: String?
                var pages = 0
                while true {
                    let values = try await f.store.zoneChanges(f.aliceZone, since: token, limit: limit, actor: actor)
                    let encoded = try await f.store.zoneChangesJSON(f.aliceZone, since: token, limit: limit, actor: actor)
                    let decoded = try NotesJSON.decoder().decode(ZoneChanges.self, from: Data(encoded.json))
                    // (through Codable JSON too: times travel with milliseconds)
                    let viaCodable = try NotesJSON.decoder().decode(ZoneChanges.self, from: NotesJSON.encoder().encode(values))
                    #expect(decoded == viaCodable, "\(actor), limit \(limit), page \(pages)")
                    #expect(encoded.changeToken == values.changeToken && encoded.moreComing == values.moreComing)
                    #expect(try JSONSerialization.jsonObject(with: Data(encoded.json)) is [String: Any])
                    token = values.changeToken
                    pages += 1
                    if !values.moreComing || pages > 40 { break }
                }
                #expect(pages > (limit == 1 ? 2 : 0))
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func changesArePagedWithTombstones(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.save((0..<25).map { RecordSave(recordName: "r\($0)", recordType: .note, name: "\($0).md", body: "\($0)") })
        var page = try await f.store.zoneChanges(f.aliceZone, since: nil, limit: 10, actor: Fixture.alice)
        #expect(page.records.count == 10 && page.moreComing)
        var seen = page.records.count
        while page.moreComing {
            page = try await f.store.zoneChanges(f.aliceZone, since: page.changeToken, limit: 10, actor: Fixture.alice)
            seen += page.records.count
        }
        #expect(seen == 25)
        let token = page.changeToken
        _ = try await f.store.modify(ModifyRequest(zone: f.aliceZone, deletes: [RecordDelete(recordName: "r3")]), actor: Fixture.alice)
        try await f.note("new", "new.md")
        let delta = try await f.store.zoneChanges(f.aliceZone, since: token, limit: 10, actor: Fixture.alice)
        #expect(delta.deleted == ["r3"])
        #expect(delta.records.map(\.recordName) == ["new"])
        #expect(!delta.moreComing)
        let nothing = try await f.store.zoneChanges(f.aliceZone, since: delta.changeToken, limit: 10, actor: Fixture.alice)
        #expect(nothing.records.isEmpty && nothing.deleted.isEmpty)

        // A zone deleted and created again expires old tokens.
        let work = ZoneID(owner: Fixture.alice, name: "Work")
        _ = try await f.store.createZone(work, actor: Fixture.alice)
        let workToken = try await f.store.zoneChanges(work, since: nil, limit: 10, actor: Fixture.alice).changeToken
        try await f.store.deleteZone(work, actor: Fixture.alice)
        _ = try await f.store.createZone(work, actor: Fixture.alice)
        await f.expectFailure(.changeTokenExpired) { _ = try await f.store.zoneChanges(work, since: workToken, limit: 10, actor: Fixture.alice) }
        await f.expectFailure(.invalidArguments) { _ = try await f.store.zoneChanges(work, since: "forged", limit: 10, actor: Fixture.alice) }

        let database = try await f.store.databaseChanges(scope: .private, since: nil, actor: Fixture.alice)
        #expect(Set(database.changedZones.map(\.name)) == [ZoneID.defaultZoneName, "Work"])
        let later = try await f.store.databaseChanges(scope: .private, since: database.changeToken, actor: Fixture.alice)
        #expect(later.changedZones.isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func everySaveKeepsAVersion(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        var record = try await f.note("n", "n.md", body: "one")
        for body in ["two", "three"] {
            record = try await f.save([RecordSave(recordName: "n", recordType: .note, name: "n.md", body: body, changeTag: record.changeTag)])[0]
        }
        let versions = try await f.store.versions(of: "n", in: f.aliceZone, actor: Fixture.alice)
        #expect(versions.map(\.body) == ["three", "two", "one"])
        #expect(versions.first?.changeTag == record.changeTag)
        await f.expectFailure(.unknownItem) { _ = try await f.store.versions(of: "missing", in: f.aliceZone, actor: Fixture.alice) }
    }

    @Test(arguments: Backend.allCases)
    func aNameFreedByARenameInTheSameBatchCanBeTaken(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let z = try await f.note("z", "z.bin", body: "old z")
        // The exerciser's finding: a new z.bin listed before the rename that frees the name.
        let saved = try await f.save([
            RecordSave(recordName: "new", recordType: .note, name: "z.bin", body: "new z"),
            RecordSave(recordName: "z", recordType: .note, name: "x.bin", body: "old z", changeTag: z.changeTag),
        ])
        #expect(Set(saved.map(\.name)) == ["z.bin", "x.bin"])
        #expect(try await f.all().mapValues(\.name) == ["new": "z.bin", "z": "x.bin"])
    }

    @Test(arguments: Backend.allCases)
    func historyComesInPages(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        var record = try await f.note("n", "n.md", body: "0")
        for index in 1...250 {
            record = try #require(try await f.save([RecordSave(recordName: "n", recordType: .note, name: "n.md", body: "\(index)", changeTag: record.changeTag)]).first)
        }
        var pages: [API.Versions] = []
        var before: String?
        repeat {
            let page = try await f.store.versions(of: "n", in: f.aliceZone, actor: Fixture.alice, limit: 100, before: before)
            pages.append(page)
            before = page.versions.last?.changeTag
        } while pages.last!.moreComing
        #expect(pages.map(\.versions.count) == [100, 100, 51])
        #expect(pages.flatMap(\.versions).map(\.body) == (0...250).reversed().map { "\($0)" })
        #expect(try await f.store.versions(of: "n", in: f.aliceZone, actor: Fixture.alice).count == 251)
        for bad in ["ZZ", "-1", "+1", "1234567890123", "a b"] {
            await f.expectFailure(.invalidArguments) { _ = try await f.store.versions(of: "n", in: f.aliceZone, actor: Fixture.alice, limit: 10, before: bad) }
        }
        for limit in [0, -1, Limits.maxVersionsPage + 1] {
            await f.expectFailure(.invalidArguments) { _ = try await f.store.versions(of: "n", in: f.aliceZone, actor: Fixture.alice, limit: limit, before: nil) }
        }
    }

    @Test(arguments: Backend.allCases)
    func tokensAreCheckedAndExpire(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let token = try await f.store.issueToken(for: Fixture.bob, lifetime: nil)
        #expect(try await f.store.authenticate(token: token)?.account.name == Fixture.bob)
        var forged = Array(token)
        forged[forged.count - 1] = forged.last == "A" ? "B" : "A"
        #expect(try await f.store.authenticate(token: String(forged)) == nil)
        #expect(try await f.store.authenticate(token: "ntk_0000000000000000_" + String(repeating: "A", count: 43)) == nil)
        #expect(try await f.store.authenticate(token: "garbage") == nil)
        let shortLived = try await f.store.issueToken(for: Fixture.bob, lifetime: 1.5)
        #expect(try await f.store.authenticate(token: shortLived)?.account.name == Fixture.bob)
        f.clock.advance(by: 1.4)
        #expect(try await f.store.authenticate(token: shortLived)?.account.name == Fixture.bob)
        f.clock.advance(by: 0.2)
        #expect(try await f.store.authenticate(token: shortLived) == nil)
        await f.expectFailure(.unknownItem) { _ = try await f.store.issueToken(for: "nobody", lifetime: nil) }
        await f.expectFailure(.constraintViolation) { _ = try await f.store.createAccount(name: Fixture.bob, email: nil, isAdmin: false) }
        await f.expectFailure(.invalidArguments) { _ = try await f.store.createAccount(name: "../etc", email: nil, isAdmin: false) }
    }

    @Test(arguments: Backend.allCases)
    func aSignInLinkBecomesATokenOnceAndOnlyBeforeItExpires(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let made = try await f.store.createSignInLink(for: Fixture.bob, lifetime: 3600, createdBy: Fixture.alice)
        #expect(made.info.createdBy == Fixture.alice && made.info.usedAt == nil)
        #expect(try await f.store.signInLinks(of: Fixture.bob).map(\.id) == [made.code.id])
        // The secret is what signs in: the id alone, or a secret changed by one letter, is refused.
        var forged = made.code
        forged.secret = String(forged.secret.dropLast()) + (forged.secret.last == "A" ? "B" : "A")
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.redeemSignInLink(forged, label: nil, client: "192.0.2.1") }
        let issued = try await f.store.redeemSignInLink(made.code, label: "bob-laptop", client: "192.0.2.1")
        #expect(issued.info.account == Fixture.bob && issued.info.label == "bob-laptop" && issued.info.expiresAt == nil)
        #expect(try await f.store.authenticate(token: issued.token)?.account.name == Fixture.bob)
        // Once only; the second use says when the first was.
        do {
            _ = try await f.store.redeemSignInLink(made.code, label: nil, client: "192.0.2.1")
            Issue.record("a used link signed in again")
        } catch {
            #expect(error.code == .notAuthenticated && error.message.contains("was used at"), "\(error)")
        }
        #expect(try await f.store.signInLinks(of: Fixture.bob).isEmpty)

        // Expired: refused, and no longer listed.
        let short = try await f.store.createSignInLink(for: Fixture.bob, lifetime: 60, createdBy: nil)
        f.clock.advance(by: 61)
        #expect(try await f.store.signInLinks(of: Fixture.bob).isEmpty)
        do {
            _ = try await f.store.redeemSignInLink(short.code, label: nil, client: "192.0.2.2")
            Issue.record("an expired link signed in")
        } catch {
            #expect(error.code == .notAuthenticated && error.message.contains("expired at"), "\(error)")
        }
        // Revoked before use; a disabled account's link does not sign in.
        let revoked = try await f.store.createSignInLink(for: Fixture.bob, lifetime: 600, createdBy: nil)
        #expect(try await f.store.revokeSignInLink(id: revoked.code.id).account == Fixture.bob)
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.redeemSignInLink(revoked.code, label: nil, client: "192.0.2.3") }
        await f.expectFailure(.unknownItem) { _ = try await f.store.revokeSignInLink(id: revoked.code.id) }
        let disabled = try await f.store.createSignInLink(for: Fixture.bob, lifetime: 600, createdBy: nil)
        _ = try await f.store.setAccountDisabled(Fixture.bob, true)
        await f.expectFailure(.notAuthenticated) { _ = try await f.store.redeemSignInLink(disabled.code, label: nil, client: "192.0.2.4") }
        await f.expectFailure(.unknownItem) { _ = try await f.store.createSignInLink(for: "nobody", lifetime: 600, createdBy: nil) }
    }

    @Test(arguments: Backend.allCases)
    func refusedSignInLinksFromOneAddressAreRefusedForAWhileWithoutSlowingOthers(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let made = try await f.store.createSignInLink(for: Fixture.bob, lifetime: 3600, createdBy: nil)
        let forged = SignInCode(id: made.code.id, secret: String(repeating: "A", count: 43))
        for _ in 0..<Limits.signInFailuresPerClient {
            await f.expectFailure(.notAuthenticated) { _ = try await f.store.redeemSignInLink(forged, label: nil, client: "198.51.100.7") }
        }
        // The guesser is refused now, even with the right link ...
        await f.expectFailure(.requestRateLimited) { _ = try await f.store.redeemSignInLink(made.code, label: nil, client: "198.51.100.7") }
        // ... while the link still works from anywhere else, and was not used up.
        #expect(try await f.store.redeemSignInLink(made.code, label: nil, client: "203.0.113.9").info.account == Fixture.bob)
        // The window ends.
        f.clock.advance(by: Limits.passwordWindowSeconds + 1)
        let next = try await f.store.createSignInLink(for: Fixture.bob, lifetime: 3600, createdBy: nil)
        #expect(try await f.store.redeemSignInLink(next.code, label: nil, client: "198.51.100.7").info.account == Fixture.bob)
    }

    @Test(arguments: Backend.allCases)
    func tokensAreListedLabelledAndRevokedAndAccountsDisabled(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        let laptop = try await f.store.issueToken(for: Fixture.bob, lifetime: nil, label: "laptop mount")
        let ci = try await f.store.issueToken(for: Fixture.bob, lifetime: 60, label: "CI")
        let alices = try await f.store.issueToken(for: Fixture.alice, lifetime: nil, label: nil)
        #expect(try await f.store.tokens(of: Fixture.bob).map(\.label) == ["laptop mount", "CI"])
        #expect(try await f.store.authenticate(token: laptop.token)?.tokenID == laptop.info.id)
        await f.expectFailure(.invalidArguments) { _ = try await f.store.issueToken(for: Fixture.bob, lifetime: nil, label: "a\u{1B}[31mred") }
        await f.expectFailure(.invalidArguments) { _ = try await f.store.issueToken(for: Fixture.bob, lifetime: nil, label: String(repeating: "x", count: 256)) }

        // Bob may revoke his own tokens, not Alice's (which reads as no token at all).
        await f.expectFailure(.unknownItem) { _ = try await f.store.revokeToken(id: alices.info.id, owner: Fixture.bob) }
        #expect(try await f.store.authenticate(token: alices.token) != nil)
        #expect(try await f.store.revokeToken(id: laptop.info.id, owner: Fixture.bob).label == "laptop mount")
        #expect(try await f.store.authenticate(token: laptop.token) == nil)
        await f.expectFailure(.unknownItem) { _ = try await f.store.revokeToken(id: laptop.info.id, owner: nil) }
        // Expired tokens are not listed.
        f.clock.advance(by: 61)
        #expect(try await f.store.tokens(of: Fixture.bob).isEmpty)

        // A disabled account's tokens are refused until it is enabled again.
        let fresh = try await f.store.issueToken(for: Fixture.bob, lifetime: nil, label: nil)
        #expect(try await f.store.setAccountDisabled(Fixture.bob, true).isDisabled)
        #expect(try await f.store.authenticate(token: fresh.token) == nil)
        #expect(try await f.store.account(named: Fixture.bob)?.isDisabled == true)
        #expect(try await f.store.accounts().filter(\.isDisabled).map(\.name) == [Fixture.bob])
        #expect(try await f.store.setAccountDisabled(Fixture.bob, false).isDisabled == false)
        #expect(try await f.store.authenticate(token: fresh.token)?.account.name == Fixture.bob)
        await f.expectFailure(.unknownItem) { _ = try await f.store.setAccountDisabled("nobody", true) }
        _ = ci
    }

    @Test(arguments: Backend.allCases)
    func othersCannotTouchMyZone(_ backend: Backend) async throws {
        let f = try await Fixture(backend)
        try await f.note("n", "secret.md")
        await f.expectFailure(.permissionFailure) { _ = try await f.all(as: Fixture.bob) }
        await f.expectFailure(.permissionFailure) { try await f.note("x", "x.md", as: Fixture.bob) }
        await f.expectFailure(.permissionFailure) { _ = try await f.store.records(["n"], in: f.aliceZone, actor: Fixture.bob) }
        await f.expectFailure(.permissionFailure) {
            _ = try await f.store.zoneChanges(ZoneID(owner: Fixture.alice, name: "nope"), since: nil, limit: 5, actor: Fixture.bob)
        }
        await f.expectFailure(.zoneNotFound) {
            _ = try await f.store.zoneChanges(ZoneID(owner: Fixture.alice, name: "nope"), since: nil, limit: 5, actor: Fixture.alice)
        }
        await f.expectFailure(.permissionFailure) { _ = try await f.store.createZone(ZoneID(owner: Fixture.alice, name: "Mine"), actor: Fixture.bob) }
    }
}
