import Foundation
import NotesModel
@testable import NotesServer
import NotesTestSupport
import Testing

/// Public pages render notes in a worker process with a time budget, once per version.
@Suite struct RenderingTests {
    /// Inputs after the advisories fixed in cmark-gfm after Debian 12's 0.29.0.gfm.6
    /// (CVE-2023-22483…22486: quadratic time on nesting and long runs of delimiters;
    /// CVE-2023-24824: deep nesting of blocks; GHSA-… autolink reads at buffer ends).
    static let corpus: [(String, String)] = [
        ("nested quotes", String(repeating: ">", count: 20_000) + " deep\n"),
        ("nested lists", (0..<2_000).map { String(repeating: "  ", count: $0) + "- item" }.joined(separator: "\n")),
        ("emphasis run", String(repeating: "*a", count: 25_000)),
        ("underscore run", String(repeating: "_a", count: 25_000)),
        ("open brackets", String(repeating: "[", count: 50_000) + "x"),
        ("link labels", String(repeating: "[a](", count: 12_000)),
        ("backticks", (1...300).map { String(repeating: "`", count: $0) + "x" }.joined(separator: " ")),
        ("autolink at end", String(repeating: "a ", count: 10_000) + "www."),
        ("autolink email at end", String(repeating: "x", count: 30_000) + "@"),
        ("autolinks", String(repeating: "http://a.b/ www.c.d ", count: 5_000)),
        ("wide table", "|" + String(repeating: "a|", count: 5_000) + "\n|" + String(repeating: "-|", count: 5_000) + "\n"),
        ("many table rows", "|a|b|\n|-|-|\n" + String(repeating: "|x|\n", count: 20_000)),
        ("html-ish", String(repeating: "<a ", count: 20_000)),
        ("entities", String(repeating: "&#", count: 25_000)),
        ("strikethrough", String(repeating: "~~a", count: 20_000)),
        ("footnotes", (0..<5_000).map { "[^\($0)]" }.joined() + "\n\n" + (0..<5_000).map { "[^\($0)]: n" }.joined(separator: "\n")),
    ]

    @Test func theAdvisoryCorpusRendersInTheWorkerWithinItsBudget() async throws {
        // Budget as notesd's default (5 s), with room for a debug build on a busy machine.
        let worker = WorkerRendering(executable: DaemonProcess.binary, arguments: ["--render-worker"], budget: .seconds(30))
        for (name, markdown) in Self.corpus {
            let rendered = await worker.run(markdown)
            #expect(rendered != nil, "\(name) did not render within the budget")
        }
        // And a plain note comes out as HTML.
        #expect(await worker.render("# Title\n\nSome *text*.\n") == RenderedNote(title: "Title", html: "<h1 id=\"title\">Title</h1>\n<p>Some <em>text</em>.</p>\n"))
    }

    @Test func aWorkerOverItsBudgetIsKilledAndTheNoteShownAsText() async throws {
        // A worker that never answers, and one that crashes.
        let stuck = WorkerRendering(executable: "/bin/sh", arguments: ["-c", "exec sleep 600"], budget: .milliseconds(300))
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await stuck.render("<b>*x*</b>") == RenderedNote(title: nil, html: "<pre class=\"unrendered\">&lt;b&gt;*x*&lt;/b&gt;</pre>\n"))
        #expect(clock.now - start < .seconds(60), "the stuck worker was not killed")
        let crashing = WorkerRendering(executable: "/bin/sh", arguments: ["-c", "cat > /dev/null; kill -SEGV $$"], budget: .seconds(30))
        #expect(await crashing.render(String(repeating: "x", count: 1 << 20)).html.hasPrefix("<pre class=\"unrendered\">"))
    }

    @Test func theRenderCacheHoldsItsByteBound() {
        let cache = RenderCache(capacity: 10_000)
        for index in 0..<100 {
            cache.put("note\(index)@1", RenderedNote(title: nil, html: String(repeating: "x", count: 1_000)))
        }
        #expect(cache.count <= 10)
        #expect(cache.get("note99@1") != nil)
        #expect(cache.get("note0@1") == nil)
        // Too big for the cache: not kept (rendered again next time).
        cache.put("huge@1", RenderedNote(title: nil, html: String(repeating: "x", count: 5_000)))
        #expect(cache.get("huge@1") == nil)
    }
}
