import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// What shells and editors send that is not a rename, and must still keep a note's
/// identity (record, share, history), and names that two notes want at once. The
/// sequences come from a report of a new user's run.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct SameNoteTests {
    /// Alice's `private/Team` zone shared read-write with Bob, with `plan.md` in it.
    static func sharedTeam() async throws -> (TwoMounts, team: String, bobTeam: String) {
        let people = try await TwoMounts(mountBob: true)
        let team = people.aliceMount.path("private/Team")
        #expect(Shell.run("mkdir '\(team)' && printf 'one\\n' > '\(team)/plan.md'").status == 0)
        let zone = ZoneID(owner: "alice", name: "Team")
        #expect(await eventually { ((try? await people.alice.zoneChanges(zone, since: nil).records) ?? []).contains { $0.name == "plan.md" } })
        try await people.shareWithBob(zone: zone, root: nil, permission: .readWrite)
        let bobTeam = try #require(people.bobMount).path("shared/alice/Team")
        #expect(await eventually { fileText("\(bobTeam)/plan.md") == "one\n" })
        return (people, team, bobTeam)
    }

    @Test func mvFromAnotherDiskOverASharedNoteKeepsItsRecordShareAndHistory() async throws {
        // Given a shared note and a file on another file system
        let (people, team, bobTeam) = try await Self.sharedTeam()
        let zone = ZoneID(owner: "alice", name: "Team")
        let record = try #require(xattr("\(team)/plan.md", "record"))
        let share = xattr("\(team)/plan.md", "share")
        let outside = "/tmp/plan-\(UUID().uuidString.prefix(8)).md"
        try "two\n".write(toFile: outside, atomically: false, encoding: .utf8)

        // When GNU mv moves it over the note (unlink, then create: EXDEV across disks)
        let moved = Shell.run("mv '\(outside)' '\(team)/plan.md'")
        #expect(moved.status == 0, "\(moved)")

        // Then it is the same record, with the same share and one more version
        #expect(xattr("\(team)/plan.md", "record") == record)
        #expect(xattr("\(team)/plan.md", "share") == share)
        let saved = await eventually { (try? await people.alice.records([record], in: zone).first?.body) == "two\n" }
        #expect(saved, "\(people.aliceMount.log().suffix(2000))")
        #expect(try await people.alice.versions(of: record, in: zone).count == 2)
        // and Bob sees it under its own name, with nothing beside it
        #expect(await eventually { fileText("\(bobTeam)/plan.md") == "two\n" })
        #expect(try FileManager.default.contentsOfDirectory(atPath: bobTeam) == ["plan.md"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: team) == ["plan.md"])
    }

    @Test func createCopyMoveInAndRenameOverConvergeOnBothMounts() async throws {
        // Given the shared zone
        let (people, team, bobTeam) = try await Self.sharedTeam()
        let zone = ZoneID(owner: "alice", name: "Team")
        let outside = "/tmp/x-\(UUID().uuidString.prefix(8)).md"
        let other = "\(team)/y.md"

        // When x.md is created, cp'd over, mv'd over from another disk, and renamed over
        // from inside the mount, each step reaching Bob before the next, as a person works
        func reachesBob(_ text: String) async -> Bool {
            await eventually(20) { fileText("\(bobTeam)/x.md") == text }
        }
        #expect(Shell.run("printf 'one\\n' > x.md", in: team).status == 0)
        #expect(await reachesBob("one\n"))
        #expect(Shell.run("printf 'two\\n' > /tmp/two-$$ && cp /tmp/two-$$ x.md && rm /tmp/two-$$", in: team).status == 0)
        #expect(await reachesBob("two\n"))
        try "three\n".write(toFile: outside, atomically: false, encoding: .utf8)
        #expect(Shell.run("mv '\(outside)' x.md", in: team).status == 0)
        #expect(await reachesBob("three\n"))
        #expect(Shell.run("printf 'four\\n' > '\(other)' && mv '\(other)' x.md", in: team).status == 0)

        // Then notesd, Alice and Bob all hold one x.md (and plan.md) reading "four"
        let converged = await eventually(20) {
            let records = ((try? await people.alice.zoneChanges(zone, since: nil).records) ?? []).filter { $0.recordType == .note }
            return Set(records.map(\.name)) == ["plan.md", "x.md"] && records.first { $0.name == "x.md" }?.body == "four\n"
                && fileText("\(bobTeam)/x.md") == "four\n"
        }
        #expect(converged, "alice: \(people.aliceMount.log().suffix(2000))\nbob: \(people.bobMount?.log().suffix(1500) ?? "")")
        #expect(fileText("\(team)/x.md") == "four\n")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: bobTeam)) == ["plan.md", "x.md"])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: team)) == ["plan.md", "x.md"])
        // and nothing is left queued on either side
        for mount in [people.aliceMount!, people.bobMount!] {
            #expect(await queueDrained(mount), "\(mount.log().suffix(2000))")
        }
    }

    @Test func aRemovedNoteIsDeletedOnNotesdOnceNoFileTakesItBack() async throws {
        // Given a note on notesd
        let (people, team, bobTeam) = try await Self.sharedTeam()
        // When it is removed and nothing is made under its name
        #expect(Shell.run("rm plan.md", in: team).status == 0)
        // Then it goes from notesd and from Bob's mount
        let gone = await eventually(20) {
            ((try? await people.alice.zoneChanges(ZoneID(owner: "alice", name: "Team"), since: nil).records) ?? []).isEmpty
                && !FileManager.default.fileExists(atPath: "\(bobTeam)/plan.md")
        }
        #expect(gone, "\(people.aliceMount.log().suffix(2000))")
    }

    @Test func twoNotesMadeUnderOneNameWhileApartBothStayVisible() async throws {
        // Given the shared zone and notesd stopped
        let (people, team, bobTeam) = try await Self.sharedTeam()
        try await people.daemon.stop()

        // When Alice and Bob each make same.md meanwhile
        #expect(Shell.run("printf 'from alice\\n' > same.md", in: team).status == 0)
        #expect(Shell.run("printf 'from bob\\n' > same.md", in: bobTeam).status == 0)
        try await people.daemon.restart()

        // Then both notes are on notesd and in both mounts, one of them as `same (2).md`,
        // without a remount
        let zone = ZoneID(owner: "alice", name: "Team")
        let bothThere = await eventually(30) {
            let records = (try? await people.alice.zoneChanges(zone, since: nil).records) ?? []
            let bodies = Dictionary(records.map { ($0.name, $0.body ?? "") }, uniquingKeysWith: { a, _ in a })
            let expected: Set<String> = ["from alice\n", "from bob\n"]
            return Set([bodies["same.md"], bodies["same (2).md"]].compactMap { $0 }) == expected
                && Set([fileText("\(team)/same.md"), fileText("\(team)/same (2).md")].compactMap { $0 }) == expected
                && Set([fileText("\(bobTeam)/same.md"), fileText("\(bobTeam)/same (2).md")].compactMap { $0 }) == expected
        }
        #expect(bothThere, "alice: \(people.aliceMount.log().suffix(2000))\nbob: \(people.bobMount?.log().suffix(2000) ?? "")")
    }
}

/// `notes status` finds the user's mounts by itself and lists what waits, and one
/// replica serves one mount.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct StatusTests {
    @Test func statusListsEachWaitingChangeOfEveryMountWithoutBeingToldWhere() async throws {
        // Given a mount whose replica is in a folder of its own, and notesd stopped
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        try await people.daemon.stop()
        // When a note is made
        #expect(Shell.run("printf 'waits\\n' > waiting.md", in: root).status == 0)
        // Then `notes status` (no --cache-dir) shows the mount and the change waiting
        let status = OfflineTests.status(people.aliceMount, people.daemon)
        #expect(status?["daemon"] as? String == "offline")
        #expect(status?["mounts"] as? [String] == [people.aliceMount.mountpoint], "\(String(describing: status))")
        #expect(status?["queued"] as? Int == 1)
        let waiting = status?["waiting"] as? [[String: Any]]
        #expect(waiting?.first?["name"] as? String == "waiting.md")
        #expect(waiting?.first?["change"] as? String == "create")
        let text = Shell.run("'\(MountProcess.notesBinary)' status --socket '\(people.daemon.socket)'", environment: ["XDG_CACHE_HOME": people.aliceMount.xdgCache])
        #expect(text.stdout.contains("create alice/_defaultZone/waiting.md"), "\(text)")
        // and once notesd is back, nothing
        try await people.daemon.restart()
        #expect(await queueDrained(people.aliceMount))
        #expect(OfflineTests.status(people.aliceMount, people.daemon)?["queued"] as? Int == 0)
    }

    @Test func aSecondMountOfTheSameReplicaIsRefusedClearly() async throws {
        // Given a running mount
        let people = try await TwoMounts()
        let other = "/var/tmp/nt-\(UUID().uuidString.prefix(8))"
        defer { _ = Shell.run("fusermount3 -u -z '\(other)'; rmdir '\(other)'") }
        // When a second mount of the same account is pointed at its replica
        let second = Shell.run(
            "timeout 20 '\(MountProcess.notesBinary)' mount '\(other)' --foreground --cache-dir '\(people.aliceMount.cacheDir)' --socket '\(people.daemon.socket)'",
            environment: ["NOTES_TOKEN": people.aliceToken])
        // Then it stops at once, saying which process holds it and what to do
        #expect(second.status != 0 && second.status != 124, "\(second)")
        #expect(second.stderr.contains("Another mount (process \(people.aliceMount.process.processIdentifier))"), "\(second)")
        #expect(second.stderr.contains("--cache-dir"))
        #expect(!MountProcess.isMounted(other))
    }
}
