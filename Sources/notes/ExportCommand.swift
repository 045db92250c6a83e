#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesExport
import NotesModel

/// `notes export PATH... --html -o DIR`: a static site of notes and folders.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export notes or folders of your mount as a static HTML site.",
        discussion: """
            Markdown is rendered by cmark-gfm with GitHub's extensions. Raw HTML in notes is \
            shown as text unless --allow-raw-html is given. The same notes give the same bytes.

            Example:
              notes export ~/Notes/private/Work --html -o /tmp/work-site
            """)

    @Argument(help: "Notes or folders, as paths in the mount (or any folder of markdown files).")
    var paths: [String]

    @Flag(help: "Write HTML (the only format so far).")
    var html = false

    @Option(name: .shortAndLong, help: "Folder to write the site into (made if missing).")
    var output: String

    @Flag(help: "Keep raw HTML in notes as HTML (only for notes you trust).")
    var allowRawHtml = false

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            guard html else { throw NotesError(.invalidArguments, "Give --html: HTML is the only export format so far.") }
            for path in paths where !FileManager.default.fileExists(atPath: path) {
                throw NotesError(.unknownItem, "\(path) does not exist.")
            }
            let onTerminal = isatty(2) != 0 && !options.json
            let exporter = SiteExporter(allowRawHTML: allowRawHtml) { done, total in
                if onTerminal && (done % 25 == 0 || done == total) {
                    FileHandle.standardError.write(Data("\rexporting: \(done)/\(total) pages".utf8) + (done == total ? Data("\n".utf8) : Data()))
                }
            }
            let summary: SiteExporter.Summary
            do {
                summary = try exporter.export(paths.map { URL(fileURLWithPath: $0).standardizedFileURL.path }, to: output)
            } catch {
                throw NotesError(.internalError, "The export stopped: \(error.localizedDescription)")
            }
            try options.emit(summary) {
                "Wrote \(summary.pages) pages, \(summary.indexes) indexes and \(summary.attachments) attachments to \(output); open \(output)/index.html."
            }
        }
    }
}
