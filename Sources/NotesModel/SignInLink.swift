public import Foundation

/// A one-time sign-in link as listed to the admin: never its secret, which is shown
/// once when made and kept only as a hash. Whoever opens it with `notes login` gets a
/// token of its account made on their own machine, which the admin never sees.
public struct SignInLinkInfo: Sendable, Codable, Equatable {
    /// The public part of the link (`nsl_<id>_…`): what `revoke` takes.
    public var id: String
    public var account: String
    /// The admin who made it.
    public var createdBy: String?
    public var createdAt: Date
    public var expiresAt: Date
    /// When it was used (a link works once); absent while it waits.
    public var usedAt: Date?

    public init(id: String, account: String, createdBy: String?, createdAt: Date, expiresAt: Date, usedAt: Date? = nil) {
        self.id = id
        self.account = account
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }
}

/// The part of a sign-in link that signs in: `nsl_<id>_<secret>`, found in a whole
/// link (`https://notes.example.com/sign-in#nsl_…`) or given alone.
public struct SignInCode: Sendable, Equatable {
    public var id: String
    public var secret: String

    public static let prefix = "nsl_"
    /// The path notesd serves sign-in links under; the code follows `#`, which browsers
    /// and proxies never send to a server, so it stays out of every access log.
    public static let path = "/sign-in"

    public init(id: String, secret: String) {
        self.id = id
        self.secret = secret
    }

    /// The code's text.
    public var text: String { "\(Self.prefix)\(id)_\(secret)" }

    /// The link as people are sent it: the code after `#`.
    public func link(publicURL: String) -> String {
        "\(publicURL)\(Self.path)#\(text)"
    }

    /// A lifetime asked for, checked (default a day).
    public static func lifetime(_ asked: Double?) throws(NotesError) -> Double {
        guard let asked else { return Limits.signInLinkDefaultSeconds }
        guard asked.isFinite, asked >= 60, asked <= Limits.signInLinkMaxSeconds else {
            throw NotesError(.invalidArguments, "A sign-in link works between 60 seconds and 30 days (2592000); expiresIn was \(asked).")
        }
        return asked
    }

    /// The code in `text` (a whole link or the code alone), or nil when it holds none: the
    /// text ends with it (the part of a link after `#`), as `docs/openapi.yaml` says.
    public init?(parsing text: String) {
        let bytes = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        let length = Self.prefix.utf8.count + 16 + 1 + 43
        guard bytes.count >= length else { return nil }
        let code = bytes[(bytes.count - length)...]
        guard code.starts(with: Self.prefix.utf8) else { return nil }
        let id = code.dropFirst(Self.prefix.utf8.count).prefix(16)
        let separator = code.dropFirst(Self.prefix.utf8.count + 16).first
        let secret = code.suffix(43)
        guard id.allSatisfy(Self.isHex), separator == UInt8(ascii: "_"), secret.allSatisfy(Self.isBase64URL) else { return nil }
        self.id = String(decoding: id, as: UTF8.self)
        self.secret = String(decoding: secret, as: UTF8.self)
    }

    /// The server a whole link names (`https://host:port`), or nil for a code alone.
    public static func server(of link: String) -> String? {
        let trimmed = link.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else { return nil }
        var server = URLComponents()
        server.scheme = scheme
        server.host = host
        server.port = components.port
        var path = components.path
        if path.hasSuffix(Self.path) { path.removeLast(Self.path.count) }
        server.path = path
        return server.string
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }
}
