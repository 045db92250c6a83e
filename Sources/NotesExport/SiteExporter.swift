import Foundation

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
            try collect(source, as: base, into: &items)
        }
        if !items.contains(where: { $0.isFolder && $0.target.isEmpty }) {
            items.insert(Item(source: "", target: "", isFolder: true), at: 0)
        }
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: output, withIntermediateDirectories: true)
        try Data(Stylesheet.css.utf8).write(to: URL(fileURLWithPath: "\(output)/style.css"))
        var summary = Summary(pages: 0, indexes: 0, attachments: 0)
        var titles: [String: String] = [:]
        let notes = items.filter { !$0.isFolder && $0.target.hasSuffix(".md") }
        for item in notes {
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: item.source)), as: UTF8.self)
            let renderer = MarkdownRenderer(allowRawHTML: allowRawHTML, rewriteLink: Self.pageLink)
            let page = renderer.render(text)
            let name = URL(fileURLWithPath: item.target).deletingPathExtension().lastPathComponent
            let title = page.title ?? name
            titles[item.target] = title
            let target = Self.pagePath(item.target)
            try write(Template.page(title: title, body: page.html, root: Self.root(of: target)), to: "\(output)/\(target)")
            summary.pages += 1
            progress(summary.pages, notes.count)
        }
        for item in items where !item.isFolder && !item.target.hasSuffix(".md") {
            let destination = "\(output)/\(item.target)"
            try fileManager.createDirectory(atPath: (destination as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            if fileManager.fileExists(atPath: destination) { try fileManager.removeItem(atPath: destination) }
            try fileManager.copyItem(atPath: item.source, toPath: destination)
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
                if child.isFolder { return Template.Entry(href: "\(name)/index.html", label: name + "/", kind: "folder") }
                if child.target.hasSuffix(".md") { return Template.Entry(href: Self.pagePath(name), label: titles[child.target] ?? name, kind: "note") }
                return Template.Entry(href: name, label: name, kind: "file")
            }
            let target = prefix + "index.html"
            let title = folder.target.isEmpty ? (sources.count == 1 ? URL(fileURLWithPath: sources[0]).lastPathComponent : "Notes") : URL(fileURLWithPath: folder.target).lastPathComponent
            try write(Template.index(title: title, entries: entries, root: Self.root(of: target)), to: "\(output)/\(target)")
            summary.indexes += 1
        }
        return summary
    }

    private func collect(_ source: String, as target: String, into items: inout [Item]) throws {
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

    private func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

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
