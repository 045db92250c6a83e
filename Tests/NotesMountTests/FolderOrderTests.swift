import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Sequences of folder operations that fsstress (renames and rmdirs, `-n 2000 -p 4`)
/// showed going wrong on notesd although the mount showed them right: a note moved to
/// the top of its zone, and a folder removed here coming back.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct FolderOrderTests {
    /// Every path of a zone on notesd, as `folder/name`.
    static func paths(_ client: NotesClient, _ zone: ZoneID) async throws -> Set<String> {
        let records = try await client.zoneChanges(zone, since: nil).records
        let byName = Dictionary(records.map { ($0.recordName, $0) }, uniquingKeysWith: { a, _ in a })
        return Set(
            records.map { record in
                var path = record.name
                var parent = record.parent
                while let folder = parent.flatMap({ byName[$0] }) {
                    path = folder.name + "/" + path
                    parent = folder.parent
                }
                return path
            })
    }

    @Test func aNoteMovedIntoANewFolderThatIsThenRenamedStaysInIt() async throws {
        // Given a note on notesd, and python holding a file open for writing (its upload
        // waits for the close, and holds the queue behind it)
        let people = try await TwoMounts()
        let work = try await people.alice.createZone(named: "Work").id
        let root = people.aliceMount.path("private/Work")
        #expect(await eventually { FileManager.default.fileExists(atPath: root) })
        #expect(Shell.run("printf 'hello\\n' > fb0", in: root).status == 0)
        #expect(await eventually { (try? await Self.paths(people.alice, work)) == ["fb0"] })

        // When it makes a folder, moves the note in, opens a second file, renames the
        // folder (whose row is now queued behind the note's and the second file's) and
        // closes the first file; the second stays open until the first is on notesd
        // (the steps of fsstress's seed 4)
        let go = "/tmp/go-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: go) }
        let script = """
            import os, time
            h1 = os.open('h1', os.O_CREAT | os.O_WRONLY); os.write(h1, b'1'); os.fsync(h1)
            os.mkdir('F')
            os.rename('fb0', 'F/fb0')
            h2 = os.open('h2', os.O_CREAT | os.O_WRONLY); os.write(h2, b'2'); os.fsync(h2)
            os.rename('F', 'G')
            os.close(h1)
            while not os.path.exists('\(go)'): time.sleep(0.01)
            os.close(h2)
            """
        let running = Task { await Shell.runOnOwnThread("/usr/bin/python3 -c \"\(script)\"", in: root) }
        #expect(await eventually(30) { (try? await Self.paths(people.alice, work))?.contains("h1") == true })
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        let run = await running.value
        #expect(run.status == 0, "\(run)")

        // Then notesd holds the note in the renamed folder, as the mount shows it
        #expect(await queueDrained(people.aliceMount, 60))
        let onNotesd = try await Self.paths(people.alice, work)
        #expect(onNotesd == ["G", "G/fb0", "h1", "h2"], "mount log:\n\(people.aliceMount.log().suffix(3_000))")
        #expect(FileManager.default.fileExists(atPath: "\(root)/G/fb0"))
        #expect(!people.aliceMount.log().contains("was deleted elsewhere"), "\(people.aliceMount.log().suffix(3_000))")
    }

    @Test func aFolderEmptiedByAMoveAndRemovedStaysRemoved() async throws {
        // Given two folders on notesd, one holding a note
        let people = try await TwoMounts()
        let work = try await people.alice.createZone(named: "Work").id
        let root = people.aliceMount.path("private/Work")
        #expect(await eventually { FileManager.default.fileExists(atPath: root) })
        #expect(Shell.run("mkdir F2 G && printf 'k\\n' > F2/k2", in: root).status == 0)
        #expect(await eventually { (try? await Self.paths(people.alice, work)) == ["F2", "F2/k2", "G"] })

        // When the note moves out and the folder is removed at once (one upload)
        #expect(Shell.run("mv F2/k2 G/k2 && rmdir F2", in: root).status == 0)

        // Then the folder is gone on notesd too, and the note is where it was moved
        #expect(await queueDrained(people.aliceMount, 60))
        #expect(try await Self.paths(people.alice, work) == ["G", "G/k2"], "mount log:\n\(people.aliceMount.log().suffix(3_000))")
        #expect(!FileManager.default.fileExists(atPath: "\(root)/F2"))
    }
}
