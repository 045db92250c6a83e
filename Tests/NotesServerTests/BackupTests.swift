import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// `notesd backup` while notesd serves, and `notesd restore` with it stopped: the
/// restored store holds every record, version, share and token of the moment the backup
/// was taken.
@Suite struct BackupTests {
    @Test func aBackupTakenWhileServingRestoresEveryRecordVersionShareAndToken() async throws {
        // Given a serving notesd with notes, history, a share and tokens
        let daemon = try await DaemonProcess.started()
        let issued = try await daemon.client().createAccount(name: "alice", email: "alice@example.com")
        let alice = daemon.client(token: issued.token)
        _ = try await daemon.client().createAccount(name: "bob", email: "bob@example.com")
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

        // When a backup is taken while it serves, and a note is saved after it
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notes-backup-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let notesd = "'\(DaemonProcess.binary)'"
        let daemonPlace = "--data-dir '\(daemon.dataDir)' --socket '\(daemon.socket)'"
        let backup = Shell.run("\(notesd) backup \(daemonPlace) --to '\(folder)/notes.backup'")
        #expect(backup.status == 0 && backup.stdout.contains("1 records, 2 versions, 1 shares"), "\(backup)")
        // (readable by notesd's user only: it holds every note, token hash and link-password hash)
        let mode = try FileManager.default.attributesOfItem(atPath: "\(folder)/notes.backup")[.posixPermissions] as? Int
        #expect(mode == 0o600, "the backup's mode is \(String(mode ?? 0, radix: 8))")
        #expect(Shell.run("\(notesd) backup \(daemonPlace) --to '\(folder)/notes.backup'").status != 0, "a backup overwrote a file")
        _ = try await alice.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "later", recordType: .note, name: "later.md", body: "x")]))

        // Then it cannot be restored under a running notesd…
        let refused = Shell.run("\(notesd) restore \(daemonPlace) --from '\(folder)/notes.backup'")
        #expect(refused.status != 0 && refused.stderr.contains("stop it first"), "\(refused)")
        // … and once notesd is stopped, it brings back exactly that moment
        try await daemon.stop()
        let restored = Shell.run("\(notesd) restore \(daemonPlace) --from '\(folder)/notes.backup'")
        #expect(restored.status == 0 && restored.stdout.contains("kept as"), "\(restored)")
        try await daemon.restart()
        let after = try await alice.zoneChanges(zone, since: nil)
        #expect(after.records == before.records && after.changeToken == before.changeToken)
        #expect(try await alice.versions(of: "n", in: zone) == history)
        let bob = try await daemon.client().issueToken(for: "bob", expiresIn: nil)
        #expect(try await daemon.client(token: bob.token).invitations().map(\.id) == [share.id])
        // The database it replaced is kept, with the later note in it.
        let kept = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir).filter { $0.hasPrefix("notes.sqlite.before-restore-") }
        #expect(kept.count == 1)
        // A file that is not a backup is refused, and changes nothing.
        try await daemon.stop()
        try "not a database".write(toFile: "\(folder)/junk", atomically: true, encoding: .utf8)
        #expect(Shell.run("\(notesd) restore \(daemonPlace) --from '\(folder)/junk'").status != 0)
        try await daemon.restart()
        #expect(try await alice.zoneChanges(zone, since: nil).records == before.records)
    }
}
