#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesModel

struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find notes by their words, in your notes and the shares you accepted.",
        discussion: """
            Words match inside words too (lann finds planning); "two words" is a phrase;
            plan* matches words starting with plan; -word excludes; a OR b takes either.
            Filters: in:FOLDER (a path as the mount shows it), title:WORD, by:ACCOUNT,
            modified:>YYYY-MM-DD (also >=, <, <= or a day, in UTC).

            Examples:
              notes search budget review
              notes search '"quarterly plan" in:private/work -draft'
              notes search 'title:meeting modified:>=2026-11-01' --limit 50
              notes search 東京 --json
            """)

    @Argument(parsing: .remaining, help: "The query: words, \"phrases\", and filters.")
    var query: [String]

    @Option(help: "Results per page (1 to \(Limits.maxSearchPage)).")
    var limit = Limits.defaultSearchPage

    @Option(help: "Where to go on: the cursor a previous page printed.")
    var cursor: String?

    @Flag(help: "Mark matches in bold even when not printing to a terminal.")
    var color = false

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let text = query.joined(separator: " ")
            let page = try await options.client().search(text, limit: limit, cursor: cursor)
            try options.emit(page) { Self.describe(page, query: text, bold: color || isatty(STDOUT_FILENO) == 1) }
        }
    }

    static func describe(_ page: API.SearchResults, query: String, bold: Bool) -> String {
        var lines: [String] = []
        if page.results.isEmpty { lines.append("No notes match.") }
        for hit in page.results {
            lines.append("\(hit.path)  \(hit.title)")
            lines.append("  \(hit.modifiedBy), \(ISO8601.string(from: hit.modifiedAt))")
            let snippet = hit.snippet.map { part in
                let text = part.text.replacingOccurrences(of: "\n", with: " ")
                return part.match && bold ? "\u{1B}[1m\(text)\u{1B}[0m" : text
            }.joined()
            if !snippet.isEmpty { lines.append("  " + snippet) }
        }
        if !page.complete {
            lines.append("(Some of your latest saves are not in the index yet; search again in a moment to include them.)")
        }
        if let next = page.next {
            let quoted = "'" + query.replacingOccurrences(of: "'", with: "'\\''") + "'"
            lines.append("More: notes search \(quoted) --cursor \(next)")
        }
        return lines.joined(separator: "\n")
    }
}
