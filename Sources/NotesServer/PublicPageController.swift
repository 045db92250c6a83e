import Foundation
import HTTPTypes
import Hummingbird
import NotesExport
import NotesText
import NotesModel

/// Public share pages: a share whose public permission is not `none` is served at its
/// URL as the same HTML that `notes export` writes, read-only, to anyone. A private
/// share, an expired link and an unknown token all answer the same 404. A link with a
/// password first shows a page that asks for it; the right password, posted back, sets
/// a cookie scoped to the link (`LinkPass` in the store) that opens its pages from then
/// on. Pages forbid scripts through their Content-Security-Policy.
struct PublicPageController {
    let store: any RecordStore
    let renderer: any NoteRendering
    /// Who is guessing a link's password, for the store's count of wrong ones.
    let clients: ClientAddress
    /// Cookies carry `Secure` when notesd serves TLS.
    let secureCookies: Bool
    /// Each page or file served counts as a view of its link.
    let views: PublicViewCounter
    /// When a refused password guess is answered.
    let refusals: RefusalPace
    /// The cookie that holds a link's pass (one per link: its path is the link's).
    static let passCookie = "notes_link_pass"
    /// Pages rendered once per record version.
    let cache = RenderCache()
    /// Notes' titles for indexes, once per record version.
    let titles = TitleCache()
    /// Renders under way, by record version.
    let flights = RenderFlights()

    /// What the browser may load: the stylesheet and images from here, nothing else, and
    /// no script at all (a note's HTML is escaped anyway; this is the second wall).
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        .cacheControl: "no-cache",
    ]

    func addRoutes(to router: RouterGroup<NotesRequestContext>) {
        router.get("s/:token") { request, context in try await serve(request, context, path: []) }
        router.get("s/:token/**") { request, context in
            // The segments come as the browser sent them, percent-encoded ("My%20plan.html"
            // for a note named "My plan.md"): compare them as names.
            try await serve(request, context, path: context.parameters.getCatchAll().map { $0.removingPercentEncoding ?? String($0) })
        }
        router.post("s/:token") { request, context in try await unlock(request, context) }
        router.post("s/:token/**") { request, context in try await unlock(request, context) }
    }

    func serve(_ request: Request, _ context: NotesRequestContext, path: [String]) async throws -> Response {
        guard let token = context.parameters.get("token") else { throw NotesError(.unknownItem, "There is no public page at this address.") }
        let pass = Self.cookie(Self.passCookie, in: request)
        let site: (share: Share, records: [Record])
        switch await publicShare(token, pass: pass) {
        case .success(let found): site = found
        case .failure(let error) where error.code == .notAuthenticated:
            // A link with a password: its stylesheet is served, every other path asks.
            if path == ["style.css"] { return Self.answer(PublicSite.stylesheet) }
            return passwordPage(token: token, status: .ok, message: nil)
        case .failure(let error): throw error
        }
        return try await serve(request, token: token, pass: pass, site: site, path: path)
    }

    /// The store's answer as a value, so that the password case can be told apart.
    private func publicShare(_ token: String, pass: String?) async -> Result<(share: Share, records: [Record]), NotesError> {
        do {
            return .success(try await store.publicShare(urlToken: token, pass: pass))
        } catch {
            return .failure(error)
        }
    }

    static func answer(_ answer: PublicSite.Answer) -> Response {
        var headers = Self.securityHeaders
        headers[.contentType] = answer.contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    func serve(_ request: Request, token: String, pass: String?, site found: (share: Share, records: [Record]), path: [String]) async throws -> Response {
        let (share, records) = found
        let site = PublicSite(share: share, records: records, base: "/s/\(token)/")
        if path.isEmpty && !request.uri.path.hasSuffix("/") && site.rootIsFolder {
            // Relative links inside the pages need the folder's trailing slash.
            return Response(status: .movedPermanently, headers: [.location: "/s/\(token)/"])
        }
        guard let target = site.resolve(path.filter { !$0.isEmpty }) else {
            throw NotesError(.unknownItem, "There is no public page at this address.")
        }
        let answer: PublicSite.Answer
        switch target {
        case .answer(let ready):
            // (the stylesheet: part of every view, not one of its own)
            return Self.answer(ready)
        case .index(let folder, let path):
            answer = site.index(folder, path: path, titles: try await titles(of: site.children[folder] ?? [], token: token, pass: pass))
        case .page(let note):
            answer = site.page(note, rendered: try await rendered(note, token: token, pass: pass))
        case .markdown(let note):
            let full = try await store.publicRecord(urlToken: token, recordName: note.recordName, pass: pass)
            answer = PublicSite.Answer(contentType: "text/markdown; charset=utf-8", body: Array((full.body ?? "").utf8))
        case .file(let file):
            let full = try await store.publicRecord(urlToken: token, recordName: file.recordName, pass: pass)
            answer = PublicSite.Answer(contentType: PublicSite.contentType(file.name), body: [UInt8](full.bytes ?? Data()))
        }
        views.count(token)
        return Self.answer(answer)
    }

    /// The titles of the notes among `records` (as an index lists them), by record name:
    /// each version's title read once, then kept.
    func titles(of records: [Record], token: String, pass: String?) async throws -> [String: String] {
        var titles: [String: String] = [:]
        for note in records where note.recordType == .note {
            let key = "\(note.zone.owner)/\(note.zone.name)/\(note.recordName)@\(note.changeTag)"
            if let known = self.titles.get(key) {
                if let title = known { titles[note.recordName] = title }
                continue
            }
            let full = try await store.publicRecord(urlToken: token, recordName: note.recordName, pass: pass)
            let title = MarkdownTitle.first(in: full.body ?? "")
            self.titles.put("\(note.zone.owner)/\(note.zone.name)/\(note.recordName)@\(full.changeTag)", title)
            if let title { titles[note.recordName] = title }
        }
        return titles
    }

    /// The note's page body, from the cache when this version was rendered before.
    ///
    /// One render per version however many visitors ask at once: the first one's render
    /// is awaited by the others (`flights`). A note of more than
    /// `Limits.renderedNoteBytes` is shown as plain text without a render.
    func rendered(_ note: Record, token: String, pass: String?) async throws -> RenderedNote {
        let key = "\(note.zone.owner)/\(note.zone.name)/\(note.recordName)@\(note.changeTag)"
        if let hit = cache.get(key) { return hit }
        return try await flights.once(key) { [store, renderer, cache] () async throws(NotesError) -> RenderedNote in
            let full = try await store.publicRecord(urlToken: token, recordName: note.recordName, pass: pass)
            let markdown = full.body ?? ""
            let page = markdown.utf8.count > Limits.renderedNoteBytes ? RenderedNote.plainText(markdown) : try await renderer.render(markdown)
            // The version read may be newer than the listing's; it is cached under its own tag.
            cache.put("\(note.zone.owner)/\(note.zone.name)/\(note.recordName)@\(full.changeTag)", page)
            return page
        }
    }
}

/// A share's records as a site: folders have indexes, notes have pages, files are served
/// as they are.
struct PublicSite {
    let share: Share
    let base: String
    let byName: [String: Record]
    let children: [String?: [Record]]
    let root: Record?

    init(share: Share, records: [Record], base: String) {
        self.share = share
        self.base = base
        let byName = Dictionary(records.map { ($0.recordName, $0) }, uniquingKeysWith: { a, _ in a })
        self.byName = byName
        var children: [String?: [Record]] = [:]
        for record in records where record.recordName != share.rootRecordName {
            // A record whose parent is outside the share hangs at the top.
            let parent = record.parent.flatMap { byName[$0] != nil ? $0 : nil }
            children[parent, default: []].append(record)
        }
        self.children = children.mapValues { $0.sorted { $0.name < $1.name } }
        root = share.rootRecordName.flatMap { byName[$0] }
    }

    var rootIsFolder: Bool { root.map { $0.recordType == .folder } ?? true }

    struct Answer {
        var contentType: String
        var body: [UInt8]
    }

    /// What a path names: an answer ready now (stylesheet, index), or a record whose
    /// content must be read (and, for a page, rendered).
    enum Target {
        case answer(Answer)
        /// A folder's index (`nil`: the share's top), at `path`.
        case index(String?, path: [String])
        case page(Record)
        case markdown(Record)
        case file(Record)
    }

    static let stylesheet = Answer(contentType: "text/css; charset=utf-8", body: Array(Stylesheet.css.utf8))

    func resolve(_ path: [String]) -> Target? {
        if path == ["style.css"] { return .answer(Self.stylesheet) }
        if let root, root.recordType == .note {
            // A single note is its own index (every page's "Index" link).
            return path.isEmpty || path == [SiteExporter.pagePath(root.name)] || path == ["index.html"] ? .page(root) : nil
        }
        var folder: String? = root?.recordName
        for (index, segment) in path.enumerated() {
            let last = index == path.count - 1
            let here = children[folder] ?? []
            if last, segment == "index.html" { return .index(folder, path: Array(path.dropLast())) }
            if last, let note = here.first(where: { $0.recordType == .note && SiteExporter.pagePath($0.name) == segment }) { return .page(note) }
            guard let next = here.first(where: { $0.name == segment }) else { return nil }
            switch next.recordType {
            case .folder: folder = next.recordName
            case .file: return last ? .file(next) : nil
            case .note: return last ? .markdown(next) : nil
            }
        }
        return .index(folder, path: path)
    }

    func page(_ note: Record, rendered: RenderedNote) -> Answer {
        let title = rendered.title ?? String(note.name.dropLast(note.name.hasSuffix(".md") ? 3 : 0))
        return Answer(contentType: "text/html; charset=utf-8", body: Array(Template.page(title: title, body: rendered.html, root: base).utf8))
    }

    /// A folder's index; notes are listed by their titles (as an export lists them), else
    /// by their names without `.md`.
    func index(_ folder: String?, path: [String], titles: [String: String] = [:]) -> Answer {
        let prefix = path.isEmpty ? "" : path.joined(separator: "/") + "/"
        let entries = (children[folder] ?? []).map { child -> Template.Entry in
            switch child.recordType {
            case .folder: return Template.Entry(href: base + SiteExporter.href(prefix + child.name) + "/", label: child.name + "/", kind: "folder")
            case .note:
                let label = titles[child.recordName] ?? (child.name.hasSuffix(".md") ? String(child.name.dropLast(3)) : child.name)
                return Template.Entry(href: base + SiteExporter.href(prefix + SiteExporter.pagePath(child.name)), label: label, kind: "note")
            case .file: return Template.Entry(href: base + SiteExporter.href(prefix + child.name), label: child.name, kind: "file")
            }
        }
        let title = folder.flatMap { byName[$0]?.name } ?? share.title
        return Answer(contentType: "text/html; charset=utf-8", body: Array(Template.index(title: title, entries: entries, root: base).utf8))
    }

    static func contentType(_ name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "svg": "image/svg+xml"
        case "webp": "image/webp"
        case "pdf": "application/pdf"
        case "txt": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }
}
