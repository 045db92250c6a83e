import Foundation
import NotesExport
import Testing

/// The static site from a fixture tree that uses every feature: compared byte for byte
/// with the expected files in Fixtures/expected (reviewed by hand; regenerate with
/// `notes export Tests/NotesExportTests/Fixtures/notes --html -o …/expected`).
@Suite struct SiteExporterTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").path

    static func files(under root: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let relative = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: "\(root)/\(relative)", isDirectory: &isDirectory), !isDirectory.boolValue {
                files[relative] = try Data(contentsOf: URL(fileURLWithPath: "\(root)/\(relative)"))
            }
        }
        return files
    }

    @Test func fixtureTreeMatchesTheExpectedSite() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        var reported: [Int] = []
        let summary = try SiteExporter { done, _ in reported.append(done) }.export(["\(Self.fixtures)/notes"], to: output)
        #expect(summary == SiteExporter.Summary(pages: 3, indexes: 2, attachments: 1))
        // Progress comes a batch of pages at a time, goes forward, and ends at the count.
        #expect(reported.last == 3 && reported == reported.sorted())
        let produced = try Self.files(under: output)
        let expected = try Self.files(under: "\(Self.fixtures)/expected")
        #expect(produced.keys.sorted() == expected.keys.sorted())
        for (name, data) in expected {
            #expect(produced[name] == data, "\(name) differs from the expected file")
        }
    }

    @Test func sameInputSameBytes() throws {
        let first = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString.prefix(8))").path
        let second = first + "-again"
        defer {
            try? FileManager.default.removeItem(atPath: first)
            try? FileManager.default.removeItem(atPath: second)
        }
        _ = try SiteExporter().export(["\(Self.fixtures)/notes"], to: first)
        _ = try SiteExporter().export(["\(Self.fixtures)/notes"], to: second)
        #expect(try Self.files(under: first) == Self.files(under: second))
    }

    @Test func hostileFileNamesAndPlantedLinksStayInsideTheSite() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let notes = "\(folder)/notes"
        let outside = "\(folder)/outside"
        try FileManager.default.createDirectory(atPath: notes, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: "\(notes)/javascript:alert(1)"))
        try Data("# Plan".utf8).write(to: URL(fileURLWithPath: "\(notes)/a b?#.md"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: "\(outside)/secret.md"))
        // A link among the notes is not followed.
        try FileManager.default.createSymbolicLink(atPath: "\(notes)/elsewhere", withDestinationPath: outside)
        let site = "\(folder)/site"
        let summary = try SiteExporter().export([notes], to: site)
        #expect(summary.attachments == 1 && summary.pages == 1)
        let index = String(decoding: try Data(contentsOf: URL(fileURLWithPath: "\(site)/index.html")), as: UTF8.self)
        #expect(index.contains(#"href="javascript%3Aalert(1)""#), "\(index)")
        #expect(index.contains(#"href="a%20b%3F%23.html""#), "\(index)")
        #expect(!index.contains("elsewhere") && !FileManager.default.fileExists(atPath: "\(site)/elsewhere"))
        #expect(index.contains(#"<meta http-equiv="Content-Security-Policy" content="default-src 'none';"#))

        // A link planted in the output folder makes the export stop, and nothing is
        // written through it.
        let planted = "\(folder)/planted"
        try FileManager.default.createDirectory(atPath: planted, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(planted)/style.css", withDestinationPath: "\(outside)/secret.md")
        #expect(throws: (any Error).self) { _ = try SiteExporter().export([notes], to: planted) }
        #expect(try String(contentsOfFile: "\(outside)/secret.md", encoding: .utf8) == "secret")
        try FileManager.default.removeItem(atPath: "\(planted)/style.css")
        try FileManager.default.createDirectory(atPath: "\(notes)/Sub", withIntermediateDirectories: true)
        try Data("# Inner".utf8).write(to: URL(fileURLWithPath: "\(notes)/Sub/inner.md"))
        try FileManager.default.createSymbolicLink(atPath: "\(planted)/Sub", withDestinationPath: outside)
        #expect(throws: (any Error).self) { _ = try SiteExporter().export([notes], to: planted) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == ["secret.md"])
    }

    @Test func notesRunNothingInAReadersBrowser() {
        let page = MarkdownRenderer().render(
            """
            <script>alert(1)</script>

            Hello <img src=x onerror="alert(2)"> and [link](javascript:alert(3)) and <a href="javascript:alert(4)">a</a>.
            """)
        #expect(!page.html.contains("<script"))
        #expect(!page.html.contains("<img"))
        #expect(!page.html.contains("href=\"javascript:"))
        #expect(page.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        // and with --allow-raw-html the author's HTML stays HTML
        #expect(MarkdownRenderer(allowRawHTML: true).render("<b>bold</b>").html.contains("<b>bold</b>"))
    }

    @Test func githubFlavour() {
        let html = MarkdownRenderer().render(
            """
            # Title *here*

            | a |
            |---|
            | 1 |

            - [x] done

            ~~gone~~ www.example.com and a note[^n]

            ```python
            print(1)
            ```

            ## Title here

            [^n]: note
            """)
        #expect(html.title == "Title here")
        for fragment in [
            "<table>", "checked=\"\" disabled=\"\"", "<del>gone</del>", "<a href=\"http://www.example.com\">",
            "class=\"language-python\"", "class=\"footnotes\"", "<h1 id=\"title-here\">", "<h2 id=\"title-here-1\">",
        ] {
            #expect(html.html.contains(fragment), "missing \(fragment)")
        }
    }
}
