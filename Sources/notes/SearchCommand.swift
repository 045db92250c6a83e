#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesModel
import NotesReplica
import NotesSearch

struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find notes by their words, in your notes and the shares you accepted.",
        discussion: """
            Words match inside words too (lann finds planning); "two words" is a phrase;
            plan* matches words starting with plan; -word excludes; a OR b takes either.
            Filters: in:FOLDER (a path as the mount shows it), title:WORD, by:ACCOUNT,
            modified:>YYYY-MM-DD (also >=, <, <= or a day, in UTC).

            When notesd cannot be reached (or keeps no index), the search runs over this
            machine's copy of your notes that a mount keeps, with the same syntax, and
            says so; --offline asks for that copy at once.

            Examples:
              notes search budget review
              notes search '"quarterly plan" in:private/work -draft'
              notes search 'title:meeting modified:>=2026-11-01' --limit 50
              notes search 東京 --json
              notes search --offline budget
            """)

    @Argument(parsing: .remaining, help: "The query: words, \"phrases\", and filters.")
    var query: [String]

    @Option(help: "Results per page (1 to \(Limits.maxSearchPage)).")
    var limit = Limits.defaultSearchPage

    @Option(help: "Where to go on: the cursor a previous page printed.")
    var cursor: String?

    @Flag(help: "Mark matches in bold even when not printing to a terminal.")
    var color = false

    @Flag(help: "Search this machine's copy of your notes (a mount's), without asking notesd.")
    var offline = false

    @Option(help: "Where the mount keeps its copy, when not in the default place (as `notes mount --cache-dir`).")
    var cacheDir: String?

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let text = query.joined(separator: " ")
            var page: API.SearchResults
            if offline {
                page = try await Self.searchLocally(text, limit: limit, cursor: cursor, cacheDir: cacheDir)
            } else {
                do {
                    page = try await options.client().search(text, limit: limit, cursor: cursor)
                } catch let error as NotesError where error.code == .serviceUnavailable {
                    guard let local = try? await Self.searchLocally(text, limit: limit, cursor: cursor, cacheDir: cacheDir) else { throw error }
                    page = local
                }
            }
            try options.emit(page) { Self.describe(page, query: text, bold: color || isatty(STDOUT_FILENO) == 1) }
        }
    }

    /// The search over a mount's replica: the running mounts' first, else the one
    /// replica of the cache folder.
    static func searchLocally(_ text: String, limit: Int, cursor: String?, cacheDir: String?) async throws(NotesError) -> API.SearchResults {
        var found: [(account: String, path: String)] = ReplicaLocation.registrations().map { ($0.account, $0.replica) }
        if found.isEmpty {
            let folder = cacheDir ?? ReplicaLocation.defaultDirectory()
            found = ReplicaLocation.accounts(in: folder).map { ($0, ReplicaLocation.path(in: folder, account: $0)) }
        }
        let replicas = Dictionary(found.map { ($0.path, $0.account) }, uniquingKeysWith: { first, _ in first })
        guard replicas.count == 1, let (path, account) = replicas.first else {
            throw NotesError(
                .serviceUnavailable,
                replicas.isEmpty
                    ? "notesd cannot be reached and this machine holds no copy of your notes to search: mount them once (`notes mount DIR`) to search offline."
                    : "This machine holds copies of several accounts' notes (\(replicas.values.sorted().joined(separator: ", "))): give the folder of yours with --cache-dir.")
        }
        let request = try SearchRules.Request(API.Search(query: text, limit: limit, cursor: cursor))
        let search: ReplicaSearch
        do {
            guard let opened = try ReplicaSearch(readingBesides: path) else {
                throw NotesError(.serviceUnavailable, "The copy of \(account)'s notes at \(path) has no search index yet: mount it once and let it index.")
            }
            search = opened
        } catch let error as ReplicaError {
            throw NotesError(.serviceUnavailable, error.message)
        } catch {
            throw error as? NotesError ?? NotesError(.internalError, "\(error)")
        }
        var folder: SearchFolder?
        if let path = request.query.folder {
            folder = try await SearchRules.folder(path, actor: account, lookup: search.folderLookup(account: account))
        }
        do {
            let hits = try search.search(request, in: folder, account: account)
            let waiting = try search.waitingCount()
            return API.SearchResults(results: Array(hits.prefix(request.limit)), next: request.next(found: hits.count), complete: waiting == 0, offline: true)
        } catch {
            throw NotesError(.serviceUnavailable, error.message)
        }
    }

    static func describe(_ page: API.SearchResults, query: String, bold: Bool) -> String {
        var lines: [String] = []
        if page.offline == true {
            lines.append("(notesd was not asked or could not answer: these are from this machine's copy of your notes, as of its last sync.)")
        }
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
        if !page.complete && page.offline == true {
            lines.append("(The copy's index is still taking notes in; search again later to find them all.)")
        } else if !page.complete {
            lines.append("(Some of your latest saves are not in the index yet; search again in a moment to include them.)")
        }
        if let next = page.next {
            let quoted = "'" + query.replacingOccurrences(of: "'", with: "'\\''") + "'"
            lines.append("More: notes search \(quoted) --cursor \(next)")
        }
        return lines.joined(separator: "\n")
    }
}
