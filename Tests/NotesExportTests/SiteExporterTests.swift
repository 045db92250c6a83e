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
            if FileManager.default.fileExists(atPath: "\(root)/\(relative)", isDirectory: &isDirectory), !isDirectory.boolValue { files[relative] = try Data(contentsOf: URL(fileURLWithPath: "\(root)/\(relative)")) }
        }
        return files
    }

    @Test func fixtureTreeMatchesTheExpectedSite() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        var reported: [Int] = []
        let summary = try SiteExporter { done, _ in reported.append(done) }.export(["\(Self.fixtures)/notes"], to: output)
        #expect(summary == SiteExporter.Summary(pages: 3, indexes: 2, attachments: 1))
        #expect(reported == [1, 2, 3])
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
        defer { try? FileManager.default.removeItem(atPath: first); try? FileManager.default.removeItem(atPath: second) }
        _ = try SiteExporter().export(["\(Self.fixtures)/notes"], to: first)
        _ = try SiteExporter().export(["\(Self.fixtures)/notes"], to: second)
        #expect(try Self.files(under: first) == Self.files(under: second))
    }

    @Test func notesRunNothingInAReadersBrowser() {
        let page = MarkdownRenderer().render("""
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
        let html = MarkdownRenderer().render("""
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
        for fragment in ["<table>", "checked=\"\" disabled=\"\"", "<del>gone</del>", "<a href=\"http://www.example.com\">",
                         "class=\"language-python\"", "class=\"footnotes\"", "<h1 id=\"title-here\">", "<h2 id=\"title-here-1\">"] {
            #expect(html.html.contains(fragment), "missing \(fragment)")
        }
    }
}
