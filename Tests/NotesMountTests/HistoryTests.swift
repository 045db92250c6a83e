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
        var summary: String
    }

    /// Regression: the newest version was listed twice (as the record and as the
    /// history's first entry).
    @Test func historyListsEachVersionOnceNewestFirst() async throws {
        let people = try await TwoMounts()
        let root = people.aliceMount.path("private")
        for text in ["one\n", "one two\n", "one two three\n"] {
            #expect(Shell.run("printf '\(text)' > plan.md", in: root).status == 0)
            #expect(
                await eventually {
                    ((try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records) ?? []).contains { $0.body == text }
                })
        }
        let run = people.cli(people.aliceToken)("history '\(root)/plan.md' --json")
        #expect(run.status == 0, "\(run)")
        let entries = try JSONDecoder().decode([Entry].self, from: Data(run.stdout.utf8))
        #expect(Set(entries.map(\.changeTag)).count == entries.count, "a version listed twice: \(run.stdout)")
        #expect(entries.map(\.size) == [14, 8, 4], "\(run.stdout)")
        // each with a line on what changed from the one before
        #expect(entries.map(\.summary) == ["+1 -1 lines", "+1 -1 lines", "created"], "\(run.stdout)")
        let text = people.cli(people.aliceToken)("history '\(root)/plan.md'")
        #expect(text.stdout.contains("CHANGE") && text.stdout.contains("+1 -1 lines") && text.stdout.contains("created"), "\(text)")
        guard entries.count == 3 else { return }
        let (newest, middle, oldest) = (entries[0].changeTag, entries[1].changeTag, entries[2].changeTag)
        let cli = people.cli(people.aliceToken)
        let note = "'\(root)/plan.md'"

        // show: a version's text, byte for byte
        #expect(cli("show \(note) --version \(oldest)").stdout == "one\n")
        #expect(cli("show \(note)").stdout == "one two three\n")
        let missing = cli("show \(note) --version nope")
        #expect(missing.status == 66 && missing.stderr.contains("notes history"), "\(missing)")
        // diff: the last change by default, any two on demand
        let last = cli("diff \(note)")
        #expect(last.status == 0 && last.stdout.contains("-one two\n+one two three") && last.stdout.contains("@\(middle)"), "\(last)")
        let span = cli("diff \(note) --from \(oldest) --to \(newest)")
        #expect(span.stdout.contains("-one\n+one two three"), "\(span)")
        #expect(!span.stdout.contains("\u{1B}["), "colour when not on a terminal")
        // restore: the old text becomes the newest version; the history keeps all four
        let restored = cli("restore \(note) --version \(oldest)")
        #expect(restored.status == 0 && restored.stdout.contains("Restored plan.md"), "\(restored)")
        #expect(await eventually { (try? String(contentsOfFile: "\(root)/plan.md", encoding: .utf8)) == "one\n" })
        let after = try JSONDecoder().decode([Entry].self, from: Data(cli("history \(note) --json").stdout.utf8))
        #expect(after.map(\.size) == [4, 14, 8, 4], "\(after.map(\.size))")
    }
}
