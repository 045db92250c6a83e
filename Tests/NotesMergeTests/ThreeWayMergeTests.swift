import Foundation
import NotesMerge
import Testing

@Suite("Three-way merge of notes")
struct ThreeWayMergeTests {
    let base = "# Plan\n\nmonday: write\ntuesday: test\nwednesday: ship\n"

    func merge(_ ours: String, _ theirs: String, base: String? = nil) -> String? {
        switch ThreeWayMerge.merge(base: Array((base ?? self.base).utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8)) {
        case .merged(let bytes): String(decoding: bytes, as: UTF8.self)
        case .conflict: nil
        }
    }

    @Test("edits of different lines combine")
    func separateLines() {
        let ours = base.replacingOccurrences(of: "monday: write", with: "monday: write the spec")
        let theirs = base.replacingOccurrences(of: "wednesday: ship", with: "wednesday: ship it")
        #expect(merge(ours, theirs) == "# Plan\n\nmonday: write the spec\ntuesday: test\nwednesday: ship it\n")
    }

    @Test("lines added at both ends combine")
    func appends() {
        #expect(merge("intro\n" + base, base + "outro\n") == "intro\n" + base + "outro\n")
    }

    @Test("edits of the same line conflict, with no markers anywhere")
    func sameLine() {
        let ours = base.replacingOccurrences(of: "tuesday: test", with: "tuesday: test twice")
        let theirs = base.replacingOccurrences(of: "tuesday: test", with: "tuesday: rest")
        #expect(ThreeWayMerge.merge(base: Array(base.utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8)) == .conflict)
    }

    @Test("asked for, overlapping edits come back with git's markers and both sides' lines")
    func markersWhenAsked() throws {
        let ours = base.replacingOccurrences(of: "tuesday: test", with: "tuesday: test twice")
        let theirs = base.replacingOccurrences(of: "tuesday: test", with: "tuesday: rest")
        let outcome = ThreeWayMerge.merge(base: Array(base.utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8), markers: ("bob", "alice"))
        guard case .merged(let bytes) = outcome else {
            Issue.record("no merge with markers: \(outcome)")
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == "# Plan\n\nmonday: write\n<<<<<<< bob\ntuesday: test twice\n=======\ntuesday: rest\n>>>>>>> alice\nwednesday: ship\n")
    }

    @Test("one side unchanged takes the other; the same edit on both sides is one edit")
    func trivial() {
        #expect(merge(base, "changed\n") == "changed\n")
        #expect(merge("changed\n", base) == "changed\n")
        #expect(merge("same\n", "same\n") == "same\n")
        #expect(merge("", "", base: "") == "")
    }

    @Test("an empty base: both sides wrote a new note differently")
    func emptyBase() {
        #expect(merge("a\n", "b\n", base: "") == nil)
    }
}
