import NotesExport
import NotesText
import Testing

/// The listing title (a line scan) against the page title (cmark-gfm) on notes as people
/// write them: the same, so that an index and the page it links to agree.
@Suite struct MarkdownTitleTests {
    static let notes: [(text: String, title: String?)] = [
        ("# Plan\n\nbody", "Plan"),
        ("Intro line\n\n## Second level first\n", "Second level first"),
        ("Setext title\n============\n\ntext", "Setext title"),
        ("Setext two\n---\n", "Setext two"),
        ("```\n# not a heading\n```\n\n# Real\n", "Real"),
        ("~~~md\n# fenced\n~~~\n# After\n", "After"),
        ("    # indented code\n\n# Heading\n", "Heading"),
        ("#hashtag is not a heading\n\n### Three ###\n", "Three"),
        ("# **Bold** and `code` and [a link](http://x)\n", "Bold and code and a link"),
        ("# snake_case_name\n", "snake_case_name"),
        ("no heading at all\n", nil),
        ("", nil),
        ("\r\n# Windows\r\n", "Windows"),
        ("   ## Three spaces\n", "Three spaces"),
        ("# [one](a) [two *b*](c) [three\n", "one two b [three"),
        ("# a ] b ) [c] (d) [e](f\n", "a ] b ) [c] (d) [e](f"),
        ("# [x [y](z)\n", "[x y"),
        ("# Trailing #\t\n", "Trailing"),
        ("Para\r===\r", "Para"),
        ("# Überschrift mit Umlauten ünd 日本語\n", "Überschrift mit Umlauten ünd 日本語"),
    ]

    @Test func theListingTitleIsThePageTitle() {
        let renderer = MarkdownRenderer(allowRawHTML: false, rewriteLink: { $0 })
        for (text, expected) in Self.notes {
            #expect(MarkdownTitle.first(in: text) == expected, "\(text.debugDescription)")
            #expect(renderer.render(text).title == expected, "cmark-gfm differs on \(text.debugDescription)")
        }
    }

    /// Each `[` looked ahead for its `]` and `)` on its own: a heading of 65,000 `[` took
    /// 45 s on a release build, on an event loop of notesd's, to list a public folder.
    /// Now one pass; the bound leaves a debug build on a busy machine room to spare.
    @Test func aHeadingOfBracketsIsScannedInOnePass() {
        for text in ["# " + String(repeating: "[", count: 65_000), "# " + String(repeating: "[a](", count: 16_000), "# " + String(repeating: "[]", count: 32_000) + "("] {
            let start = ContinuousClock.now
            let title = MarkdownTitle.first(in: text)
            #expect(ContinuousClock.now - start < .seconds(3), "\(text.prefix(8)): \(ContinuousClock.now - start)")
            #expect(title?.isEmpty == false)
        }
    }

    /// A heading is a name to list, not a paragraph: past `longestTitleBytes` it is cut at
    /// a character's end and marked, the same in a listing and on the page.
    @Test func aLongHeadingIsCutTheSameInTheListingAndOnThePage() {
        let renderer = MarkdownRenderer(allowRawHTML: false, rewriteLink: { $0 })
        for word in ["word ", "日本語の見出し ", "[link](http://example.com/x) "] {
            let text = "# " + String(repeating: word, count: 2_000) + "\n\nbody\n"
            let title = MarkdownTitle.first(in: text)
            #expect(title == renderer.render(text).title)
            #expect(title.map { $0.utf8.count <= MarkdownTitle.longestTitleBytes && $0.hasSuffix("…") } == true, "\(word)")
        }
        let short = "# " + String(repeating: "x", count: MarkdownTitle.longestTitleBytes) + "\n"
        #expect(MarkdownTitle.first(in: short) == String(repeating: "x", count: MarkdownTitle.longestTitleBytes))
    }

    @Test func onlyTheHeadOfAHugeNoteIsRead() {
        let text = String(repeating: "x\n", count: 100_000) + "# Late\n"
        #expect(MarkdownTitle.first(in: text) == nil)
    }
}
