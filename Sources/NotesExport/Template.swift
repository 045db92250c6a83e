/// The HTML around rendered notes: one page layout, one index layout.
public enum Template {
    public struct Entry: Sendable {
        public var href: String
        public var label: String
        /// `folder`, `note` or `file` (a CSS class).
        public var kind: String
        public init(href: String, label: String, kind: String) {
            self.href = href
            self.label = label
            self.kind = kind
        }
    }

    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// No script, no plugin, no form, nothing from elsewhere: the pages hold notes that
    /// others wrote. (Public pages send the same policy as a header too.)
    public static let contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"

    /// The policy of the page that asks for a link's password: as above, but its one
    /// form may post back to the same server.
    public static let passwordPagePolicy = "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    static func head(title: String, root: String, policy: String = contentSecurityPolicy, nav: Bool = true) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta http-equiv="Content-Security-Policy" content="\(policy)">
        <title>\(escape(title))</title>
        <link rel="stylesheet" href="\(root)style.css">
        </head>
        <body>
        \(nav ? "<nav><a href=\"\(root)index.html\">Index</a></nav>\n" : "")
        """
    }

    /// What a public link with a password shows until the password is given: one field,
    /// posted back to the address asked for. It names nothing of the share; `message`
    /// says why the last try failed.
    public static func passwordPage(message: String?, root: String) -> String {
        var body = """
            <main>
            <h1>This link needs a password</h1>
            <p>The notes behind this link are protected by a password. Ask the person who sent you the link for it.</p>

            """
        if let message { body += "<p class=\"error\" role=\"alert\"><strong>\(escape(message))</strong></p>\n" }
        body += """
            <form method="post">
            <p><label for="password">Password</label><br>
            <input type="password" id="password" name="password" autocomplete="current-password" required autofocus>
            <button type="submit">Open</button></p>
            </form>
            </main>
            </body>
            </html>

            """
        return head(title: "Password needed", root: root, policy: passwordPagePolicy, nav: false) + body
    }

    /// A note's page; `root` leads from the page to the site's root (`../`, or an absolute path).
    public static func page(title: String, body: String, root: String) -> String {
        head(title: title, root: root) + "<main>\n" + body + "</main>\n</body>\n</html>\n"
    }

    /// A folder's index.
    public static func index(title: String, entries: [Entry], root: String) -> String {
        var body = "<main>\n<h1>\(escape(title))</h1>\n<ul class=\"index\">\n"
        for entry in entries {
            body += "<li class=\"\(entry.kind)\"><a href=\"\(escape(entry.href))\">\(escape(entry.label))</a></li>\n"
        }
        body += "</ul>\n</main>\n</body>\n</html>\n"
        return head(title: title, root: root) + body
    }
}

/// One readable stylesheet that also prints well.
public enum Stylesheet {
    public static let css = """
        :root { color-scheme: light dark; --text: #1f2328; --muted: #59636e; --line: #d1d9e0; --code: #f6f8fa; --link: #0969da; }
        @media (prefers-color-scheme: dark) { :root { --text: #e6edf3; --muted: #9198a1; --line: #3d444d; --code: #151b23; --link: #4493f8; } }
        html { font: 17px/1.6 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; color: var(--text); }
        body { max-width: 46rem; margin: 0 auto; padding: 1.5rem 1.25rem 4rem; }
        nav { font-size: .9rem; margin-bottom: 1.5rem; }
        a { color: var(--link); text-decoration: none; } a:hover { text-decoration: underline; }
        h1, h2, h3 { line-height: 1.25; margin: 1.6em 0 .6em; } h1 { font-size: 1.9rem; } h2 { font-size: 1.45rem; border-bottom: 1px solid var(--line); padding-bottom: .2em; }
        code, pre { font: .88em/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--code); border-radius: 6px; }
        code { padding: .15em .35em; } pre { padding: 1em; overflow-x: auto; } pre code { padding: 0; background: none; }
        blockquote { margin: 0; padding: 0 1em; color: var(--muted); border-left: .25em solid var(--line); }
        table { border-collapse: collapse; margin: 1em 0; display: block; overflow-x: auto; } th, td { border: 1px solid var(--line); padding: .35em .8em; }
        img { max-width: 100%; } hr { border: 0; border-top: 1px solid var(--line); }
        ul.contains-task-list { list-style: none; padding-left: 1.2em; } .task-list-item input { margin-right: .5em; }
        ul.index { list-style: none; padding: 0; } ul.index li { padding: .3em 0; border-bottom: 1px solid var(--line); }
        ul.index li.folder a { font-weight: 600; }
        .footnotes { font-size: .9rem; color: var(--muted); border-top: 1px solid var(--line); margin-top: 3rem; }
        @media print { nav { display: none; } body { max-width: none; padding: 0; } a { color: inherit; } pre, table, img { break-inside: avoid; } }

        """
}
