import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// POSIX behaviour where it applies, checked with the errno a program sees.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "mount tests need /dev/fuse, which this machine lacks"))
struct PosixTests {
    @Test func posixSemantics() async throws {
        let people = try await TwoMounts()
        // a top-level folder of private/ is a zone
        #expect(Shell.run("mkdir Work", in: people.aliceMount.path("private")).status == 0)
        let root = people.aliceMount.path("private/Work")
        #expect(Shell.run("printf one > a.md && printf two > b.md && mkdir -p Folder && mkdir Folder/Sub && printf x > Folder/Sub/x.md", in: root).status == 0)
        let long = String(repeating: "n", count: 256)
        let answers = errnos(
            root,
            [
                ("rename over", "os.replace('a.md', 'b.md')"),
                ("rmdir non-empty", "os.rmdir('Folder')"),
                ("create excl", "os.open('b.md', os.O_CREAT | os.O_EXCL | os.O_WRONLY)"),
                ("long name", "open('\(long).md', 'w')"),
                ("chmod", "os.chmod('b.md', 0o600)"),
                ("chown", "os.chown('b.md', 1234, 1234)"),
                ("symlink", "os.symlink('b.md', 'link.md')"),
                ("hard link", "os.link('b.md', 'hard.md')"),
                ("mknod fifo", "os.mkfifo('fifo')"),
                ("move folder into itself", "os.rename('Folder', 'Folder/Sub/Inner')"),
                ("truncate", "os.truncate('b.md', 2)"),
                ("utime", "os.utime('b.md', (1000000000, 1000000000))"),
            ])
        #expect(answers["rename over"] == "ok")
        #expect(answers["rmdir non-empty"] == "ENOTEMPTY")
        #expect(answers["create excl"] == "EEXIST")
        #expect(answers["long name"] == "ENAMETOOLONG")
        #expect(answers["chmod"] == "EPERM")
        #expect(answers["chown"] == "EPERM")
        #expect(answers["symlink"] == "EPERM")
        #expect(answers["hard link"] == "EPERM")
        #expect(answers["mknod fifo"] == "EPERM")
        #expect(answers["move folder into itself"] == "EINVAL")
        #expect(answers["utime"] == "ok")
        #expect(answers["truncate"] == "ok")
        #expect(Shell.run("stat -c %Y b.md", in: root).stdout == "1000000000\n")
        #expect(fileText("\(root)/b.md") == "on")
        #expect(!FileManager.default.fileExists(atPath: "\(root)/a.md"))

        // A note unlinked while open stays readable through its handle.
        let script = "import os\nf = open('b.md')\nos.unlink('b.md')\nprint(f.read())"
        #expect(Shell.run("python3 -c \"\(script)\"", in: root).stdout == "on\n")
        #expect(!FileManager.default.fileExists(atPath: "\(root)/b.md"))
        #expect(Shell.run("stat -f -c %T .", in: root).stdout.contains("fuse"))
        #expect(Shell.run("grep ' \(people.aliceMount.mountpoint) ' /proc/mounts").stdout.contains("fuse.notes"))

        // The server ends with the folder tree and no stray records.
        var names: [String] = []
        let settled = await eventually {
            names = (try? await people.alice.zoneChanges(ZoneID(owner: "alice", name: "Work"), since: nil).records.map(\.name).sorted()) ?? []
            return names == ["Folder", "Sub", "x.md"]
        }
        #expect(settled, "the server has \(names)")
    }

    @Test func aFolderMadeOfflineStaysAWorkingDirectoryWhenItSyncs() async throws {
        // Given a zone folder made with mkdir while notesd is away, and a shell standing in it
        let people = try await TwoMounts()
        try await people.daemon.stop()
        #expect(Shell.run("mkdir Work", in: people.aliceMount.path("private")).status == 0)
        let work = people.aliceMount.path("private/Work")
        // (Debian's python itself, not a shim that would look the folder up again; it goes
        // on when the test says so: no timing involved.)
        let go = "/tmp/go-\(UUID().uuidString.prefix(8))"
        let ready = go + ".ready"
        defer {
            try? FileManager.default.removeItem(atPath: go)
            try? FileManager.default.removeItem(atPath: ready)
        }
        let script =
            "import os, time\nos.chdir('\(work)')\nopen('\(ready)', 'w').close()\nwhile not os.path.exists('\(go)'): time.sleep(0.01)\nprint(os.getcwd())\nopen('here.md', 'w').write('ok')\nprint(open('here.md').read())"
        let standing = Task { await Shell.runOnOwnThread("/usr/bin/python3 -c \"\(script)\"") }
        #expect(await eventually(20) { FileManager.default.fileExists(atPath: ready) })

        // When notesd comes back and the folder is uploaded and seen on the server
        try await people.daemon.restart()
        #expect(await eventually { (try? await people.alice.zones(scope: .private).map(\.id.name).contains("Work")) == true })
        #expect(await queueDrained(people.aliceMount))
        _ = FileManager.default.createFile(atPath: go, contents: nil)

        // Then the folder is still where the shell stands: getcwd works, relative paths too
        let result = await standing.value
        #expect(result.stdout == "\(work)\nok\n", "\(result)")
    }

    @Test func aFolderRenamedElsewhereStaysTheWorkingDirectoryOfWhoeverIsInIt() async throws {
        // Given a python process standing in private/Work/Folder
        let people = try await TwoMounts()
        let work = try await people.alice.createZone(named: "Work").id
        let folder = try await people.saveFolder(people.alice, zone: work, name: "Folder")
        let inside = people.aliceMount.path("private/Work/Folder")
        #expect(await eventually { FileManager.default.fileExists(atPath: inside) })
        // (it asks for its working directory once the test says so: no timing involved)
        let go = "/tmp/go-\(UUID().uuidString.prefix(8))"
        let ready = go + ".ready"
        defer {
            try? FileManager.default.removeItem(atPath: go)
            try? FileManager.default.removeItem(atPath: ready)
        }
        let script = "import os, time\nos.chdir('\(inside)')\nopen('\(ready)', 'w').close()\nwhile not os.path.exists('\(go)'): time.sleep(0.01)\nprint(os.getcwd())"
        let standing = Task { await Shell.runOnOwnThread("/usr/bin/python3 -c \"\(script)\"") }
        #expect(await eventually(20) { FileManager.default.fileExists(atPath: ready) })

        // When the folder is renamed from elsewhere, and the mount has shown it
        _ = try await people.alice.modify(
            ModifyRequest(
                zone: work,
                saves: [
                    RecordSave(recordName: folder.recordName, recordType: .folder, name: "Renamed", changeTag: folder.changeTag)
                ]))
        #expect(await eventually(20) { FileManager.default.fileExists(atPath: people.aliceMount.path("private/Work/Renamed")) })
        _ = FileManager.default.createFile(atPath: go, contents: nil)

        // Then the process still has a working directory, under the new name
        let result = await standing.value
        #expect(result.stdout == people.aliceMount.path("private/Work/Renamed") + "\n", "\(result)")
    }

    @Test func offlineWritesSurviveUnmountAndUploadOnTheNextMount() async throws {
        // Given a mount whose daemon goes away
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        #expect(Shell.run("printf 'before' > kept.md", in: root).status == 0)
        #expect(await eventually { (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records.count) == 1 })
        try await people.daemon.stop()

        // When alice keeps writing, then the mount stops on SIGTERM
        #expect(Shell.run("printf 'offline' > new.md && printf ' and after' >> kept.md && cat kept.md", in: root).stdout == "before and after")
        let status = Shell.run("'\(MountProcess.notesBinary)' status --json --socket '\(people.daemon.socket)'", environment: ["XDG_CACHE_HOME": people.aliceMount.xdgCache])
        let report = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(report?["daemon"] as? String == "offline", "\(status)")
        #expect((report?["queued"] as? Int ?? 0) >= 2, "\(status)")
        #expect((report?["mounts"] as? [String])?.contains(people.aliceMount.mountpoint) == true)
        #expect(people.aliceMount.stop(), "the mount did not exit on SIGTERM with notesd away; its log:\n\(people.aliceMount.log())")
        #expect(!MountProcess.isMounted(people.aliceMount.mountpoint))

        // Then the next mount (daemon back) uploads what was queued
        try await people.daemon.restart()
        try people.aliceMount.start()
        #expect(fileText("\(root)/new.md") == "offline")
        #expect(
            await eventually {
                let records = (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []
                return Set(records.map { "\($0.name)=\($0.body ?? "")" }) == ["kept.md=before and after", "new.md=offline"]
            }, "queued writes never arrived; mount log:\n\(people.aliceMount.log())")
    }

    @Test func stableInodesAcrossRemounts() async throws {
        let people = try await TwoMounts()
        let work = try await people.alice.createZone(named: "Work").id
        let note = try await people.saveNote(people.alice, zone: work, name: "plan.md", body: "x")
        let path = people.aliceMount.path("private/Work/plan.md")
        #expect(await eventually { fileText(path) == "x" })
        let first = Shell.run("stat -c %i '\(path)'").stdout
        #expect(people.aliceMount.stop(), "the mount did not exit on SIGTERM; its log:\n\(people.aliceMount.log())")
        try FileManager.default.removeItem(atPath: people.aliceMount.cacheDir)
        try people.aliceMount.start()
        #expect(await eventually { fileText(path) == "x" })
        #expect(Shell.run("stat -c %i '\(path)'").stdout == first)
        #expect(xattr(path, "record") == note.recordName)
        #expect(xattr(path, "zone") == "alice/Work")
    }
}

/// What pjdfstest found: a folder's link count, ctime, sub-second times.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct PjdfstestFindingsTests {
    @Test func foldersCountTheirSubfoldersAndCtimeFollowsEveryChange() async throws {
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        let script = """
            import os, time
            os.makedirs('a/b'); os.mkdir('a/c'); open('a/f.md', 'w').write('x')
            print('nlink', os.stat('a').st_nlink)
            def later(ns):
                while time.time_ns() <= ns + 2_000_000: pass
            for name, change in [('truncate', lambda: os.truncate('a/f.md', 0)),
                                 ('write', lambda: open('a/f.md', 'a').write('y')),
                                 ('utime', lambda: os.utime('a/f.md', (1000000000, 1000000000))),
                                 ('parent on unlink', lambda: os.unlink('a/f.md')),
                                 ('parent on rmdir', lambda: os.rmdir('a/c'))]:
                path = 'a' if name.startswith('parent') else 'a/f.md'
                before = os.stat(path).st_ctime_ns
                later(before)
                change()
                print(name, os.stat(path).st_ctime_ns > before)
            open('t.md', 'w').write('t')
            os.utime('t.md', ns=(1795421115_100000000, 1795421115_100000000))
            print('subsecond', os.stat('t.md').st_mtime_ns)
            """
        let path = "/tmp/pjd-\(UUID().uuidString.prefix(8)).py"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = Shell.run("python3 \(path)", in: root)
        #expect(
            result.stdout == """
                nlink 4
                truncate True
                write True
                utime True
                parent on unlink True
                parent on rmdir True
                subsecond 1795421115100000000

                """, "\(result)")
    }
}
