import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// `.search/QUERY/` in a real mount, read with `ls`, `readlink`, `cat` and `vim`, and
/// `notes search` over the mount's replica while notesd is away.
@Suite(.enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct SearchFolderTests {
    @Test func searchFolderListsMatchesInRankOrderAsLinksToTheNotes() async throws {
        let people = try await TwoMounts()
        let root = people.aliceMount.path("")
        let made = Shell.run(
            """
            mkdir private/Work && printf '# Budget plan\\nreview the budget\\n' > private/plan.md \
            && printf 'travel budget for March\\n' > private/Work/trips.md && printf 'nothing here\\n' > private/other.md
            """, in: root)
        #expect(made.status == 0, "\(made)")
        // Found once the mount's index took the notes in (in the background).
        let listed = await eventually(20) { Shell.run("ls private/.search/budget", in: root).stdout == "1 plan.md\n2 trips.md\n" }
        #expect(listed, "\(Shell.run("ls private/.search/budget", in: root))\n\(people.aliceMount.log().suffix(2000))")
        // Links relative to where they sit, to the notes' real paths.
        #expect(Shell.run("readlink 'private/.search/budget/2 trips.md'", in: root).stdout == "../../../private/Work/trips.md\n")
        #expect(Shell.run("cat 'private/.search/budget/1 plan.md'", in: root).stdout == "# Budget plan\nreview the budget\n")
        // The folder scopes the search; the mount's root searches everything.
        #expect(Shell.run("ls private/Work/.search/budget", in: root).stdout == "1 trips.md\n")
        #expect(Shell.run("readlink 'private/Work/.search/budget/1 trips.md'", in: root).stdout == "../../../../private/Work/trips.md\n")
        #expect(Shell.run("ls .search/'plan OR nothing'", in: root).stdout.split(separator: "\n").count == 2)
        #expect(Shell.run("ls .search/zebra", in: root).stdout.isEmpty)
        // Reachable by name only, and read-only.
        #expect(!Shell.run("ls -a private", in: root).stdout.contains(".search"))
        let refused = errnos(
            "\(root)/private",
            [("create", "open('.search/budget/new.md', 'w')"), ("mkdir", "os.mkdir('.search/budget/y')"), ("remove", "os.remove('.search/budget/1 plan.md')")])
        #expect(refused == ["create": "EACCES", "mkdir": "EACCES", "remove": "EACCES"], "\(refused)")
        // A query that does not parse, or a second scope: EINVAL.
        let invalid = errnos("\(root)/private", [("date", "os.listdir('.search/modified:>soon')"), ("in", "os.listdir('.search/in:private budget')")])
        #expect(invalid == ["date": "EINVAL", "in": "EINVAL"], "\(invalid)")
        // An editor opening a result edits the note itself.
        let edited = Shell.run("vim -u NONE -es -c '%s/March/April/' -c 'wq' 'private/.search/travel/1 trips.md'", in: root)
        #expect(edited.status == 0, "\(edited)")
        #expect(fileText("\(root)/private/Work/trips.md") == "travel budget for April\n")
        #expect(Shell.run("readlink 'private/.search/travel/1 trips.md'", in: root).stdout == "../../../private/Work/trips.md\n")
        #expect(await eventually(20) { Shell.run("ls private/.search/april", in: root).stdout == "1 trips.md\n" })
    }

    @Test func notesSearchAnswersFromTheMountsCopyWhileNotesdIsAway() async throws {
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        #expect(Shell.run("mkdir Work && printf '# Budget plan\\nreview\\n' > Work/plan.md && printf '東京の会議\\n' > tokyo.md", in: root).status == 0)
        #expect(await eventually(20) { Shell.run("ls .search/budget", in: root).stdout == "1 plan.md\n" })
        #expect(await queueDrained(people.aliceMount))
        try await people.daemon.stop()
        let environment = ["XDG_CACHE_HOME": people.aliceMount.xdgCache]
        let search = { (arguments: String) in
            Shell.run("'\(MountProcess.notesBinary)' search \(arguments)", environment: environment.merging(["NOTES_SOCKET": people.daemon.socket]) { $1 })
        }
        let offline = search("budget")
        #expect(offline.status == 0, "\(offline)")
        #expect(offline.stdout.contains("this machine's copy") && offline.stdout.contains("private/Work/plan.md  Budget plan"), "\(offline)")
        let json = search("--json 東京")
        let page = try NotesJSON.decoder().decode(API.SearchResults.self, from: Data(json.stdout.utf8))
        #expect(page.offline == true && page.results.map(\.path) == ["private/tokyo.md"], "\(json)")
        #expect(search("'budget in:private/Work'").stdout.contains("private/Work/plan.md"))
        #expect(search("'budget in:private/Nowhere'").status != 0)
        // --offline asks the copy without trying notesd.
        #expect(search("--offline --json 会議").stdout.contains("private/tokyo.md"))
    }
}
