import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// A backup of notesd on PostgreSQL is PostgreSQL's own: the `pg_dump` and `pg_restore`
/// commands that `notesd backup` prints, run as printed while notesd serves, bring back
/// every record, version, share and token in a new database.
@Suite struct PostgresBackupTests {
    @Test func pgDumpWhileServingAndPgRestoreBringBackEveryRecordVersionShareAndToken() async throws {
        // Given notesd on PostgreSQL with notes, history, a share and tokens
        let cluster = try PostgresCluster.shared()
        let source = try cluster.createDatabase()
        let daemon = try await DaemonProcess.started(tcp: true, arguments: ["--database", source])
        let issued = try await daemon.client().createAccount(name: "alice", email: "alice@example.com")
        let alice = daemon.client(token: issued.token)
        let bobToken = try await daemon.client().createAccount(name: "bob", email: "bob@example.com").token
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        var note = try await alice.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "n", recordType: .note, name: "n.md", body: "v1")])).saved[0]
        for version in 2...3 {
            note = try await alice.modify(
                ModifyRequest(
                    zone: zone,
                    saves: [
                        RecordSave(recordName: "n", recordType: .note, name: "n.md", body: "v\(version)", changeTag: note.changeTag)
                    ])
            ).saved[0]
        }
        let share = try await alice.createShare(NewShare(zone: zone, rootRecordName: "n", participants: [Invitee(name: "bob", permission: .readOnly)]))
        let before = try await alice.zoneChanges(zone, since: nil)
        let history = try await alice.versions(of: "n", in: zone)

        // When `notesd backup` is asked, it prints PostgreSQL's commands…
        let asked = Shell.run("'\(DaemonProcess.binary)' backup --data-dir '\(daemon.dataDir)' --database '\(source)' --to /tmp/unused")
        let printed = asked.stderr.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let dump = try #require(printed.first { $0.hasPrefix("pg_dump ") }, "\(asked)")
        let restore = try #require(printed.first { $0.hasPrefix("pg_restore ") }, "\(asked)")
        #expect(asked.status != 0)

        // … which, run as printed (with a note saved meanwhile), make a copy while notesd serves
        let folder = NSTemporaryDirectory() + "notes-pgdump-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        async let later = alice.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "later", recordType: .note, name: "later.md", body: "x")]))
        let dumped = Shell.run("\(PostgresCluster.binaries)/\(dump)", in: folder)
        #expect(dumped.status == 0, "\(dumped)")
        _ = try await later
        let restoredURL = try cluster.createDatabase()
        let sourceName = PostgresCluster.databaseName(of: source)
        let restoredName = PostgresCluster.databaseName(of: restoredURL)
        let restoreCommand = restore.replacingOccurrences(of: sourceName, with: restoredName).replacingOccurrences(of: "   # with every notesd stopped", with: "")
        let restored = Shell.run("\(PostgresCluster.binaries)/\(restoreCommand)", in: folder)
        #expect(restored.status == 0, "\(restored)")

        // Then notesd on the restored database answers the same tokens with the same
        // records (the later note only if the dump began after it), history and share
        try await daemon.stop()
        let copy = try await DaemonProcess.started(tcp: true, arguments: ["--database", restoredURL])
        let aliceThere = copy.client(token: issued.token)
        let after = try await aliceThere.zoneChanges(zone, since: nil)
        let beforeNames = Set(before.records.map(\.recordName))
        #expect(Set(after.records.map(\.recordName)).subtracting(["later"]) == beforeNames)
        #expect(after.records.filter { $0.recordName == "n" } == before.records.filter { $0.recordName == "n" })
        let historyThere = try await aliceThere.versions(of: "n", in: zone)
        #expect(historyThere == history)
        let invitations = try await copy.client(token: bobToken).invitations()
        #expect(invitations.map(\.id) == [share.id])
        try await copy.stop()
    }
}
