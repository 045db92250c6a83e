import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// `.history/` and `.trash/` in a real mount, driven with `ls`, `cat`, `cp` and `mv`.
@Suite(.enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct TrashAndHistoryFolderTests {
    @Test func aNotesVersionsAreFilesInHistoryAndCpBringsOneBack() async throws {
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        for text in ["one\n", "one two\n", "one two three\n"] {
            #expect(Shell.run("printf '\(text)' > plan.md", in: root).status == 0)
            #expect(
                await eventually {
                    ((try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []).contains { $0.body == text }
                })
        }
        // Hidden: not in the folder's listing, even with -a; there by name.
        #expect(!Shell.run("ls -a", in: root).stdout.contains(".history"))
        let notes = Shell.run("ls .history", in: root)
        #expect(notes.status == 0 && notes.stdout == "plan.md\n", "\(notes)")
        let versions = Shell.run("ls .history/plan.md", in: root).stdout.split(separator: "\n").map(String.init)
        #expect(versions.count == 3, "\(versions)")
        #expect(versions.allSatisfy { $0.hasSuffix(".md") && $0.contains("_alice_") }, "\(versions)")
        // `ls` sorts by name, and the names sort by time: the oldest first.
        #expect(Shell.run("cat '.history/plan.md/\(versions[0])'", in: root).stdout == "one\n")
        #expect(Shell.run("cat '.history/plan.md/\(versions[2])'", in: root).stdout == "one two three\n")
        // Read-only, with the errors a script would see.
        let refused = errnos(
            root,
            [
                ("write", "open('.history/plan.md/\(versions[0])', 'w')"),
                ("create", "open('.history/new.md', 'w')"),
                ("remove", "os.remove('.history/plan.md/\(versions[0])')"),
                ("mkdir", "os.mkdir('.history/x')"),
            ])
        #expect(refused == ["write": "EACCES", "create": "EACCES", "remove": "EACCES", "mkdir": "EACCES"], "\(refused)")
        // cp out of it: the old text becomes the note's newest version.
        #expect(Shell.run("cp '.history/plan.md/\(versions[0])' plan.md", in: root).status == 0)
        #expect(
            await eventually {
                ((try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []).contains { $0.name == "plan.md" && $0.body == "one\n" }
            })
        #expect(await eventually { Shell.run("ls .history/plan.md", in: root).stdout.split(separator: "\n").count == 4 })
    }

    @Test func aDeletedNoteWaitsInTheTrashAndMvBringsTheSameNoteBack() async throws {
        let people = try await TwoMounts()
        // A notebook (a folder of private/ is a zone), a folder in it, a note in that.
        let book = people.aliceMount.path("private/Book")
        let zone = ZoneID(owner: "alice", name: "Book")
        #expect(
            Shell.run("mkdir Book && mkdir Book/Plans && printf 'keep me\\n' > Book/Plans/todo.md && printf 'x\\n' > Book/other.md", in: people.aliceMount.path("private")).status
                == 0)
        #expect(
            await eventually {
                ((try? await people.alice.zoneChanges(zone, since: nil).records) ?? []).contains { $0.name == "todo.md" && $0.body == "keep me\n" }
            })
        let before = try #require(try await people.alice.zoneChanges(zone, since: nil).records.first { $0.name == "todo.md" })
        #expect(Shell.run("rm -r Plans", in: book).status == 0)
        #expect(await eventually { ((try? await people.alice.trash(in: zone)) ?? []).count == 2 })
        // The trash shows the folder, and the note inside it.
        #expect(Shell.run("ls .trash", in: book).stdout == "Plans\n")
        #expect(Shell.run("cat .trash/Plans/todo.md", in: book).stdout == "keep me\n")
        let trashed = try await people.alice.trash(in: zone)
        #expect(trashed.allSatisfy { $0.deletedBy == "alice" }, "\(trashed)")
        // mv out of the trash: the same records come back, the note inside its folder.
        let moved = Shell.run("mv .trash/Plans Plans", in: book)
        #expect(moved.status == 0, "\(moved)")
        #expect(fileText("\(book)/Plans/todo.md") == "keep me\n")
        let after = try await people.alice.zoneChanges(zone, since: nil).records.first { $0.name == "todo.md" }
        #expect(after?.recordName == before.recordName)
        #expect(Shell.run("ls .trash", in: book).stdout.isEmpty)
        // Onto a taken name: EEXIST; into the trash: EACCES (delete instead).
        #expect(Shell.run("rm other.md", in: book).status == 0)
        // (The mount shows it once its fetch brings the delete back from notesd.)
        #expect(await eventually { Shell.run("ls .trash", in: book).stdout == "other.md\n" })
        #expect(Shell.run("printf 'new\\n' > other.md", in: book).status == 0)
        let codes = errnos(book, [("taken", "os.rename('.trash/other.md', 'other.md')"), ("into", "os.rename('other.md', '.trash/x.md')")])
        #expect(codes == ["taken": "EEXIST", "into": "EACCES"], "\(codes)")
        // The default zone's trash is at private/.trash, its own.
        #expect(Shell.run("ls -a .trash", in: people.aliceMount.path("private")).stdout == ".\n..\n")
    }

    @Test func aReadOnlyParticipantSeesTheSharesTrashButCannotRestore() async throws {
        let people = try await TwoMounts(mountBob: true)
        let zone = try await people.alice.createZone(named: "Team").id
        _ = try await people.saveNote(people.alice, zone: zone, name: "gone.md", body: "was shared\n", recordName: "gone")
        try await people.shareWithBob(zone: zone, root: nil, permission: .readOnly)
        _ = try await people.alice.modify(ModifyRequest(zone: zone, deletes: [RecordDelete(recordName: "gone")]))
        let bobMount = try #require(people.bobMount)
        let teamFolder = bobMount.path("shared/alice/Team")
        #expect(await eventually { FileManager.default.fileExists(atPath: teamFolder) })
        #expect(await eventually { Shell.run("ls .trash", in: teamFolder).stdout == "gone.md\n" })
        let codes = errnos(teamFolder, [("restore", "os.rename('.trash/gone.md', 'gone.md')")])
        #expect(codes["restore"] == "EACCES", "\(codes)")
        #expect(try await people.alice.trash(in: zone).map(\.recordName) == ["gone"])
    }

    @Test func changesFromElsewhereAreLinesOfNotesEventsThatTailFollows() async throws {
        let people = try await TwoMounts()
        let events = people.aliceMount.path(".notes/events")
        #expect(await eventually { FileManager.default.fileExists(atPath: events) })
        #expect(!Shell.run("ls -a", in: people.aliceMount.path("")).stdout.contains(".notes"))
        // tail -f, as a user would run it, beside the mount.
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("tail-\(UUID().uuidString).txt").path
        // (Its PID, to end it before the mount goes: an open file keeps a mount busy.)
        let tail = Shell.run("timeout 60 tail -n +1 -f '\(events)' > '\(output)' 2>&1 & echo $!")
        let pid = try #require(Int32(tail.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(tail)")
        defer {
            kill(pid, SIGTERM)
            try? FileManager.default.removeItem(atPath: output)
        }
        // What the mount's first fetch brings is its starting point, not news: wait for it.
        try await people.saveNote(people.alice, zone: people.aliceDefault, name: "before.md", body: "x\n")
        #expect(await eventually(30) { FileManager.default.fileExists(atPath: people.aliceMount.path("private/before.md")) })
        // Saved elsewhere (through the API, as from another machine): a line with who and where.
        let saved = try await people.saveNote(people.alice, zone: people.aliceDefault, name: "from-laptop.md", body: "hello\n")
        #expect(await eventually(30) { (fileText(output) ?? "").contains("\"path\":\"private/from-laptop.md\"") }, "\(fileText(output) ?? "")")
        _ = try await people.alice.modify(ModifyRequest(zone: people.aliceDefault, deletes: [RecordDelete(recordName: saved.recordName)]))
        #expect(await eventually(30) { (fileText(output) ?? "").contains("\"change\":\"deleted\"") }, "\(fileText(output) ?? "")")
        let lines = (fileText(output) ?? "").split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let save = try #require(lines.first { $0["change"] as? String == "saved" && $0["name"] as? String == "from-laptop.md" })
        #expect(save["by"] as? String == "alice" && save["recordName"] as? String == saved.recordName && save["at"] is String)
        let gone = try #require(lines.first { $0["change"] as? String == "deleted" })
        #expect(gone["path"] as? String == "private/from-laptop.md" && gone["recordName"] as? String == saved.recordName)
        // Read-only.
        #expect(errnos(people.aliceMount.path(".notes"), [("write", "open('events', 'a')")]) == ["write": "EACCES"])
    }

    @Test func aHungNotesdNeverHoldsALookIntoHistoryOrTrash() async throws {
        // Given two notes, one of whose versions alice has listed
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        #expect(Shell.run("printf 'one\\n' > plan.md && printf 'two\\n' > other.md", in: root).status == 0)
        #expect(await eventually { (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records.count) == 2 })
        let listed = Shell.run("ls .history/plan.md", in: root)
        #expect(listed.status == 0 && listed.stdout.hasSuffix(".md\n"), "\(listed)")

        // When notesd stops answering (SIGSTOP: its connections stay open)
        kill(people.daemon.process.processIdentifier, SIGSTOP)
        defer { kill(people.daemon.process.processIdentifier, SIGCONT) }

        // Then what was listed lists again from the mount's last answer,
        #expect(Shell.run("ls .history/plan.md", in: root).stdout == listed.stdout)
        // and what was never asked fails in seconds, saying why, rather than in half a minute
        let start = ContinuousClock.now
        let history = Shell.run("ls .history/other.md", in: root)
        let trash = Shell.run("ls .trash", in: root)
        #expect(ContinuousClock.now - start < .seconds(20), "waited \(ContinuousClock.now - start)")
        // (`ETIMEDOUT`, or `EAGAIN` once the mount has noticed notesd is away)
        for failed in [history, trash] {
            #expect(failed.status != 0 && (failed.stderr.contains("timed out") || failed.stderr.contains("temporarily unavailable")), "\(failed)")
        }

        // And once notesd answers again, so do they.
        kill(people.daemon.process.processIdentifier, SIGCONT)
        #expect(await eventually { Shell.run("ls .history/other.md", in: root).stdout.hasSuffix(".md\n") })
        #expect(await eventually { Shell.run("ls .trash", in: root).status == 0 })
    }
}
