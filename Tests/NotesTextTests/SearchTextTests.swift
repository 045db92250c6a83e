import NotesText
import Testing

/// What search indexes of a note: the words a reader sees, markup gone, code kept.
@Suite struct SearchTextTests {
    static let notes: [(markdown: String, indexed: String)] = [
        ("# Plan\n\nBody **bold** and `code`.\n", "Plan\n\nBody bold and code.\n"),
        ("- item one\n* item two\n+ three\n12. twelve\n3) three\n", "item one\nitem two\nthree\ntwelve\nthree\n"),
        ("> quoted\n> > twice\n", "quoted\ntwice\n"),
        ("- [ ] open task\n- [x] done task\n", "open task\ndone task\n"),
        ("See [the docs](https://example.com/docs) and ![a cat](cat.png).\n", "See the docs and !a cat.\n"),
        ("```swift\nlet answer = 42 // *kept*\n```\n", "let answer = 42 // *kept*\n"),
        ("~~~\n# not a heading\n~~~\n", "# not a heading\n"),
        ("    indented_code(*x*)\n", "    indented_code(*x*)\n"),
        ("Title\n=====\n\n---\n***\n", "Title\n\n"),
        ("| a | b |\n|---|:-:|\n| c | d |\n", "  a   b  \n  c   d  \n"),
        ("snake_case_name and ~/Notes/path\n", "snake_case_name and ~/Notes/path\n"),
        ("windows\r\nline\r\n", "windows\nline\n"),
        ("nul\u{0}byte and \u{7}bell\n", "nulbyte and bell\n"),
        ("#hashtag stays\n", "#hashtag stays\n"),
    ]

    @Test func markupGoesAndTextStays() {
        for (markdown, indexed) in Self.notes {
            #expect(SearchText.indexed(markdown) == indexed, "\(markdown.debugDescription)")
        }
    }

    /// NFKC: what people type matches however the note spelled it.
    @Test func everyScriptIsKeptInOneNormalForm() {
        #expect(SearchText.indexed("ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ") == "full-width ABC\n")
        #expect(SearchText.indexed("Cafe\u{301} ﬁle") == "Café file\n")
        #expect(SearchText.indexed("Größe über Maß") == "Größe über Maß\n")
        #expect(SearchText.indexed("# 東京の会議\n日本語のメモ。中文笔记") == "東京の会議\n日本語のメモ。中文笔记\n")
    }

    /// Each `[` looked ahead on its own in an earlier title scan (45 s for 65,000):
    /// one pass, whatever the note holds.
    @Test func pathologicalNotesTakeOnePass() {
        for text in [String(repeating: "[", count: 200_000), String(repeating: "[a](", count: 50_000), String(repeating: "> - [ ] **x** ", count: 20_000)] {
            let start = ContinuousClock.now
            let indexed = SearchText.indexed(text)
            #expect(ContinuousClock.now - start < .seconds(3), "\(text.prefix(8)): \(ContinuousClock.now - start)")
            #expect(!indexed.isEmpty)
        }
    }
}
