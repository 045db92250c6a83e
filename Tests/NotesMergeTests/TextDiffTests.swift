import NotesMerge
import Testing

@Suite struct TextDiffTests {
    @Test func aUnifiedDiffNamesBothSidesAndTheChangedLines() {
        let old = Array("a\nb\nc\n".utf8)
        let new = Array("a\nB\nc\nd\n".utf8)
        let diff = TextDiff.unified(old, new, oldLabel: "plan.md@1", newLabel: "plan.md@2")
        #expect(diff.hasPrefix("--- plan.md@1\n+++ plan.md@2\n@@ "), "\(diff)")
        #expect(diff.contains("\n-b\n+B\n") && diff.contains("\n+d\n"), "\(diff)")
        #expect(TextDiff.unified(old, old, oldLabel: "x", newLabel: "y").isEmpty)
    }
}
