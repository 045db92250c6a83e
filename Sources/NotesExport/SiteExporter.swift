#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import Synchronization

/// Notes and folders to a static site: one page per note, an index per folder, links
/// between notes pointing at the pages, attachments copied, one stylesheet. The same
/// input gives the same bytes (sorted listings, no dates).
public struct SiteExporter {
    public struct Summary: Sendable, Encodable, Equatable {
        public var pages: Int
        public var indexes: Int
        public var attachments: Int

        public init(pages: Int, indexes: Int, attachments: Int) {
            self.pages = pages
            self.indexes = indexes
            self.attachments = attachments
        }
    }

    public var allowRawHTML: Bool
    /// Called after each page with (pages done, pages in all).
    public var progress: (Int, Int) -> Void

    public init(allowRawHTML: Bool = false, progress: @escaping (Int, Int) -> Void = { _, _ in }) {
        self.allowRawHTML = allowRawHTML
        self.progress = progress
    }

    /// One file or folder to write, relative to the output folder.
    struct Item {
        var source: String
        var target: String
        var isFolder: Bool
    }

    /// Exports `sources` (notes or folders) into `output`. One folder goes to the output's
    /// root; several sources each get a folder named after them.
    public func export(_ sources: [String], to output: String) throws -> Summary {
        var items: [Item] = []
        for source in sources {
            let name = URL(fileURLWithPath: source).lastPathComponent
            let base = sources.count == 1 && Self.isFolder(source) ? "" : name
            try collect(source, as: base, into: &items, top: true)
        }
        if !items.contains(where: { $0.isFolder && $0.target.isEmpty }) {
            items.insert(Item(source: "", target: "", isFolder: true), at: 0)
        }
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: output, withIntermediateDirectories: true)
        let site = try OutputFolder(output)
        try site.write(Data(Stylesheet.css.utf8), to: "style.css")
        var summary = Summary(pages: 0, indexes: 0, attachments: 0)
        var titles: [String: String] = [:]
        let notes = items.filter { !$0.isFolder && $0.target.hasSuffix(".md") }
        // Pages are rendered on every core, a batch at a time so that progress is shown
        // as it goes and the first failure stops the export soon.
        let renderer = MarkdownRenderer(allowRawHTML: allowRawHTML, rewriteLink: Self.pageLink)
        for start in stride(from: 0, to: notes.count, by: Self.pagesPerBatch) {
            let batch = Array(notes[start..<min(start + Self.pagesPerBatch, notes.count)])
            let outcomes = Mutex([Result<String, any Error>?](repeating: nil, count: batch.count))
            DispatchQueue.concurrentPerform(iterations: batch.count) { index in
                let outcome = Result { try Self.writePage(batch[index], with: renderer, into: site) }
                outcomes.withLock { $0[index] = outcome }
            }
            for (item, outcome) in zip(batch, outcomes.withLock { $0 }) {
                titles[item.target] = try outcome!.get()
            }
            summary.pages += batch.count
            progress(summary.pages, notes.count)
        }
        for item in items where !item.isFolder && !item.target.hasSuffix(".md") {
            try site.write(try Data(contentsOf: URL(fileURLWithPath: item.source)), to: item.target)
            summary.attachments += 1
        }
        // Each item under its folder, once, instead of a scan of every item per folder.
        var children: [String: [Item]] = [:]
        for item in items where !item.target.isEmpty {
            children[(item.target as NSString).deletingLastPathComponent, default: []].append(item)
        }
        for folder in items where folder.isFolder {
            let prefix = folder.target.isEmpty ? "" : folder.target + "/"
            let children = children[folder.target] ?? []
            let entries = children.map { child -> Template.Entry in
                let name = String(child.target.dropFirst(prefix.count))
                if child.isFolder { return Template.Entry(href: Self.href(name) + "/index.html", label: name + "/", kind: "folder") }
                if child.target.hasSuffix(".md") { return Template.Entry(href: Self.href(Self.pagePath(name)), label: titles[child.target] ?? name, kind: "note") }
                return Template.Entry(href: Self.href(name), label: name, kind: "file")
            }
            let target = prefix + "index.html"
            let title =
                folder.target.isEmpty ? (sources.count == 1 ? URL(fileURLWithPath: sources[0]).lastPathComponent : "Notes") : URL(fileURLWithPath: folder.target).lastPathComponent
            try site.write(Data(Template.index(title: title, entries: entries, root: Self.root(of: target)).utf8), to: target)
            summary.indexes += 1
        }
        return summary
    }

    static let pagesPerBatch = 256

    /// Renders one note to its page and returns the page's title.
    private static func writePage(_ item: Item, with renderer: MarkdownRenderer, into site: OutputFolder) throws -> String {
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: item.source)), as: UTF8.self)
        let page = renderer.render(text)
        let name = URL(fileURLWithPath: item.target).deletingPathExtension().lastPathComponent
        let title = page.title ?? name
        let target = pagePath(item.target)
        try site.write(Data(Template.page(title: title, body: page.html, root: root(of: target)).utf8), to: target)
        return title
    }

    private func collect(_ source: String, as target: String, into items: inout [Item], top: Bool = false) throws {
        // A symbolic link is not followed: what it points to is not part of the notes
        // (and may be anything on the machine). The mount has none.
        var status = stat()
        if !top && lstat(source, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK { return }
        if Self.isFolder(source) {
            items.append(Item(source: source, target: target, isFolder: true))
            let names = try FileManager.default.contentsOfDirectory(atPath: source).filter { !$0.hasPrefix(".") }.sorted()
            for name in names {
                try collect("\(source)/\(name)", as: target.isEmpty ? name : "\(target)/\(name)", into: &items)
            }
        } else {
            items.append(Item(source: source, target: target, isFolder: false))
        }
    }

    /// A relative link whose every segment is percent-encoded: a file named
    /// `javascript:alert(1)` links as `javascript%3Aalert(1)`, a file, not a script.
    public static func href(_ relative: String) -> String {
        relative.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: hrefSegment) ?? "" }
            .joined(separator: "/")
    }

    /// RFC 3986's unreserved characters and the sub-delimiters that are harmless in a
    /// path; ":" is left out so that no first segment reads as a scheme.
    static let hrefSegment = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=@")

    static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// `Specs/api.md` → `Specs/api.html`.
    public static func pagePath(_ note: String) -> String {
        note.hasSuffix(".md") ? String(note.dropLast(3)) + ".html" : note
    }

    /// `../` once per folder above a page, to reach the site's root.
    static func root(of target: String) -> String {
        String(repeating: "../", count: target.split(separator: "/").count - 1)
    }

    /// Relative links to notes point at their pages: `plan.md#goals` → `plan.html#goals`.
    @Sendable public static func pageLink(_ url: String) -> String? {
        guard !url.isEmpty, !url.hasPrefix("/"), !url.hasPrefix("#"), !url.contains("://"), !url.lowercased().hasPrefix("mailto:") else { return nil }
        let parts = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        guard path.lowercased().hasSuffix(".md") else { return nil }
        return String(path.dropLast(3)) + ".html" + (parts.count > 1 ? "#" + parts[1] : "")
    }
}

/// The output folder, written without ever following a symbolic link: a link planted
/// inside it (`site/notes -> /etc`) makes the export stop instead of writing elsewhere.
struct OutputFolder {
    let root: String

    init(_ path: String) throws {
        guard let resolved = realpath(path, nil) else { throw ExportError("Cannot open the output folder \(path).") }
        root = String(cString: resolved)
        free(resolved)
    }

    /// Writes `data` at `relative` (folders made as needed), replacing a file there.
    func write(_ data: Data, to relative: String) throws {
        let parts = relative.split(separator: "/").map(String.init)
        guard !parts.isEmpty, !parts.contains(".."), !parts.contains(".") else { throw ExportError("Refusing to write \(relative).") }
        var folder = root
        for part in parts.dropLast() {
            folder += "/" + part
            var status = stat()
            if lstat(folder, &status) == 0 {
                guard (status.st_mode & S_IFMT) == S_IFDIR else {
                    throw ExportError("\(folder) is a link or a file, not a folder; the export does not write through it.")
                }
            } else if mkdir(folder, 0o755) != 0 && errno != EEXIST {
                throw ExportError("Cannot make \(folder): \(String(cString: strerror(errno))).")
            }
        }
        let path = folder + "/" + parts.last!
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ExportError(
                errno == ELOOP
                    ? "\(path) is a symbolic link; the export does not write through links."
                    : "Cannot write \(path): \(String(cString: strerror(errno))).")
        }
        defer { close(descriptor) }
        try data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                guard written > 0 else { throw ExportError("Cannot write \(path): \(String(cString: strerror(errno))).") }
                offset += written
            }
        }
    }
}

struct ExportError: Error, LocalizedError {
    let message: String
    init(_ message: String) { self.message = message }
    var errorDescription: String? { message }
}
