import Foundation
import NotesModel
@testable import NotesServer
import NotesTestSupport
import Synchronization
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
        #expect(try await worker.render("# Title\n\nSome *text*.\n") == RenderedNote(title: "Title", html: "<h1 id=\"title\">Title</h1>\n<p>Some <em>text</em>.</p>\n"))
    }

    @Test func aWorkerOverItsBudgetIsKilledAndTheNoteShownAsText() async throws {
        // A worker that never answers, and one that crashes.
        let stuck = WorkerRendering(executable: "/bin/sh", arguments: ["-c", "exec sleep 600"], budget: .milliseconds(300))
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try await stuck.render("<b>*x*</b>") == RenderedNote(title: nil, html: "<pre class=\"unrendered\">&lt;b&gt;*x*&lt;/b&gt;</pre>\n"))
        #expect(clock.now - start < .seconds(60), "the stuck worker was not killed")
        let crashing = WorkerRendering(executable: "/bin/sh", arguments: ["-c", "cat > /dev/null; kill -SEGV $$"], budget: .seconds(30))
        #expect(try await crashing.render(String(repeating: "x", count: 1 << 20)).html.hasPrefix("<pre class=\"unrendered\">"))
    }

    /// The worker was notesd itself with notesd's environment (the PostgreSQL URL and its
    /// password included), its inherited descriptors and no resource limits.
    @Test func theWorkerStartsWithNothingOfNotesdsAndLimitsItself() async throws {
        // Given notesd's worker, started as WorkerRendering starts it
        let reporting = WorkerRendering(
            executable: "/bin/sh", arguments: ["-c", #"cat > /dev/null; printf '{"html":"%s"}' "$(env | grep -cv '^PWD=\|^SHLVL=\|^_=')""#],
            budget: .seconds(30))
        // Then its environment is empty (what sh adds of its own aside)
        let report = try await reporting.render("x").html
        #expect(report == "0", "\(report)")

        // When the worker itself is waiting for its note
        let worker = Process()
        worker.executableURL = URL(fileURLWithPath: DaemonProcess.binary)
        worker.arguments = ["--render-worker"]
        let input = Pipe()
        worker.standardInput = input
        // (a pipe of the test's, open without close-on-exec as notesd's render pipes are)
        let stray = Pipe()
        defer { try? stray.fileHandleForWriting.close() }
        worker.standardOutput = FileHandle.nullDevice
        try worker.run()
        defer {
            try? input.fileHandleForWriting.close()
            worker.waitUntilExit()
        }
        let limitsPath = "/proc/\(worker.processIdentifier)/limits"
        func limits() -> String { (try? String(contentsOfFile: limitsPath, encoding: .utf8)) ?? "" }
        let deadline = ContinuousClock.now + .seconds(120)
        while !limits().replacingOccurrences(of: " ", with: "").contains("Maxfilesize00bytes") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        // Then it holds only stdin, stdout and stderr, and is bounded in memory, CPU, files and descriptors
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(worker.processIdentifier)/fd").sorted()
        #expect(descriptors == ["0", "1", "2"], "\(descriptors)")
        let text = limits()
        for line in ["Max address space         1073741824", "Max cpu time              30", "Max open files            16", "Max file size             0"] {
            #expect(
                text.split(separator: "\n").contains { $0.replacingOccurrences(of: " ", with: "").hasPrefix(line.replacingOccurrences(of: " ", with: "")) }, "\(line) in \(text)")
        }
    }

    /// Many visitors opening one page at once started one render each.
    @Test func visitorsOfOnePageAtOnceShareOneRender() async throws {
        // Given a renderer that counts its renders and takes a while
        let counting = CountingRenderer()
        let flights = RenderFlights()
        // When 50 visitors ask for the same version at once
        let pages = try await withThrowingTaskGroup(of: RenderedNote.self) { group in
            for _ in 0..<50 { group.addTask { try await flights.once("alice/z/n@5") { () async throws(NotesError) in try await counting.render("# Same") } } }
            return try await group.reduce(into: [RenderedNote]()) { $0.append($1) }
        }
        // Then one render served them all
        #expect(pages.count == 50 && Set(pages.map(\.html)).count == 1)
        #expect(counting.renders <= 2, "\(counting.renders) renders")
    }

    final class CountingRenderer: NoteRendering {
        private let count = Mutex(0)
        var renders: Int { count.withLock { $0 } }
        func render(_ markdown: String) async throws(NotesError) -> RenderedNote {
            count.withLock { $0 += 1 }
            try? await Task.sleep(for: .milliseconds(300))
            return RenderedNote.renderHere(markdown)
        }
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
