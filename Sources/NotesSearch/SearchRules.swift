import Foundation
public import NotesModel
public import NotesText

/// What both backends do the same around a search: reading the request, naming a
/// result's place in a mount, and cutting its snippet.
public enum SearchRules {
    /// What a search gets from a notesd that keeps no index.
    public static let turnedOff = NotesError(
        .serviceUnavailable, "Search is turned off on this server (notesd --no-search); ask its admin, or use grep -r on your mount.")

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

    /// The title and snippet of a hit, from the note itself (the index keeps only words).
    public static func shown(name: String, body: String, _ query: SearchQuery) -> (title: String, snippet: [API.SnippetPart]) {
        (
            SearchDocument.title(name: name, body: body),
            SearchSnippet.make(body: body, terms: query.wanted).map { API.SnippetPart(text: $0.text, match: $0.match) }
        )
    }

    /// How far a query's terms reach, in the order results come: first the notes that
    /// hold every term as a whole word (`plan`, the phrase as typed), ranked; then those
    /// that hold one only at the start of a word or inside one ("planning",
    /// "explanation"), most recent first. A search inside words can name hundreds of
    /// words: ranking their matches would score each note against every one of them,
    /// and the whole word is what people ranked first anyway.
    public enum Reach: Sendable {
        case wholeWords, all
    }

    /// Whether any term of `clauses` finds more than its whole words.
    public static func reachesFurther(_ clauses: [SearchQuery.Clause]) -> Bool {
        clauses.contains { clause in
            clause.alternatives.contains { term in
                if case .word = term.match { false } else { true }
            }
        }
    }

    /// Matching notes past this many are listed most recently indexed first rather than
    /// ranked: ranking reads every match, and a word in most notes ranks nothing.
    public static let mostRanked = 5_000
    /// Infix matches look among at most this many different words holding the letters
    /// (in alphabetical order); words that start with them are always found.
    public static let mostInfixWords = 256
}

/// The notes an `in:` filter keeps.
public enum SearchFolder: Sendable, Equatable {
    /// `private`: the caller's own notes.
    case owned
    /// `shared`: notes of others the caller reads.
    case shared
    /// `shared/OWNER`.
    case owner(String)
    /// A whole zone (`private/ZONE`, `shared/OWNER/ZONE` of a zone-wide share).
    case zone(ZoneID)
    /// These records of a zone (a folder and everything below it, or one note).
    case records(ZoneID, [String])
}

/// What resolving an `in:` path needs from a backend.
public protocol SearchFolderLookup: Sendable {
    /// The record named `name` in `parent` (nil: the zone's root).
    func child(named name: String, of parent: String?, in zone: ZoneID) async throws(NotesError) -> String?
    /// Whether the caller owns a zone of that name.
    func ownsZone(_ zone: ZoneID) async throws(NotesError) -> Bool
    /// The shares of `owner` the caller reads: each one's zone, and its root record
    /// with that record's name (nil for a zone-wide share).
    func readableShares(of owner: String) async throws(NotesError) -> [(zone: String, root: (recordName: String, name: String)?)]
    /// Every record below `recordName`, at any depth.
    func below(_ recordName: String, in zone: ZoneID) async throws(NotesError) -> [String]
}

extension SearchRules {
    /// The notes of the folder at `path` (a mount path, as `SearchQuery.folder`), as
    /// the caller's mount lays them out (`mountPath`).
    public static func folder(_ path: String, actor: String, lookup: some SearchFolderLookup) async throws(NotesError) -> SearchFolder {
        let segments = path.split(separator: "/").map(String.init)
        let missing = NotesError(
            .unknownItem, "in:\(path): there is no such folder in your mount; give its path from the top, as private/… or shared/OWNER/….")
        var zone: ZoneID
        var rest: ArraySlice<String>
        var start: String?
        switch segments.first {
        case "private":
            guard segments.count > 1 else { return .owned }
            let home = ZoneID(owner: actor, name: ZoneID.defaultZoneName)
            if try await lookup.child(named: segments[1], of: nil, in: home) != nil {
                (zone, rest) = (home, segments.dropFirst())
            } else if try await lookup.ownsZone(ZoneID(owner: actor, name: segments[1])) {
                (zone, rest) = (ZoneID(owner: actor, name: segments[1]), segments.dropFirst(2))
            } else {
                throw missing
            }
        case "shared":
            guard segments.count > 1 else { return .shared }
            let owner = segments[1]
            guard segments.count > 2 else { return .owner(owner) }
            let shares = try await lookup.readableShares(of: owner)
            if let wide = shares.first(where: { $0.root == nil && $0.zone == segments[2] }) {
                (zone, rest) = (ZoneID(owner: owner, name: wide.zone), segments.dropFirst(3))
            } else if let share = shares.first(where: { $0.root?.name == segments[2] }), let root = share.root {
                (zone, rest, start) = (ZoneID(owner: owner, name: share.zone), segments.dropFirst(3), root.recordName)
            } else {
                throw missing
            }
        default:
            throw NotesError(.invalidArguments, "in:\(path): a folder's path starts with private/ or shared/, as the mount shows it.")
        }
        var folder = start
        for name in rest {
            guard let next = try await lookup.child(named: name, of: folder, in: zone) else { throw missing }
            folder = next
        }
        guard let folder else { return .zone(zone) }
        return .records(zone, try await lookup.below(folder, in: zone) + [folder])
    }

    /// The share IDs `access` lets its caller read, each with its root record (nil:
    /// zone-wide), for the rights of a search.
    package static func readableShares(_ access: ZoneAccess) -> [String: String?] {
        var readable: [String: String?] = [:]
        if let wide = access.zoneWideShare, access.canRead(shareID: wide) { readable[wide] = .some(nil) }
        for (root, share) in access.rootShares where access.canRead(shareID: share) { readable[share] = .some(root) }
        return readable
    }
}
