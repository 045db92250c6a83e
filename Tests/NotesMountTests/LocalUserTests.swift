#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Another Unix user on the same machine reads nothing of anyone's notes: not the
/// mount's replica and log, not notesd's database, not a token from `ps`.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct LocalUserTests {
    @Test func anotherUnixUserFindsNothingReadable() async throws {
        // Given a mount with a note saved and uploaded, and notesd's files
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        #expect(Shell.run("printf 'secret\\n' > secret.md", in: root).status == 0)
        #expect(await eventually { ((try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []).contains { $0.body == "secret\n" } })
        let cache = people.aliceMount.cacheDir
        // The folders above are the tests' own: let `nobody` walk through them.
        #expect(Shell.run("chmod o+x '\(URL(fileURLWithPath: cache).deletingLastPathComponent().path)' '\(people.daemon.dataDir)'").status == 0)
        let files = [
            cache, "\(cache)/alice.replica.sqlite", "\(cache)/alice.replica.sqlite-wal",
            "\(people.daemon.dataDir)/notes.sqlite", "\(people.daemon.dataDir)/notes.sqlite-wal",
        ]

        // When `nobody` tries to read them
        for path in files {
            #expect(FileManager.default.fileExists(atPath: path), "\(path) is missing")
            let read = Shell.run("runuser -u nobody -- \(path == cache ? "ls" : "cat") '\(path)' > /dev/null")
            // Then each is refused
            #expect(read.status != 0, "nobody could read \(path): \(Shell.run("ls -ld '\(path)'").stdout)")
        }
        let grep = Shell.run("runuser -u nobody -- grep -r secret '\(cache)' '\(people.daemon.dataDir)'")
        #expect(!grep.stdout.contains("secret"))
    }

    @Test func aBackgroundMountKeepsItsTokenOutOfItsArguments() async throws {
        // Given a token passed on the command line
        let daemon = try await DaemonProcess.started()
        let token = try await daemon.client().createAccount(name: "carol").token
        let folder = "/var/tmp/nt-\(UUID().uuidString.prefix(8))"
        defer {
            _ = Shell.run("fusermount3 -u -z '\(folder)/mnt'")
            try? FileManager.default.removeItem(atPath: folder)
        }
        // When `notes mount` starts in the background
        let started = Shell.run("'\(MountProcess.notesBinary)' mount '\(folder)/mnt' --cache-dir '\(folder)/cache' --socket '\(daemon.socket)' --token '\(token)'")
        #expect(started.status == 0, "\(started)")
        defer { _ = Shell.run("'\(MountProcess.notesBinary)' unmount '\(folder)/mnt'") }

        // Then the process serving it has no token in its arguments, and its log is private
        let pids = Shell.run("pgrep -f -- 'mount \(folder)/mnt'").stdout.split(separator: "\n")
        #expect(!pids.isEmpty)
        for pid in pids {
            let arguments = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            #expect(!arguments.contains(token), "pid \(pid): \(arguments)")
        }
        #expect(Shell.run("stat -c %a '\(folder)/cache/mount.log'").stdout == "600\n")
        #expect(Shell.run("ls '\(folder)/mnt/private'").status == 0)
    }
}
