public import NotesModel

/// Which notesd a command talks to and with which token, decided in one documented
/// order: options, then environment variables, then the saved profile, then the local
/// socket. A server given by option or environment takes its token and CA from the
/// profile for that same server when none is given.
public struct ConnectionChoice: Sendable, Equatable {
    /// Where the choice came from, for `notes status` and `notes whoami`: a server or
    /// socket given by option or environment variable, a saved profile (however it was
    /// named), or the local socket.
    public enum Source: String, Sendable, Codable {
        case options, environment, profile
        case localSocket = "local socket"
    }

    /// What the command line asked for.
    public struct Asked: Sendable, Equatable {
        public var socket: String?
        public var server: String?
        public var token: String?
        public var caFile: String?
        public var profile: String?

        public init(socket: String? = nil, server: String? = nil, token: String? = nil, caFile: String? = nil, profile: String? = nil) {
            self.socket = socket
            self.server = server
            self.token = token
            self.caFile = caFile
            self.profile = profile
        }
    }

    /// notesd's base URL, or nil for a Unix socket.
    public var server: String?
    /// The Unix socket, when there is no server.
    public var socket: String?
    public var token: String?
    public var caFile: String?
    /// The profile used, if any.
    public var profile: String?
    public var source: Source

    public var endpoint: NotesClient.Endpoint {
        if let server { return .http(server) }
        return .unixSocket(socket ?? "")
    }

    /// The choice for `asked`. `config` is read only when a profile may be needed, so a
    /// command given `--socket` or `--server` with `--token` never reads it.
    public static func choose(
        _ asked: Asked, environment: [String: String], defaultSocket: String, config: () throws(NotesError) -> ClientConfig, configPath: String
    ) throws(NotesError) -> ConnectionChoice {
        let token = asked.token ?? environment["NOTES_TOKEN"].nonEmpty
        if let socket = asked.socket {
            return ConnectionChoice(server: nil, socket: socket, token: token, caFile: nil, profile: nil, source: .options)
        }
        if let server = asked.server {
            return try direct(server, token: token, asked: asked, environment: environment, source: .options, config: config)
        }
        if let name = asked.profile {
            return try named(name, config: config(), configPath: configPath, token: asked.token, caFile: asked.caFile)
        }
        if let socket = environment["NOTES_SOCKET"].nonEmpty {
            return ConnectionChoice(server: nil, socket: socket, token: token, caFile: nil, profile: nil, source: .environment)
        }
        if let server = environment["NOTES_SERVER"].nonEmpty {
            return try direct(server, token: token, asked: asked, environment: environment, source: .environment, config: config)
        }
        if let name = environment["NOTES_PROFILE"].nonEmpty {
            return try named(name, config: config(), configPath: configPath, token: token, caFile: asked.caFile ?? environment["NOTES_CA_FILE"].nonEmpty)
        }
        let saved = try config()
        if let name = saved.defaultProfile ?? (saved.profiles.count == 1 ? saved.profiles.keys.first : nil), saved.profiles[name] != nil {
            return try named(name, config: saved, configPath: configPath, token: token, caFile: asked.caFile ?? environment["NOTES_CA_FILE"].nonEmpty)
        }
        return ConnectionChoice(server: nil, socket: defaultSocket, token: token, caFile: nil, profile: nil, source: .localSocket)
    }

    private static func direct(
        _ server: String, token: String?, asked: Asked, environment: [String: String], source: Source, config: () throws(NotesError) -> ClientConfig
    ) throws(NotesError) -> ConnectionChoice {
        var caFile = asked.caFile ?? environment["NOTES_CA_FILE"].nonEmpty
        var token = token
        var profile: String?
        if token == nil || caFile == nil {
            // The profile saved for this very server lends what was not given.
            let saved = try config()
            if let match = saved.profiles.sorted(by: { $0.key < $1.key }).first(where: { sameServer($0.value.server, server) }) {
                token = token ?? match.value.token
                caFile = caFile ?? match.value.caFile
                profile = match.key
            }
        }
        return ConnectionChoice(server: server, socket: nil, token: token, caFile: caFile, profile: profile, source: source)
    }

    /// The profile `name`, however it was named (`--profile`, `NOTES_PROFILE`, the default).
    private static func named(_ name: String, config: ClientConfig, configPath: String, token: String?, caFile: String?) throws(NotesError)
        -> ConnectionChoice
    {
        guard let profile = config.profiles[name] else {
            let known = config.profiles.keys.sorted()
            throw NotesError(
                .invalidArguments,
                "There is no profile \(name) in \(configPath)"
                    + (known.isEmpty ? "" : " (there is \(known.joined(separator: ", ")))")
                    + ". Make it with `notes login URL --profile \(name)`.")
        }
        return ConnectionChoice(
            server: profile.server, socket: nil, token: token ?? profile.token, caFile: caFile ?? profile.caFile, profile: name, source: .profile)
    }

    /// Two spellings of one server: case of scheme and host, and a trailing slash, aside.
    public static func sameServer(_ a: String, _ b: String) -> Bool {
        func normal(_ url: String) -> String {
            var url = url.lowercased()
            while url.hasSuffix("/") { url.removeLast() }
            return url
        }
        return normal(a) == normal(b)
    }
}

extension Optional where Wrapped == String {
    /// The value unless it is empty: an exported but empty variable counts as unset.
    fileprivate var nonEmpty: String? {
        guard let value = self, !value.isEmpty else { return nil }
        return value
    }
}
