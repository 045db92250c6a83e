#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// The mount's promise about saves, tested exactly: a file whose `close` returned is in
/// the replica (it survives SIGTERM, unmount and `kill -9` of the mount), and what the
/// replica queued reaches notesd in requests notesd accepts. Writes that fail for size
/// leave the note as it was.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct SaveGuaranteeTests {
    @Test func aLineAppendedRightBeforeSIGTERMIsKept() async throws {
        // Given a mounted note
        let people = try await TwoMounts()
        let mount = try #require(people.aliceMount)
        let root = mount.path("private")
        #expect(Shell.run("printf 'line 0\\n' > log.md", in: root).status == 0)
        var expected = "line 0\n"
        for round in 1...5 {
            // When a line is appended and the mount is told to stop the moment `>>` returns
            let appended = Shell.run("printf 'line \(round)\\n' >> log.md && kill -TERM \(mount.process.processIdentifier)", in: root)
            #expect(appended.status == 0, "\(appended)")
            expected += "line \(round)\n"
            #expect(mount.waitForExit(), "round \(round): the mount did not stop within 15 s of SIGTERM; its log ends:\n\(mount.log().suffix(3000))")
            // Then the next mount reads every line
            try mount.start()
            #expect(fileText("\(root)/log.md") == expected, "round \(round):\n\(mount.log().suffix(2000))")
        }
        let uploaded = await eventually(20) {
            let records = (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []
            return records.first { $0.name == "log.md" }?.body == expected
        }
        #expect(uploaded)
    }

    @Test func aFileWhoseCloseReturnedSurvivesKill9OfTheMount() async throws {
        // Given a mount whose uploads cannot help (notesd stopped with SIGSTOP): only the
        // replica can keep the file
        let people = try await TwoMounts()
        let mount = try #require(people.aliceMount)
        let root = mount.path("private")
        let daemon = people.daemon.process.processIdentifier
        for round in 1...3 {
            kill(daemon, SIGSTOP)
            // When a script writes a note, closes it, and the mount is killed right then
            let script = "open('k\(round).md', 'w').write('kept \(round)\\\\n')"
            let written = Shell.run("python3 -c \"\(script)\" && kill -KILL \(mount.process.processIdentifier)", in: root)
            #expect(written.status == 0, "\(written)")
            #expect(mount.waitForExit(killed: true))
            kill(daemon, SIGCONT)
            // Then the next mount has it, and uploads it
            try mount.start()
            #expect(fileText("\(root)/k\(round).md") == "kept \(round)\n", "round \(round):\n\(mount.log().suffix(2000))")
        }
        let uploaded = await eventually(20) {
            let records = (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []
            return Set(records.compactMap(\.body)) == ["kept 1\n", "kept 2\n", "kept 3\n"]
        }
        #expect(uploaded)
    }

    @Test func aCopyOverTheSizeLimitLeavesTheNoteAsItWas() async throws {
        // Given a note on notesd and a 17 MiB file on another disk
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        #expect(Shell.run("printf 'keep\\n' > small.md", in: root).status == 0)
        #expect(try await eventually { try await people.alice.zoneChanges(people.aliceDefault, since: nil).records.contains { $0.body == "keep\n" } })
        let big = "/var/tmp/big-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: big) }
        #expect(Shell.run("head -c \(17 << 20) /dev/zero > \(big)").status == 0)

        // When cp copies it over the note
        let copy = Shell.run("cp \(big) small.md", in: root)

        // Then cp says why it failed, and the note reads as before, here and on notesd
        #expect(copy.status != 0)
        #expect(copy.stderr.contains("File too large"), "\(copy)")
        #expect(await eventually { fileText("\(root)/small.md") == "keep\n" }, "size now \(Shell.run("stat -c %s small.md", in: root).stdout)")
        // Uploads go in queue order: once a later note is on notesd, anything cp had left
        // queued would be there too.
        #expect(Shell.run("printf 'after\\n' > marker.md", in: root).status == 0)
        let settled = try await eventually(20) {
            try await people.alice.zoneChanges(people.aliceDefault, since: nil).records.contains { $0.name == "marker.md" }
        }
        #expect(settled)
        let records = try await people.alice.zoneChanges(people.aliceDefault, since: nil).records
        #expect(records.first { $0.name == "small.md" }?.body == "keep\n")
    }

    @Test func queuedFilesLargerThanOneRequestUploadInBatchesNotesdAccepts() async throws {
        // Given 72 MiB of attachments saved while notesd is down (96 MiB once base64'd:
        // more than one 64 MiB request can carry)
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        try await people.daemon.stop()
        let script = "for i in range(6): open('blob-%d.bin' % i, 'wb').write(bytes([65 + i]) * (12 << 20))"
        let written = Shell.run("python3 -c \"\(script)\"", in: root)
        #expect(written.status == 0, "\(written)")

        // When notesd comes back
        try await people.daemon.restart()

        // Then every file reaches it whole, without a refused request
        #expect(await queueDrained(people.aliceMount, 90), "\(people.aliceMount.log().suffix(3000))")
        for index in 0..<6 {
            let recordName = try #require(xattr(people.aliceMount.path("private/blob-\(index).bin"), "record"))
            let record = try #require(try await people.alice.records([recordName], in: people.aliceDefault).first)
            #expect(record.bytes == Data(repeating: UInt8(65 + index), count: 12 << 20), "blob-\(index).bin")
        }
        #expect(!people.aliceMount.log().contains("larger than"), "\(people.aliceMount.log().suffix(3000))")
    }
}
