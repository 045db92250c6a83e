#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Offline work, concurrent edits and crashes, with real processes stopped and
/// killed under the mounts. Each test ends by checking that every line anyone wrote is
/// still somewhere the user can see it.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "mount tests need /dev/fuse, which this machine lacks"))
struct OfflineTests {
    static var conflictName: Regex<(Substring, Substring)> { #/^notes \(conflict, (alice|bob), \d{4}-\d{2}-\d{2} \d{2}\.\d{2}\)\.md$/# }

    @Test func offlineEditsOnBothSidesMergeOrLeaveAConflictCopy() async throws {
        // Given alice's folder Team shared read-write with bob, both mounted
        let people = try await TwoMounts(mountBob: true)
        let team = try await Self.sharedTeam(
            people,
            files: [
                "plan.md": "1 one\n2 two\n3 three\n4 four\n5 five\n6 six\n7 seven\n8 eight\n9 nine\n",
                "notes.md": "a\nb\nc\nd\ne\n",
            ])
        let planRecord = xattr("\(team.alice)/plan.md", "record")

        // When notesd goes away and both edit: different lines of plan.md, the same line of notes.md
        try await people.daemon.stop()
        #expect(Shell.run("sed -i 's/^1 one$/1 one by alice/' plan.md && sed -i 's/^c$/c by alice/' notes.md", in: team.alice).status == 0)
        let python = "import os\ntext = open('plan.md').read().replace('9 nine', '9 nine by bob')\nopen('plan.md.tmp', 'w').write(text)\nos.replace('plan.md.tmp', 'plan.md')\n"
        #expect(Shell.run("python3 -c \"\(python)\" && sed -i 's/^c$/c by bob/' notes.md", in: team.bob).status == 0, "bob's offline edits failed")
        #expect(Self.status(people.bobMount!, people.daemon)?["daemon"] as? String == "offline")
        try await people.daemon.restart()

        // Then plan.md holds both edits on both mounts, as the same record
        let merged = "1 one by alice\n2 two\n3 three\n4 four\n5 five\n6 six\n7 seven\n8 eight\n9 nine by bob\n"
        let planMerged = await eventually(30) { fileText("\(team.alice)/plan.md") == merged && fileText("\(team.bob)/plan.md") == merged }
        #expect(
            planMerged,
            "alice sees \(fileText("\(team.alice)/plan.md") ?? "nothing"), bob \(fileText("\(team.bob)/plan.md") ?? "nothing")\nalice's log:\n\(people.aliceMount.log().suffix(3000))"
        )
        #expect(xattr("\(team.alice)/plan.md", "record") == planRecord)

        // And notes.md holds one side's version, the other side's is a conflict copy beside it
        var copy: String?
        let copied = await eventually(30) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: team.alice)) ?? []
            copy = names.first { $0.wholeMatch(of: Self.conflictName) != nil }
            return copy != nil && FileManager.default.fileExists(atPath: "\(team.bob)/\(copy!)")
        }
        #expect(copied, "no conflict copy in \((try? FileManager.default.contentsOfDirectory(atPath: team.alice)) ?? [])")
        guard let copy, let loser = copy.wholeMatch(of: Self.conflictName)?.1 else { return }
        let versions = [fileText("\(team.alice)/notes.md"), fileText("\(team.alice)/\(copy)")]
        let alices = "a\nb\nc by alice\nd\ne\n"
        let bobs = "a\nb\nc by bob\nd\ne\n"
        #expect(versions == (loser == "bob" ? [alices, bobs] : [bobs, alices]), "note and copy: \(versions)")
        #expect(await eventually { fileText("\(team.bob)/notes.md") == versions[0] && fileText("\(team.bob)/\(copy)") == versions[1] })
        #expect(!(versions[0] ?? "").contains("<<<<<<<"))

        // And the side that made the copy lists it in `notes status` until it is deleted
        let loserMount = loser == "bob" ? people.bobMount! : people.aliceMount!
        let listed = Self.status(loserMount, people.daemon)?["conflicts"] as? [String] ?? []
        #expect(listed.contains { $0.hasSuffix("/Team/\(copy)") }, "status lists \(listed)")
        #expect(Shell.run("rm '\(copy)'", in: loser == "bob" ? team.bob : team.alice).status == 0)
        #expect((Self.status(loserMount, people.daemon)?["conflicts"] as? [String])?.isEmpty == true)
    }

    @Test func conflictMarkersWhenTheUserAsksForThem() async throws {
        // Given alice's offline edit of a line of the shared plan, queued when her mount stops
        let people = try await TwoMounts(mountBob: true)
        let team = try await Self.sharedTeam(people, files: ["plan.md": "one\ntwo\nthree\n"])
        try await people.daemon.stop()
        #expect(Shell.run("sed -i 's/^two$/two by alice/' plan.md", in: team.alice).status == 0)
        #expect(people.aliceMount.stop(), "the mount did not exit on SIGTERM; its log:\n\(people.aliceMount.log())")
        // and bob's edit of the same line once notesd is back
        try await people.daemon.restart()
        #expect(await eventually(20) { Self.status(people.bobMount!, people.daemon)?["daemon"] as? String == "online" })
        #expect(Shell.run("sed -i 's/^two$/two by bob/' plan.md", in: team.bob).status == 0)
        #expect(await eventually { (try? await people.alice.zoneChanges(Self.work, since: nil).records.contains { $0.body == "one\ntwo by bob\nthree\n" }) == true })

        // When alice's mount comes back with --conflict-markers
        people.aliceMount.extraArguments = ["--conflict-markers"]
        try people.aliceMount.start()

        // Then the note holds both lines between markers, on both mounts, and no copy is made
        let marked = "one\n<<<<<<< alice (here)\ntwo by alice\n=======\ntwo by bob\n>>>>>>> bob\nthree\n"
        #expect(
            await eventually(20) { fileText("\(team.alice)/plan.md") == marked && fileText("\(team.bob)/plan.md") == marked },
            "alice sees \(fileText("\(team.alice)/plan.md") ?? "nothing")")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: team.alice)) ?? []) == ["plan.md"])
    }

    @Test func renamesDeletesAndFolderRemovalsReplayAfterOfflineWork() async throws {
        // Given the shared folder Team with notes and a subfolder Old
        let people = try await TwoMounts(mountBob: true)
        let team = try await Self.sharedTeam(
            people,
            files: [
                "a.md": "a\n", "c.md": "c\n", "gone.md": "gone\n", "Old/x.md": "x\n",
            ])
        let records = ["a.md", "c.md"].map { xattr("\(team.alice)/\($0)", "record") }

        // When alice, offline, renames then edits, edits then renames, deletes a note and the folder Old,
        // then her mount stops with all of it queued
        try await people.daemon.stop()
        let offline = "mv a.md b.md && printf 'by alice\\n' >> b.md && printf 'by alice\\n' >> c.md && mv c.md d.md && rm gone.md && rm -r Old"
        #expect(Shell.run(offline, in: team.alice).status == 0)
        #expect(people.aliceMount.stop(), "the mount did not exit on SIGTERM; its log:\n\(people.aliceMount.log())")
        // and meanwhile bob, online again, edits the note she deleted and adds a note to Old
        try await people.daemon.restart()
        #expect(await eventually(20) { fileText("\(team.bob)/gone.md") == "gone\n" })
        #expect(Shell.run("printf 'bob keeps this\\n' >> gone.md && printf 'new\\n' > Old/new.md", in: team.bob).status == 0)
        let bobUploaded = await eventually(20) {
            let names = (try? await people.alice.zoneChanges(Self.work, since: nil).records.map(\.name)) ?? []
            return names.contains("new.md")
        }
        #expect(bobUploaded)
        try people.aliceMount.start()

        // Then renames and edits land on the same records, the edited note and the folder with bob's note survive
        let expected: [String: String] = ["b.md": "a\nby alice\n", "d.md": "c\nby alice\n", "gone.md": "gone\nbob keeps this\n", "new.md": "new\n"]
        var server: [String: String] = [:]
        let settled = await eventually(30) {
            let records = (try? await people.alice.zoneChanges(Self.work, since: nil).records) ?? []
            server = Dictionary(records.filter { $0.recordType == .note }.map { ($0.name, $0.body ?? "") }, uniquingKeysWith: { a, _ in a })
            return server == expected && records.contains { $0.name == "Old" }
        }
        #expect(settled, "the server has \(server); alice's log:\n\(people.aliceMount.log().suffix(4000))")
        #expect(
            ["b.md", "d.md"].map { xattr("\(team.alice)/\($0)", "record") } == records,
            "alice's Team holds \(Shell.run("find .", in: team.alice).stdout); her log:\n\(people.aliceMount.log().suffix(60000))")
        #expect(
            await eventually { fileText("\(team.alice)/gone.md") == "gone\nbob keeps this\n" && fileText("\(team.alice)/Old/new.md") == "new\n" },
            "alice's Team holds \(Shell.run("find .", in: team.alice).stdout); her log:\n\(Self.notices(people.aliceMount))")
        #expect(!FileManager.default.fileExists(atPath: "\(team.alice)/Old/x.md"))
        #expect(await eventually { !FileManager.default.fileExists(atPath: "\(team.bob)/a.md") && fileText("\(team.bob)/b.md") == "a\nby alice\n" })
    }

    @Test func anEditToAShareThatWasRemovedMeanwhileIsKeptAmongOwnNotes() async throws {
        // Given bob edits alice's shared note while notesd is away, and his mount stops
        let people = try await TwoMounts(mountBob: true)
        let team = try await Self.sharedTeam(people, files: ["plan.md": "the plan\n"])
        try await people.daemon.stop()
        #expect(Shell.run("printf 'bob was here\\n' >> plan.md", in: team.bob).status == 0)
        #expect(people.bobMount!.stop())

        // When alice removes him from the share before his mount comes back
        try await people.daemon.restart()
        let share = try #require(try await people.alice.shares().first)
        _ = try await people.alice.removeParticipant(shareID: share.id, name: "bob")
        try people.bobMount!.start()

        // Then his edit is a note of his own, listed as a conflict, and alice's note is unchanged
        let bobPrivate = people.bobMount!.path("private")
        var copy: String?
        let kept = await eventually(20) {
            copy = ((try? FileManager.default.contentsOfDirectory(atPath: bobPrivate)) ?? []).first { $0.hasPrefix("plan (conflict, bob, ") }
            return copy.map { fileText("\(bobPrivate)/\($0)") == "the plan\nbob was here\n" } ?? false
        }
        #expect(kept, "bob's private/ holds \((try? FileManager.default.contentsOfDirectory(atPath: bobPrivate)) ?? []); his log:\n\(Self.notices(people.bobMount!))")
        // (the share's folder goes with the next look at bob's zones, which may come just after)
        #expect(await eventually { !FileManager.default.fileExists(atPath: people.bobMount!.path("shared/alice/Team")) })
        #expect(fileText("\(team.alice)/plan.md") == "the plan\n")
        #expect((Self.status(people.bobMount!, people.daemon)?["conflicts"] as? [String])?.contains("private/\(copy ?? "?")") == true)
        let uploaded = await eventually {
            let records = (try? await people.bob.zoneChanges(ZoneID(owner: "bob", name: ZoneID.defaultZoneName), since: nil).records) ?? []
            return records.contains { $0.name == copy && $0.body == "the plan\nbob was here\n" }
        }
        #expect(uploaded)
    }

    @Test func aSaveQueuedWhenTheMountIsKilledUploadsFromTheNextMount() async throws {
        // Given a mount whose uploads hang (notesd stopped with SIGSTOP)
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        #expect(Shell.run("printf 'first\\n' > first.md", in: root).status == 0)
        #expect(await eventually { (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records.count) == 1 })
        kill(people.daemon.process.processIdentifier, SIGSTOP)

        // When a save reaches the replica and the mount is killed before uploading it
        #expect(Shell.run("printf 'queued\\n' > queued.md && printf 'more\\n' >> first.md", in: root).status == 0)
        let replica = try #require(try FileManager.default.contentsOfDirectory(atPath: people.aliceMount.cacheDir).first { $0.hasSuffix(".replica.sqlite") })
        let queued = await eventually {
            Shell.run("sqlite3 '\(people.aliceMount.cacheDir)/\(replica)' 'SELECT COUNT(*) FROM records WHERE dirty > 0'").stdout == "2\n"
        }
        #expect(queued, "the saves never reached the replica")
        #expect(people.aliceMount.stop(signal: SIGKILL))
        kill(people.daemon.process.processIdentifier, SIGCONT)

        // Then the next mount uploads both
        try people.aliceMount.start()
        let uploaded = await eventually(20) {
            let records = (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []
            return Set(records.map { "\($0.name)=\($0.body ?? "")" }) == ["first.md=first\nmore\n", "queued.md=queued\n"]
        }
        #expect(uploaded, "mount log:\n\(people.aliceMount.log().suffix(3000))")
    }

    @Test func aFullCacheDiskRefusesWritesAndKeepsWhatWasSaved() async throws {
        // Given a mount whose replica lives on a 3 MiB tmpfs
        let daemon = try await DaemonProcess.started()
        let token = try await daemon.client().createAccount(name: "alice").token
        let client = daemon.client(token: token)
        let mount = try MountProcess(daemon: daemon, token: token, cacheSize: "3m")
        let root = mount.path("private")

        // When a script writes 200 KiB notes until the disk is full
        let script = """
            import errno, os
            block = b'x' * 1023 + b'\\n'
            for i in range(40):
                try:
                    with open('n%02d.md' % i, 'wb') as f:
                        f.write(block * 200)
                except OSError as e:
                    print('full at %d: %s' % (i, errno.errorcode[e.errno]))
                    break
            """
        let result = Shell.run("python3 -c \"\(script)\"", in: root)
        let full = result.stdout.firstMatch(of: #/full at (\d+): (\w+)/#)
        #expect(full?.2 == "ENOSPC", "\(result)\n\(Shell.run("ls -la '\(root)'; df '\(mount.cacheDir)'"))\n\(mount.log().suffix(3000))")
        let saved = Int(full?.1 ?? "0") ?? 0
        #expect(saved >= 2, "the disk took only \(saved) notes")

        // Then every note saved before reads back whole, in the mount and on the server
        let expected = String(repeating: String(repeating: "x", count: 1023) + "\n", count: 200)
        for i in 0..<saved {
            #expect(fileText("\(root)/n\(String(format: "%02d", i)).md") == expected, "n\(i).md changed")
        }
        let uploaded = await eventually(20) {
            let records = (try? await client.zoneChanges(ZoneID(owner: "alice", name: ZoneID.defaultZoneName), since: nil).records) ?? []
            return records.filter { $0.body == expected }.count == saved
        }
        #expect(uploaded)
    }

    @Test func writesRefusedByAFullDiskGoThroughOnceThereIsRoomAgain() async throws {
        // Given a mount whose replica lives on an 8 MiB tmpfs, 5 MiB of it taken by a file
        let daemon = try await DaemonProcess.started()
        let token = try await daemon.client().createAccount(name: "alice").token
        let client = daemon.client(token: token)
        let mount = try MountProcess(daemon: daemon, token: token, cacheSize: "8m")
        let filler = "\(mount.cacheDir)/filler"
        #expect(Shell.run("head -c \(5 << 20) /dev/zero > '\(filler)'").status == 0)
        let root = mount.path("private")

        // When notes are written until one is refused
        let script = """
            import errno, os
            block = b'y' * 1023 + b'\\n'
            for i in range(40):
                stage = 'open'
                try:
                    f = open('r%02d.md' % i, 'wb')
                    stage = 'write'
                    f.write(block * 200)
                    stage = 'close'
                    f.close()
                except OSError as e:
                    print('full at %d: %s in %s' % (i, errno.errorcode[e.errno], stage))
                    break
            """
        let result = Shell.run("python3 -c \"\(script)\"", in: root)
        let full = try #require(result.stdout.firstMatch(of: #/full at (\d+): ENOSPC in (\w+)/#), "\(result)\n\(mount.log().suffix(3000))")
        let refused = Int(full.1) ?? 0
        // and room is made again (enough for SQLite to move its log into the database),
        // and the refused note written again
        try FileManager.default.removeItem(atPath: filler)
        let name = String(format: "r%02d.md", refused)
        let again = Shell.run("python3 -c \"open('\(name)', 'wb').write((b'y' * 1023 + b'\\\\n') * 200)\"", in: root)
        #expect(again.status == 0, "\(again)\n\(mount.log().suffix(3000))")

        // Then it is saved whole, in the mount and on notesd, as are those before it
        let expected = String(repeating: String(repeating: "y", count: 1023) + "\n", count: 200)
        #expect(fileText("\(root)/\(name)") == expected)
        let uploaded = await eventually(30) {
            let records = (try? await client.zoneChanges(ZoneID(owner: "alice", name: ZoneID.defaultZoneName), since: nil).records) ?? []
            return Set(records.filter { $0.body == expected }.map(\.name)).isSuperset(of: (0...refused).map { String(format: "r%02d.md", $0) })
        }
        #expect(uploaded, "\(Shell.run("ls -la '\(mount.cacheDir)'; df '\(mount.cacheDir)'"))\nmount log:\n\(mount.log().suffix(3000))")
    }

    @Test func notesOverTheDaemonsSizeLimitGetEFBIG() async throws {
        let people = try await TwoMounts()
        let answers = errnos(
            people.aliceMount.path("private"),
            [
                ("big", "open('big.md', 'wb').write(b'x' * (17 << 20))"),
                ("small", "open('small.md', 'w').write('s')"),
                ("truncate", "os.truncate('small.md', 17 << 20)"),
            ])
        #expect(answers == ["big": "EFBIG", "small": "ok", "truncate": "EFBIG"])
        #expect(fileText(people.aliceMount.path("private/small.md")) == "s")
    }

    /// Random edits on both mounts of shared notes, with notesd stopped and started at
    /// random, and then every line either side wrote must be somewhere on the server.
    @Test func randomizedSoakLosesNoLine() async throws {
        let seed = ProcessInfo.processInfo.environment["NOTES_SOAK_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        print("soak seed \(seed) (replay with NOTES_SOAK_SEED=\(seed))")
        var random = SplitMix(seed: seed)
        let people = try await TwoMounts(mountBob: true)
        let notes = ["one.md", "two.md", "three.md"]
        let team = try await Self.sharedTeam(people, files: Dictionary(uniqueKeysWithValues: notes.map { ($0, "\($0)\n") }))
        var written: [String] = []
        var trace: [String] = []
        var daemonUp = true
        for round in 0..<12 {
            if random.next() % 4 == 0 {
                if daemonUp { try await people.daemon.stop() } else { try await people.daemon.restart() }
                daemonUp.toggle()
                trace.append(daemonUp ? "notesd started" : "notesd stopped")
            }
            for (who, folder) in [("alice", team.alice), ("bob", team.bob)] where random.next() % 3 != 0 {
                let note = notes[Int(random.next() % UInt64(notes.count))]
                let line = "round \(round) by \(who) in \(note)"
                // Either at the end or at the top: both kinds of overlap happen.
                let command =
                    random.next() % 2 == 0
                    ? "printf '%s\\n' '\(line)' >> '\(note)'"
                    : "sed -i '1i \(line)' '\(note)'"
                let result = Shell.run(command, in: folder)
                #expect(result.status == 0, "\(who): \(command): \(result)")
                if result.status == 0 { written.append(line) }
                trace.append("\(who): \(command)")
            }
            try await Task.sleep(for: .milliseconds(Int(random.next() % 400)))
        }
        if !daemonUp { try await people.daemon.restart() }

        var missing: [String] = []
        let kept = await eventually(60) {
            let records = (try? await people.alice.zoneChanges(Self.work, since: nil).records) ?? []
            let text = records.compactMap(\.body).joined(separator: "\n")
            missing = written.filter { !text.contains($0) }
            return missing.isEmpty
        }
        var history: [String] = []
        if !kept {
            for record in (try? await people.alice.zoneChanges(Self.work, since: nil).records) ?? [] where record.recordType == .note {
                for version in ((try? await people.alice.versions(of: record.recordName, in: Self.work)) ?? []).reversed() {
                    history.append("\(version.name) \(version.changeTag) by \(version.modifiedBy): \((version.body ?? "").replacingOccurrences(of: "\n", with: " | "))")
                }
            }
        }
        #expect(kept, "seed \(seed): lost \(missing)\n\(history.joined(separator: "\n"))\n\(trace.joined(separator: "\n"))")
        #expect(kept, "seed \(seed): lost \(missing)\n\(trace.joined(separator: "\n"))\nalice:\n\(Self.notices(people.aliceMount))\nbob:\n\(Self.notices(people.bobMount!))")
        // and both mounts settle on the same notes
        let same = await eventually(30) {
            let aliceNames = Set((try? FileManager.default.contentsOfDirectory(atPath: team.alice)) ?? [])
            let bobNames = Set((try? FileManager.default.contentsOfDirectory(atPath: team.bob)) ?? [])
            return aliceNames == bobNames && aliceNames.allSatisfy { fileText("\(team.alice)/\($0)") == fileText("\(team.bob)/\($0)") }
        }
        #expect(same, "seed \(seed): the mounts differ")
    }

    // MARK: Helpers

    /// alice's zone Work, where the shared folder lives.
    static let work = ZoneID(owner: "alice", name: "Work")

    /// alice's `private/Work/Team` with `files` (paths inside it), shared read-write with bob
    /// and shown in both mounts.
    static func sharedTeam(_ people: TwoMounts, files: [String: String]) async throws -> (alice: String, bob: String) {
        let team = people.aliceMount.path("private/Work/Team")
        try FileManager.default.createDirectory(atPath: team, withIntermediateDirectories: true)
        for (path, text) in files {
            try FileManager.default.createDirectory(atPath: (("\(team)/\(path)") as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: "\(team)/\(path)", atomically: false, encoding: .utf8)
        }
        let folders = Set(files.keys.compactMap { $0.contains("/") ? String($0.split(separator: "/")[0]) : nil })
        let uploaded = await eventually(20) {
            let count = (try? await people.alice.zoneChanges(work, since: nil).records.count) ?? 0
            return count == 1 + files.count + folders.count && xattr(team, "record") != nil
        }
        #expect(uploaded)
        let folder = try #require(xattr(team, "record"))
        try await people.shareWithBob(zone: work, root: folder, permission: .readWrite)
        let bobTeam = try people.mountBob().path("shared/alice/Team")
        let shown = await eventually(20) { files.allSatisfy { fileText("\(bobTeam)/\($0.key)") == $0.value } }
        #expect(shown, "bob's mount never showed Team")
        return (team, bobTeam)
    }

    /// The mount's log without its debug lines, for failure messages.
    static func notices(_ mount: MountProcess) -> String {
        mount.log().split(separator: "\n").filter { !$0.contains(" debug ") }.suffix(80).joined(separator: "\n")
    }

    /// `notes status --json` as the mount's user sees it: no --cache-dir, the running
    /// mount is found through its registration.
    static func status(_ mount: MountProcess, _ daemon: DaemonProcess) -> [String: Any]? {
        let result = Shell.run("'\(MountProcess.notesBinary)' status --json --socket '\(daemon.socket)'", environment: ["XDG_CACHE_HOME": mount.xdgCache])
        return try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    }
}

/// A small seeded generator, so a soak that fails can be run again the same way.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
