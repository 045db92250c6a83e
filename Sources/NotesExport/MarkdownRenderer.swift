import CCmarkGFM
import Foundation
import NotesText
import Synchronization

/// GitHub-flavoured Markdown to HTML with cmark-gfm: tables, task lists, strikethrough,
/// autolinks, footnotes, fenced code with a language class.
///
/// Unless raw HTML is allowed, HTML in a note is shown as text (cmark alone would drop
/// it), and cmark's safe mode empties `javascript:`-style link targets, so a note runs
/// nothing in a reader's browser.
public struct MarkdownRenderer: Sendable {
    /// A rendered note.
    public struct Page: Sendable, Equatable {
        /// The text of the first heading, if any.
        public var title: String?
        /// The HTML body (no `<html>` around it).
        public var html: String
    }

    public var allowRawHTML: Bool
    /// Rewrites a link target (e.g. `plan.md#goals` to `plan.html#goals`); `nil` keeps it.
    public var rewriteLink: @Sendable (String) -> String?

    public init(allowRawHTML: Bool = false, rewriteLink: @escaping @Sendable (String) -> String? = { _ in nil }) {
        self.allowRawHTML = allowRawHTML
        self.rewriteLink = rewriteLink
    }

    /// cmark-gfm's extensions, registered once: its registry is a global list that two
    /// threads registering at once corrupt (pages rendered in parallel came out without
    /// their table or task list). A `static let` runs its initializer exactly once.
    nonisolated(unsafe) static let extensions: [OpaquePointer] = {
        cmark_gfm_core_extensions_ensure_registered()
        let names: [String] = ["table", "strikethrough", "autolink", "tasklist", "tagfilter"]
        return names.compactMap { name in name.withCString { cmark_find_syntax_extension($0) } }
    }()

    /// cmark-gfm keeps the inline parser's table of special characters in a global that
    /// a parse sets from its extensions and clears when its inlines are done (and a
    /// table row's parse does the same while the blocks are read), so two parses at once
    /// lose each other's strikethrough or autolinks (seen in parallel tests). One parse
    /// at a time; the tree it returns is the caller's own, so walking and rendering it
    /// run in parallel.
    static let parsing = Mutex(())

    public func render(_ markdown: String) -> Page {
        var options = NOTES_CMARK_OPT_DEFAULT | NOTES_CMARK_OPT_FOOTNOTES
        if allowRawHTML { options |= NOTES_CMARK_OPT_UNSAFE }
        guard let parser = cmark_parser_new(options) else { return Page(title: nil, html: "") }
        defer { cmark_parser_free(parser) }
        for syntax in Self.extensions { cmark_parser_attach_syntax_extension(parser, syntax) }
        var text = markdown
        // The tree stays on this thread; the lock only orders the parses.
        nonisolated(unsafe) var parsed: OpaquePointer?
        Self.parsing.withLock { _ in
            text.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) { cmark_parser_feed(parser, $0.baseAddress, $0.count) }
            }
            parsed = cmark_parser_finish(parser)
        }
        guard let document = parsed else { return Page(title: nil, html: "") }
        defer { cmark_node_free(document) }
        let (title, headings) = rewrite(document)
        guard let rendered = cmark_render_html(document, options, cmark_parser_get_syntax_extensions(parser)) else {
            return Page(title: title, html: "")
        }
        defer { free(rendered) }
        return Page(title: title, html: Self.addHeadingIDs(UnsafeBufferPointer(start: UnsafePointer(rendered), count: strlen(rendered)), headings))
    }

    /// Walks the tree once: notes the headings, rewrites links, and turns raw HTML into
    /// text. Returns the title and every heading's text in order.
    private func rewrite(_ document: OpaquePointer) -> (String?, [String]) {
        var title: String?
        var headings: [String] = []
        var rawHTML: [OpaquePointer] = []
        var links: [OpaquePointer] = []
        let iterator = cmark_iter_new(document)
        defer { cmark_iter_free(iterator) }
        while case let event = cmark_iter_next(iterator), event != CMARK_EVENT_DONE {
            guard event == CMARK_EVENT_ENTER, let node = cmark_iter_get_node(iterator) else { continue }
            let type = cmark_node_get_type(node)
            if type == CMARK_NODE_HEADING {
                let text = plainText(node)
                headings.append(text)
                if title == nil { title = MarkdownTitle.bounded(text) }
            }
            if type == CMARK_NODE_LINK || type == CMARK_NODE_IMAGE { links.append(node) }
            if !allowRawHTML && (type == CMARK_NODE_HTML_BLOCK || type == CMARK_NODE_HTML_INLINE) { rawHTML.append(node) }
        }
        for node in links {
            guard let url = cmark_node_get_url(node).map({ String(cString: $0) }), let rewritten = rewriteLink(url) else { continue }
            cmark_node_set_url(node, rewritten)
        }
        for node in rawHTML {
            let literal = cmark_node_get_literal(node).map { String(cString: $0) } ?? ""
            let block = cmark_node_get_type(node) == CMARK_NODE_HTML_BLOCK
            guard let replacement = cmark_node_new(block ? CMARK_NODE_PARAGRAPH : CMARK_NODE_TEXT) else { continue }
            if block {
                guard let text = cmark_node_new(CMARK_NODE_TEXT) else { continue }
                cmark_node_set_literal(text, literal.hasSuffix("\n") ? String(literal.dropLast()) : literal)
                cmark_node_append_child(replacement, text)
            } else {
                cmark_node_set_literal(replacement, literal)
            }
            cmark_node_insert_before(node, replacement)
            cmark_node_unlink(node)
            cmark_node_free(node)
        }
        return (title, headings)
    }

    /// GitHub's anchors: `## Next steps` gets `id="next-steps"` (a number follows
    /// repeats), so links like `api.md#section` land on their heading. cmark writes
    /// headings as bare `<hN>` and escapes `<` in text, so each one is found in order.
    static func addHeadingIDs(_ html: UnsafeBufferPointer<CChar>, _ headings: [String]) -> String {
        html.withMemoryRebound(to: UInt8.self) { bytes in
            guard !headings.isEmpty, let base = bytes.baseAddress else { return String(decoding: bytes, as: UTF8.self) }
            var seen: [String: Int] = [:]
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + headings.count * 24)
            var copied = 0
            var index = 0
            var heading = 0
            // `<hN>` with N in 1...6, found by memchr from one `<` to the next (a Regex
            // here cost a quarter of the export).
            while heading < headings.count, index < bytes.count,
                let found = memchr(base + index, Int32(UInt8(ascii: "<")), bytes.count - index)
            {
                index = UnsafePointer(found.assumingMemoryBound(to: UInt8.self)) - base
                guard index + 3 < bytes.count, bytes[index + 1] == UInt8(ascii: "h"),
                    (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(bytes[index + 2]), bytes[index + 3] == UInt8(ascii: ">")
                else {
                    index += 1
                    continue
                }
                var slug = slugify(headings[heading])
                if let count = seen[slug] {
                    seen[slug] = count + 1
                    slug += "-\(count)"
                } else {
                    seen[slug] = 1
                }
                out += bytes[copied..<index + 3]
                out += " id=\"\(slug)\">".utf8
                index += 4
                copied = index
                heading += 1
            }
            out += bytes[copied...]
            return String(decoding: out, as: UTF8.self)
        }
    }

    static func slugify(_ text: String) -> String {
        var slug = ""
        for character in text.lowercased() {
            if character.isLetter || character.isNumber || character == "-" || character == "_" {
                slug.append(character)
            } else if character == " " {
                slug.append("-")
            }
        }
        return slug.isEmpty ? "section" : slug
    }

    /// The text inside a node (a heading's words without their markup).
    private func plainText(_ node: OpaquePointer) -> String {
        var text = ""
        let iterator = cmark_iter_new(node)
        defer { cmark_iter_free(iterator) }
        while case let event = cmark_iter_next(iterator), event != CMARK_EVENT_DONE {
            guard event == CMARK_EVENT_ENTER, let child = cmark_iter_get_node(iterator) else { continue }
            let type = cmark_node_get_type(child)
            if type == CMARK_NODE_TEXT || type == CMARK_NODE_CODE, let literal = cmark_node_get_literal(child) {
                text += String(cString: literal)
            }
        }
        return text.trimmingCharacters(in: .whitespaces)
    }
}
