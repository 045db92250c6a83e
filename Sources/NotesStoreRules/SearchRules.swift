import Foundation
public import NotesModel
public import NotesText

/// What both backends do the same around a search: reading the request, naming a
/// result's place in a mount, and cutting its snippet.
public enum SearchRules {
    /// A search request read and checked: the query, the page size, and how many
    /// results earlier pages held.
    public struct Request: Sendable {
        public var query: SearchQuery
        public var limit: Int
        public var offset: Int

        /// Results to read: one more than the page, to know whether another follows.
        public var fetched: Int { limit + 1 }

        public init(_ request: API.Search) throws(NotesError) {
            do {
                query = try SearchQuery(parsing: request.query)
            } catch {
                throw NotesError(.invalidArguments, "The search cannot run: \(error.message)")
            }
            limit = request.limit ?? Limits.defaultSearchPage
            guard (1...Limits.maxSearchPage).contains(limit) else {
                throw NotesError(.invalidArguments, "limit must be 1 to \(Limits.maxSearchPage); it was \(limit).")
            }
            offset = 0
            if let cursor = request.cursor {
                guard let value = Int(cursor), value > 0, value <= Limits.deepestSearchResult else {
                    throw NotesError(.invalidArguments, "The cursor \"\(cursor)\" is not one this server gave; start the search again without it.")
                }
                offset = value
            }
            limit = min(limit, Limits.deepestSearchResult - offset)
            guard limit > 0 else {
                throw NotesError(.invalidArguments, "Only the first \(Limits.deepestSearchResult) results are listed; narrow the search down.")
            }
        }

        /// The next page's cursor, when `found` results (of `fetched` asked) say one follows.
        public func next(found: Int) -> String? {
            found > limit && offset + limit < Limits.deepestSearchResult ? String(offset + limit) : nil
        }
    }

    /// Where a note is in the caller's mount (`NoteTree`'s layout): the owner's notes
    /// under `private/` (a zone other than the default one in a folder of its name),
    /// and shared ones under `shared/OWNER/`, in a folder of the zone's name for a
    /// zone-wide share, else from the share's root record down.
    /// - Parameter names: the names from the zone's root (or the share's root record)
    ///   down to the note, the note's own last.
    public static func mountPath(zone: ZoneID, actor: String, zoneWide: Bool, names: [String]) -> String {
        var parts: [String]
        if zone.owner == actor {
            parts = zone.isDefault ? ["private"] : ["private", zone.name]
        } else {
            parts = zoneWide ? ["shared", zone.owner, zone.name] : ["shared", zone.owner]
        }
        parts.append(contentsOf: names)
        return parts.joined(separator: "/")
    }

    /// The snippet of a hit, from its text in `SearchForm`.
    public static func snippet(_ form: String, _ query: SearchQuery) -> [API.SnippetPart] {
        SearchSnippet.make(form, terms: query.wanted).map { API.SnippetPart(text: $0.text, match: $0.match) }
    }

    /// The title shown for a hit, from its title in `SearchForm`.
    public static func title(_ form: String) -> String { SearchDocument.shownTitle(form) }
}
