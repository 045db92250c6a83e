import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Two accounts, two mounts, one daemon: what one shares appears in the other's
/// `shared/<owner>/`, rights hold in the file system, and saves travel live.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "mount tests need /dev/fuse, which this machine lacks"))
struct SharedMountTests {
    @Test func readOnlyShareRefusesEveryWriteWithEACCES() async throws {
        // Given alice's folder Team (with a note) and note plan.md shared read-only with bob
        let people = try await TwoMounts()
        let work = try await people.alice.createZone(named: "Work").id
        let plan = try await people.saveNote(people.alice, zone: work, name: "plan.md", body: "alice's plan\n")
        let team = try await people.saveFolder(people.alice, zone: work, name: "Team")
        _ = try await people.saveNote(people.alice, zone: work, name: "notes.md", body: "team notes\n", parent: team.recordName)
        try await people.shareWithBob(zone: work, root: plan.recordName, permission: .readOnly)
        try await people.shareWithBob(zone: work, root: team.recordName, permission: .readOnly)
        let bob = try people.mountBob()
        let shared = bob.path("shared/alice")
        #expect(
            await eventually { fileText("\(shared)/plan.md") == "alice's plan\n" && fileText("\(shared)/Team/notes.md") == "team notes\n" },
            "bob's mount log:\n\(bob.log())\n\(Shell.run("ls -laR \(bob.mountpoint)"))")

        // Then modes say read-only, and every write fails with EACCES, even for root
        #expect(Shell.run("stat -c '%a' plan.md Team Team/notes.md", in: shared).stdout == "444\n555\n444\n")
        #expect(xattr("\(shared)/plan.md", "permission") == "readOnly")
        let answers = errnos(
            shared,
            [
                ("open for write", "open('plan.md', 'w')"),
                ("open for append", "open('plan.md', 'a')"),
                ("open read-write", "os.open('plan.md', os.O_RDWR)"),
                ("truncate", "os.truncate('plan.md', 0)"),
                ("unlink", "os.unlink('plan.md')"),
                ("rename", "os.rename('Team/notes.md', 'Team/moved.md')"),
                ("create in folder", "open('Team/new.md', 'x')"),
                ("mkdir in folder", "os.mkdir('Team/Sub')"),
                ("rmdir folder", "os.rmdir('Team')"),
                ("utime", "os.utime('plan.md', (1, 1))"),
                ("setxattr", "os.setxattr('plan.md', 'user.test', b'x')"),
                ("create beside shares", "open('new.md', 'x')"),
                ("mkdir beside shares", "os.mkdir('Mine')"),
                ("create in shared/", "open('../new.md', 'x')"),
            ])
        for (operation, errno) in answers.sorted(by: { $0.key < $1.key }) {
            #expect(errno == "EACCES", "\(operation) gave \(errno)")
        }
        #expect(answers.count == 14)
        #expect(Shell.run("echo x > plan.md", in: shared).status != 0)
        #expect(Shell.run("sed -i s/plan/PLAN/ plan.md", in: shared).status != 0)

        // And nothing changed, here or on the server
        #expect(fileText("\(shared)/plan.md") == "alice's plan\n")
        #expect(Shell.run("ls -A Team", in: shared).stdout == "notes.md\n")
        #expect(try await people.alice.records([plan.recordName], in: work).first?.body == "alice's plan\n")
        #expect(try await people.alice.zoneChanges(work, since: nil).records.count == 3)

        // Bob may read, so he may export what he reads as a site
        let site = "/tmp/export-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: site) }
        let export = Shell.run("'\(MountProcess.notesBinary)' export '\(shared)/Team' '\(shared)/plan.md' --html -o \(site) --json")
        #expect(export.status == 0, "\(export)")
        #expect(export.stdout.contains("\"pages\" : 2"), "\(export)")
        #expect(fileText("\(site)/Team/notes.html")?.contains("<p>team notes</p>") == true)
        #expect(fileText("\(site)/index.html")?.contains("href=\"plan.html\"") == true)
    }

    @Test func readWriteShareEditsTravelLiveBothWays() async throws {
        // Given a folder shared read-write, both mounted
        let people = try await TwoMounts(mountBob: true)
        let work = try await people.alice.createZone(named: "Work").id
        let folder = try await people.saveFolder(people.alice, zone: work, name: "Project")
        let note = try await people.saveNote(people.alice, zone: work, name: "todo.md", body: "- one\n", parent: folder.recordName)
        let share = try await people.shareWithBob(zone: work, root: folder.recordName, permission: .readWrite)
        let alicePath = people.aliceMount.path("private/Work/Project/todo.md")
        let bobPath = people.bobMount!.path("shared/alice/Project/todo.md")
        let arrived = await eventually { fileText(bobPath) == "- one\n" }
        #expect(arrived, "bob's mount log:\n\(people.bobMount!.log())\n\(Shell.run("ls -laR \(people.bobMount!.mountpoint)"))")
        // inode numbers come from the record: the same in both mounts
        #expect(Shell.run("stat -c %i '\(alicePath)'").stdout == Shell.run("stat -c %i '\(bobPath)'").stdout)

        // When bob edits with vim, alice's cat shows it without a remount
        let vim = Shell.run("vim -es -N -u NONE -c 'set backupcopy=no' -c 'normal Go- two' -c wq todo.md", in: people.bobMount!.path("shared/alice/Project"))
        #expect(vim.status == 0, "\(vim)")
        #expect(await eventually { fileText(alicePath) == "- one\n- two\n" }, "alice sees \(fileText(alicePath) ?? "nothing"), bob \(fileText(bobPath) ?? "nothing")")
        #expect(try await people.alice.versions(of: note.recordName, in: work).first?.modifiedBy == "bob")

        // and alice's edit reaches bob's open-and-cat
        #expect(Shell.run("printf -- '- three\\n' >> '\(alicePath)'").status == 0)
        #expect(await eventually { fileText(bobPath) == "- one\n- two\n- three\n" })

        // bob creates a note inside the share; alice sees it; it is in the share
        #expect(Shell.run("printf 'from bob' > idea.md", in: people.bobMount!.path("shared/alice/Project")).status == 0)
        #expect(await eventually { fileText(people.aliceMount.path("private/Work/Project/idea.md")) == "from bob" })
        #expect(xattr(people.aliceMount.path("private/Work/Project/idea.md"), "share") == share.id)

        // bob may not delete or move the share's root, nor write beside it
        let answers = errnos(
            people.bobMount!.path("shared/alice"),
            [
                ("rmdir root", "os.rmdir('Project')"),
                ("rename root", "os.rename('Project', 'Renamed')"),
                ("create beside", "open('beside.md', 'x')"),
            ])
        #expect(answers == ["rmdir root": "EACCES", "rename root": "EACCES", "create beside": "EACCES"])

        // When alice removes bob, the share leaves his mount at once
        _ = try await people.alice.removeParticipant(shareID: share.id, name: "bob")
        #expect(await eventually { !FileManager.default.fileExists(atPath: people.bobMount!.path("shared/alice/Project")) })
    }

    @Test func moveWithinAZoneKeepsRecordAndShare() async throws {
        // Given a shared zone with a note and a folder
        let people = try await TwoMounts()
        let work = try await people.alice.createZone(named: "Work").id
        let note = try await people.saveNote(people.alice, zone: work, name: "plan.md", body: "plan")
        let archive = try await people.saveFolder(people.alice, zone: work, name: "Archive")
        let share = try await people.shareWithBob(zone: work, root: nil, permission: .readOnly)
        let root = people.aliceMount.path("private/Work")
        #expect(await eventually { fileText("\(root)/plan.md") == "plan" && FileManager.default.fileExists(atPath: "\(root)/Archive") })
        // When alice moves and renames it with mv
        #expect(Shell.run("mv plan.md Archive/old-plan.md && mv Archive/old-plan.md Archive/plan-2025.md", in: root).status == 0)
        // Then it is the same record, now in Archive, still in the zone's share
        #expect(xattr("\(root)/Archive/plan-2025.md", "record") == note.recordName)
        #expect(
            await eventually {
                let record = try? await people.alice.records([note.recordName], in: work).first
                return record?.parent == archive.recordName && record?.name == "plan-2025.md" && record?.shareID == share.id
            })
        #expect(try await people.alice.versions(of: note.recordName, in: work).allSatisfy { $0.body == "plan" })
    }

    @Test func moveBetweenZonesOrIntoSharedIsEXDEV() async throws {
        let people = try await TwoMounts()
        let work = try await people.alice.createZone(named: "Work").id
        _ = try await people.saveNote(people.alice, zone: work, name: "a.md", body: "a")
        let root = people.aliceMount.path("private")
        #expect(await eventually { fileText("\(root)/Work/a.md") == "a" })
        let answers = errnos(
            root,
            [
                ("zone to default", "os.rename('Work/a.md', 'a.md')"),
                ("rename zone", "os.rename('Work', 'Work2')"),
                ("into shared", "os.rename('Work/a.md', '../shared/a.md')"),
            ])
        #expect(answers["zone to default"] == "EXDEV")
        #expect(answers["rename zone"] == "EXDEV")
        #expect(answers["into shared"] == "EXDEV")
        // mv falls back to copy and delete
        #expect(Shell.run("mv Work/a.md a.md", in: root).status == 0)
        #expect(fileText("\(root)/a.md") == "a")
        #expect(await eventually { (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records.map(\.name)) == ["a.md"] })
    }
}
