import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// `notes history` on a note saved three times in a real mount.
@Suite(.enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct HistoryTests {
    struct Entry: Decodable {
        var changeTag: String
        var size: Int
    }

    /// Regression: the newest version was listed twice (as the record and as the
    /// history's first entry).
    @Test func historyListsEachVersionOnceNewestFirst() async throws {
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        for text in ["one\n", "one two\n", "one two three\n"] {
            #expect(Shell.run("printf '\(text)' > plan.md", in: root).status == 0)
            #expect(await eventually {
                ((try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []).contains { $0.body == text }
            })
        }
        let run = people.cli(people.aliceToken)("history '\(root)/plan.md' --json")
        #expect(run.status == 0, "\(run)")
        let entries = try JSONDecoder().decode([Entry].self, from: Data(run.stdout.utf8))
        #expect(Set(entries.map(\.changeTag)).count == entries.count, "a version listed twice: \(run.stdout)")
        #expect(entries.map(\.size) == [14, 8, 4], "\(run.stdout)")
    }
}
