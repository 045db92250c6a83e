import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Every way editors and tools save a file keeps the note's identity: the same record,
/// the same share and participants, and exactly one more version in its history.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "mount tests need /dev/fuse, which this machine lacks"))
struct EditorSaveTests {
    struct Edit: CustomTestStringConvertible, Sendable {
        var label: String
        var command: String
        var expected: String
        var testDescription: String { label }
    }

    static let edits: [Edit] = [
        Edit(label: "write in place with >", command: "printf 'line two\\n' > plan.md", expected: "line two\n"),
        Edit(label: "append with >>", command: "printf 'more\\n' >> plan.md", expected: "line one\nmore\n"),
        Edit(label: "sed -i", command: "sed -i 's/one/uno/' plan.md", expected: "line uno\n"),
        Edit(
            label: "python write-then-os.replace",
            command:
                "python3 -c \"import os\nwith open('plan.md.new', 'w') as f:\n    f.write('from python\\\\n'); f.flush(); os.fsync(f.fileno())\nos.replace('plan.md.new', 'plan.md')\"",
            expected: "from python\n"),
        Edit(
            label: "vim -es, backup-and-rename", command: "vim -es -N -u NONE -c 'set backupcopy=no writebackup nobackup' -c '%s/one/vim/' -c 'wq' plan.md", expected: "line vim\n"),
        Edit(label: "vim -es, keeping a backup~", command: "vim -es -N -u NONE -c 'set backupcopy=no backup' -c '%s/one/kept/' -c 'wq' plan.md", expected: "line kept\n"),
        Edit(label: "vim -es, defaults", command: "vim -es -c '%s/one/plain/' -c 'wq' plan.md", expected: "line plain\n"),
        Edit(label: "cp over the note", command: "printf 'copied\\n' > /tmp/notes-cp-src && cp /tmp/notes-cp-src plan.md", expected: "copied\n"),
        Edit(label: "mv a new file over the note", command: "printf 'moved\\n' > other.md && mv other.md plan.md", expected: "moved\n"),
        Edit(label: "gedit-style temporary renamed over", command: "printf 'gio\\n' > .goutputstream-AB12CD && mv .goutputstream-AB12CD plan.md", expected: "gio\n"),
        Edit(label: "truncate", command: "truncate -s 4 plan.md", expected: "line"),
        Edit(label: "perl -pi (a temporary renamed over)", command: "perl -pi -e 's/one/perl/' plan.md", expected: "line perl\n"),
        Edit(
            label: "emacs, in place (its batch defaults)",
            command: "emacs --batch -Q plan.md --eval '(progn (while (search-forward \"one\" nil t) (replace-match \"emacs\")) (save-buffer))'",
            expected: "line emacs\n"),
        Edit(
            label: "emacs, backup by rename (its interactive defaults)",
            command:
                "emacs --batch -Q plan.md --eval '(progn (setq make-backup-files t backup-inhibited nil) (while (search-forward \"one\" nil t) (replace-match \"emacs\")) (save-buffer))'",
            expected: "line emacs\n"),
        Edit(label: "nano, typed at its prompt", command: nanoSession, expected: "line nano\n"),
        Edit(label: "Qt/Kate's QSaveFile (NAME.XXXXXX renamed over)", command: "printf 'qt\\n' > plan.md.Xq3vZ1 && mv plan.md.Xq3vZ1 plan.md", expected: "qt\n"),
        Edit(
            label: "IntelliJ's safe write (___jb_tmp___, ___jb_old___)",
            command: "printf 'jb\\n' > plan.md___jb_tmp___ && mv plan.md plan.md___jb_old___ && mv plan.md___jb_tmp___ plan.md && rm plan.md___jb_old___",
            expected: "jb\n"),
        Edit(
            label: "git checkout (unlink, then create)",
            command:
                "g=$(mktemp -d) && git -C $g init -q && printf 'line git\\n' > $g/plan.md && git -C $g add plan.md && git -C $g -c user.name=t -c user.email=t@t commit -qm x && git --git-dir=$g/.git --work-tree=. checkout -f HEAD -- plan.md; status=$?; rm -rf $g; exit $status",
            expected: "line git\n"),
    ]

    /// nano driven through tmux as a person would: cut the line, type, write out (^O,
    /// Enter), quit (^X). Each key waits until the screen shows nano is ready for it.
    static let nanoSession: String = {
        func waitFor(_ text: String) -> String {
            "for i in $(seq 600); do tmux capture-pane -p -t $s | grep -q '\(text)' && break; sleep 0.05; done"
        }
        return [
            "s=nano$$; tmux new-session -d -s $s -x 80 -y 24 'nano --ignorercfiles plan.md'", waitFor("line one"),
            "tmux send-keys -t $s C-k 'line nano' C-o", waitFor("File Name to Write"), "tmux send-keys -t $s Enter", waitFor("Wrote"),
            "tmux send-keys -t $s C-x", "for i in $(seq 600); do tmux has-session -t $s 2>/dev/null || break; sleep 0.05; done",
            "! tmux has-session -t $s 2>/dev/null",
        ].joined(separator: " && ")
    }()

    @Test(arguments: edits)
    func editKeepsIdentity(_ edit: Edit) async throws {
        // Given alice's note, shared read-write with bob, in the mounted zone Work
        let people = try await TwoMounts()
        let work = try await people.alice.createZone(named: "Work").id
        let note = try await people.saveNote(people.alice, zone: work, name: "plan.md", body: "line one\n")
        let share = try await people.shareWithBob(zone: work, root: note.recordName, permission: .readWrite)
        let folder = people.aliceMount.path("private/Work")
        #expect(await eventually { fileText("\(folder)/plan.md") == "line one\n" && xattr("\(folder)/plan.md", "share") == share.id })
        let versionsBefore = try await people.alice.versions(of: note.recordName, in: work).count

        // When the editor saves
        let result = Shell.run(edit.command, in: folder)
        #expect(result.status == 0, "\(edit.label): \(result)")

        // Then the file shows the new text and is still the same record in the same share
        #expect(fileText("\(folder)/plan.md") == edit.expected)
        #expect(xattr("\(folder)/plan.md", "record") == note.recordName)
        #expect(xattr("\(folder)/plan.md", "share") == share.id)
        let uploaded = await eventually {
            (try? await people.alice.records([note.recordName], in: work).first?.body) == edit.expected
        }
        #expect(uploaded, "the server never got the edit; mount log:\n\(people.aliceMount.log())")
        let record = try await people.alice.records([note.recordName], in: work).first
        #expect(record?.shareID == share.id)
        #expect(record?.name == "plan.md")
        let after = try await people.alice.share(id: share.id)
        #expect(
            after.participants
                == share.participants.map { participant in
                    var accepted = participant
                    if accepted.name == "bob" { accepted.status = .accepted }
                    return accepted
                })
        // one more version, and no stray records (temporaries, backups) on the server
        #expect(await queueDrained(people.aliceMount))
        let versions = try await people.alice.versions(of: note.recordName, in: work)
        #expect(
            versions.count == versionsBefore + 1,
            "\(versionsBefore) before: \(versions.map { "\($0.changeTag) by \($0.modifiedBy): \(($0.body ?? "").debugDescription)" })\nmount log:\n\(people.aliceMount.log().suffix(3_000))"
        )
        let everything = try await people.alice.zoneChanges(work, since: nil)
        #expect(everything.records.map(\.name) == ["plan.md"], "stray records: \(everything.records.map(\.name))")
    }

    @Test func scratchFilesWorkButAreNotUploaded() async throws {
        let people = try await TwoMounts()
        let folder = people.aliceMount.path("private")
        let names = [".plan.md.swp", "plan.md~", "4913", ".#plan.md", "#plan.md#", "draft.tmp"]
        for name in names {
            #expect(Shell.run("printf scratch > '\(name)' && cat '\(name)'", in: folder).stdout == "scratch")
        }
        #expect(Shell.run("printf '# real' > real.md", in: folder).status == 0)
        #expect(await eventually { (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records.count) == 1 })
        #expect(await queueDrained(people.aliceMount))
        #expect(try await people.alice.zoneChanges(people.aliceDefault, since: nil).records.map(\.name) == ["real.md"])
        let listing = Shell.run("ls -A", in: folder).stdout.split(separator: "\n").map(String.init).sorted()
        #expect(listing == (names + ["real.md"]).sorted())
    }
}
