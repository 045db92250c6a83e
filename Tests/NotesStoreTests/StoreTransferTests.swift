import Foundation
import NotesModel
import NotesPostgres
import NotesStore
import NotesTestSupport
import NotesTransfer
import Testing

/// `notesd migrate`: a team's SQLite store copied into PostgreSQL, as it is, so that
/// tokens, share URLs, record names, change tags and change tokens keep working.
@Suite struct StoreTransferTests {
    static let work = ZoneID(owner: "alice", name: "Work")

    /// A SQLite store with something of everything the store keeps.
    static func teamStore() async throws -> (SQLiteStore, path: String, token: String, link: SignInCode) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notes-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("notes.sqlite").path
        let store = try SQLiteStore(path: path)
        _ = try await store.createAccount(name: "alice", email: "alice@example.com", isAdmin: true)
        _ = try await store.createAccount(name: "bob", email: "bob@example.com", isAdmin: false)
        _ = try await store.createAccount(name: "carol", email: nil, isAdmin: false)
        let token = try await store.issueToken(for: "alice", lifetime: 86_400, label: "laptop").token
        _ = try await store.issueToken(for: "bob", lifetime: nil, label: nil)
        _ = try await store.createZone(work, actor: "alice")
        _ = try await store.createZone(ZoneID(owner: "alice", name: "Old"), actor: "alice")
        try await store.deleteZone(ZoneID(owner: "alice", name: "Old"), actor: "alice")
        var saves = [RecordSave(recordName: "folder", recordType: .folder, name: "Plans")]
        for index in 0..<7 {
            saves.append(RecordSave(recordName: "n\(index)", recordType: .note, name: "n\(index).md", parent: "folder", body: "note \(index)\u{0}with a NUL"))
        }
        saves.append(RecordSave(recordName: "file", recordType: .file, name: "a.bin", bytes: Data([0, 1, 2, 255])))
        // Large contents, kept apart from their records, move too.
        saves.append(RecordSave(recordName: "long", recordType: .note, name: "long.md", parent: "folder", body: String(repeating: "a long line\n", count: 1_000)))
        saves.append(RecordSave(recordName: "scan", recordType: .file, name: "scan.bin", bytes: Data(repeating: 9, count: 10_000)))
        var saved = try await store.modify(ModifyRequest(zone: work, saves: saves), actor: "alice").saved
        for round in 1...3 {
            let current = try #require(saved.first { $0.recordName == "n0" })
            saved = try await store.modify(
                ModifyRequest(
                    zone: work,
                    saves: [
                        RecordSave(recordName: "n0", recordType: .note, name: "n0.md", parent: "folder", body: "round \(round)", changeTag: current.changeTag)
                    ]), actor: "alice"
            ).saved
        }
        _ = try await store.modify(ModifyRequest(zone: work, deletes: [RecordDelete(recordName: "n6")]), actor: "alice")
        let share = try await store.createShare(
            NewShare(
                zone: work, rootRecordName: "folder",
                participants: [
                    Invitee(name: "bob", permission: .readWrite), Invitee(email: "dan@example.com", permission: .readOnly),
                ]), actor: "alice")
        _ = try await store.acceptShare(urlToken: share.urlToken, actor: "bob")
        _ = try await store.updateShare(id: share.id, ShareUpdate(publicPermission: .readOnly, publicPassword: "sesame"), actor: "alice")
        do { _ = try await store.acceptShare(urlToken: share.urlToken, password: "wrong", actor: "carol") } catch {}
        // carol's new laptop has a sign-in link waiting; an older one was used.
        let used = try await store.createSignInLink(for: "carol", lifetime: 86_400, createdBy: "alice")
        _ = try await store.redeemSignInLink(used.code, label: "old laptop", client: nil)
        let link = try await store.createSignInLink(for: "carol", lifetime: 86_400, createdBy: "alice").code
        return (store, path, token, link)
    }

    @Test func aTeamMovesWithEverythingItHadAndAnInterruptedCopyGoesOn() async throws {
        let (sqlite, path, token, link) = try await Self.teamStore()
        let before = try await sqlite.zoneChanges(Self.work, since: nil, limit: 1000, actor: "alice")
        let pool = try PostgresPool(url: try PostgresCluster.shared().createDatabase())

        // An interruption in the middle of the records (small batches, so there is a middle)
        let transfer = StoreTransfer(sqlitePath: path, target: pool.database, batchRows: 2)
        var batches = 0
        await #expect(throws: NotesError.self) {
            _ = try await transfer.run { progress throws(NotesError) in
                if progress.table == "records" && progress.copied > 0 { batches += 1 }
                if batches == 2 { throw NotesError(.serviceUnavailable, "interrupted") }
            }
        }
        // … and the copy run again goes on from there, and ends identical.
        let report = try await transfer.run()
        #expect(report.resumed && !report.alreadyComplete)
        let rows = Dictionary(report.rows.map { ($0.table, $0.count) }, uniquingKeysWith: { a, _ in a })
        #expect(rows["records"] == 10 && rows["versions"] == 4 && rows["tokens"] == 3 && rows["participants"] == 3, "\(report.rows)")
        #expect(rows["contents"] == 2, "\(report.rows)")
        #expect(rows["password_attempts"] ?? 0 > 0 && rows["zone_tombstones"] == 1 && rows["tombstones"] == 1, "\(report.rows)")
        // Run once more, it only compares.
        #expect(try await transfer.run().alreadyComplete)

        // notesd on PostgreSQL then answers as it did on SQLite.
        let postgres = PostgresStore(database: pool.database)
        #expect(try await postgres.authenticate(token: token)?.account.name == "alice")
        #expect(rows["sign_in_links"] == 2, "\(report.rows)")
        #expect(try await postgres.redeemSignInLink(link, label: "new laptop", client: nil).info.account == "carol")
        let after = try await postgres.zoneChanges(Self.work, since: nil, limit: 1000, actor: "alice")
        #expect(after.records == before.records && after.changeToken == before.changeToken)
        #expect(try await postgres.versions(of: "n0", in: Self.work, actor: "alice") == (try await sqlite.versions(of: "n0", in: Self.work, actor: "alice")))
        #expect(try await postgres.shares(actor: "bob") == (try await sqlite.shares(actor: "bob")))
        #expect(try await postgres.usage(of: "alice").used == (try await sqlite.usage(of: "alice").used))
        #expect(try await postgres.zones(scope: .private, actor: "alice").map(\.id.name).sorted() == ["Work", "_defaultZone"])
        // A mount's change token goes on from where it was: nothing again, then what is new.
        #expect(try await postgres.zoneChanges(Self.work, since: before.changeToken, limit: 100, actor: "alice").records.isEmpty)
        let current = try #require(after.records.first { $0.recordName == "n1" })
        _ = try await postgres.modify(
            ModifyRequest(
                zone: Self.work,
                saves: [
                    RecordSave(recordName: "n1", recordType: .note, name: "n1.md", parent: "folder", body: "after the move", changeTag: current.changeTag)
                ]), actor: "bob")
        let next = try await postgres.zoneChanges(Self.work, since: before.changeToken, limit: 100, actor: "alice")
        #expect(next.records.map(\.recordName) == ["n1"])
        let newTag = try #require(next.records.first?.changeTag)
        #expect(newTag.count >= current.changeTag.count && newTag != current.changeTag)
        // A new token lists after the copied ones.
        _ = try await postgres.issueToken(for: "alice", lifetime: nil, label: "new")
        #expect(try await postgres.tokens(of: "alice").map(\.label) == ["laptop", "new"])
    }

    @Test func aDatabaseWithOtherDataOrASourceChangedMidwayIsRefused() async throws {
        let (sqlite, path, _, _) = try await Self.teamStore()

        // A database that already holds accounts of its own
        let used = try PostgresPool(url: try PostgresCluster.shared().createDatabase())
        try await used.database.migrate()
        _ = try await PostgresStore(database: used.database).createAccount(name: "zoe", email: nil, isAdmin: true)
        await #expect { try await StoreTransfer(sqlitePath: path, target: used.database).run() } throws: { error in
            (error as? NotesError)?.code == .invalidArguments && (error as? NotesError)?.message.contains("empty") == true
        }

        // A copy interrupted, the source written meanwhile (notesd left running)
        let fresh = try PostgresPool(url: try PostgresCluster.shared().createDatabase())
        let transfer = StoreTransfer(sqlitePath: path, target: fresh.database, batchRows: 2)
        await #expect(throws: NotesError.self) {
            _ = try await transfer.run { progress throws(NotesError) in
                if progress.table == "zones" { throw NotesError(.serviceUnavailable, "interrupted") }
            }
        }
        _ = try await sqlite.modify(ModifyRequest(zone: Self.work, saves: [RecordSave(recordName: "late", recordType: .note, name: "late.md", body: "x")]), actor: "alice")
        await #expect { try await transfer.run() } throws: { error in
            (error as? NotesError)?.message.contains("changed since this copy began") == true
        }

        // No SQLite database where it was said to be
        await #expect { try await StoreTransfer(sqlitePath: path + ".missing", target: fresh.database).run() } throws: { error in
            (error as? NotesError)?.code == .invalidArguments
        }
    }
}
