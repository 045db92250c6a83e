import HTTPTypes
import Hummingbird

/// What a browser shows for a sign-in link: the code after `#` never reaches the server,
/// so the page can only say what to do with the link.
enum SignInPage {
    static let html = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer"><title>Sign in to notes</title>
        <style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}code{background:#eee;padding:.1em .3em}</style>
        </head><body>
        <h1>Sign in to notes</h1>
        <p>This link signs one computer in to your notes account. It works once.</p>
        <p>On the computer you want to use, copy the whole link from the address bar and run:</p>
        <pre><code>notes login 'THE LINK'</code></pre>
        <p>Then <code>notes mount ~/Notes</code> shows your notes as files.</p>
        </body></html>
        """

    static func response() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}
