#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesModel

/// `notes login`: signs this machine in to a notesd server and saves the profile that
/// every later command and the mount use.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign in to a notesd server with a sign-in link or a token, and remember it.",
        discussion: """
            With a sign-in link (from your admin's `notes account create NAME --link` or \
            `notes account link NAME`), a token for this machine is made on the server and \
            saved; nobody else ever sees it. With a server URL, give a token you already have, \
            typed at the prompt or with --token-stdin.

            The server, the token and the CA file are saved in $XDG_CONFIG_HOME/notes/config \
            (else ~/.config/notes/config), readable by you only, under a profile name. Every \
            command and `notes mount` then use it: options first, then environment variables \
            (NOTES_SERVER, NOTES_TOKEN, NOTES_PROFILE), then the profile, then a local notesd.

            Examples:
              notes login 'https://notes.example.com:8420/sign-in#nsl_…'
              notes login 'https://notes.example.com:8420/sign-in#nsl_…' --ca-file team-ca.pem
              notes login https://notes.example.com:8420 --token-stdin < token.txt
              notes login https://work.example.com --profile work
            """)

    @Argument(help: "A sign-in link, or the server's URL (https://notes.example.com:8420).")
    var target: String?

    @Option(
        help: ArgumentHelp(
            "Save under this profile name (default: $NOTES_PROFILE, else the profile of the same server, else \"default\" for the first profile, else the server's host name).",
            valueName: "NAME"))
    var profile: String?

    @Option(help: ArgumentHelp("PEM file of the CA that signed the server's TLS certificate; a copy is kept with the profile.", valueName: "FILE"))
    var caFile: String?

    @Flag(help: "Read the token from standard input instead of asking for it.")
    var tokenStdin = false

    @Option(help: "What the token made from a sign-in link is called in `notes token list` (default: this machine's name).")
    var label: String?

    @Flag(help: "Print JSON for scripts instead of text.")
    var json = false

    struct Report: Encodable {
        var profile: String
        var server: String
        var account: String
        var configFile: String
    }

    func run() async throws {
        try await runReporting {
            let env = ProcessInfo.processInfo.environment
            let configPath = ClientConfigFile.path(environment: env)
            var config = try ClientConfigFile.load(configPath)
            let code = target.flatMap { SignInCode(parsing: $0) }
            guard let server = try server(code: code, config: config) else {
                throw NotesError(.invalidArguments, "Which server? Give its URL or a sign-in link: `notes login https://notes.example.com:8420`.")
            }
            let name = profileName(for: server, config: config, environment: env)
            let caFile = try keptCAFile(profile: name, configPath: configPath) ?? config.profiles[name].flatMap { ConnectionChoice.sameServer($0.server, server) ? $0.caFile : nil }
            let anonymous = NotesClient(endpoint: .http(server), caFile: caFile)
            let token: String
            if code != nil, let link = target {
                token = try await anonymous.signIn(link: link, label: label ?? "notes login on \(Self.machineName())").token
            } else {
                token = try readToken(server: server)
            }
            let account: Account
            do {
                account = try await NotesClient(endpoint: .http(server), token: token, caFile: caFile).whoami()
            } catch let error as NotesError where error.code == .notAuthenticated {
                throw NotesError(.notAuthenticated, "\(server) refused that token (wrong, revoked or expired). Ask your admin for a sign-in link (`notes account link NAME`).")
            }
            let replaced = config.profiles[name]
            config.profiles[name] = ClientConfig.Profile(server: server, token: token, caFile: caFile, account: account.name)
            if config.defaultProfile == nil || config.profiles[config.defaultProfile ?? ""] == nil { config.defaultProfile = name }
            try ClientConfigFile.save(config, to: configPath)
            // The token this profile held before is of no use to anyone now.
            if let replaced, replaced.token != token, ConnectionChoice.sameServer(replaced.server, server) {
                _ = try? await NotesClient(endpoint: .http(replaced.server), token: replaced.token, caFile: replaced.caFile)
                    .revokeToken(id: TokenCommand.Revoke.tokenID(replaced.token))
            }
            let report = Report(profile: name, server: server, account: account.name, configFile: configPath)
            if json {
                let encoder = NotesJSON.encoder()
                encoder.outputFormatting.insert(.prettyPrinted)
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                print("Logged in to \(server) as \(account.name) (profile \(name), saved in \(configPath)).")
                if config.defaultProfile != name { print("It is not the default profile: pass --profile \(name) or set NOTES_PROFILE=\(name).") }
                print("Next: `notes mount ~/Notes` shows your notes as files.")
            }
        }
    }

    /// The server a sign-in link names, the URL given, or the profile's server.
    func server(code: SignInCode?, config: ClientConfig) throws(NotesError) -> String? {
        if let target {
            if code != nil {
                guard let server = SignInCode.server(of: target) else {
                    throw NotesError(.invalidArguments, "That is only the end of a sign-in link; give the whole link, starting with https://.")
                }
                return server
            }
            guard let components = URLComponents(string: target), let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
                components.host?.isEmpty == false
            else {
                throw NotesError(.invalidArguments, "\(target) is neither a sign-in link nor a server URL such as https://notes.example.com:8420.")
            }
            var url = target
            while url.hasSuffix("/") { url.removeLast() }
            return url
        }
        return (profile ?? config.defaultProfile).flatMap { config.profiles[$0]?.server }
    }

    func profileName(for server: String, config: ClientConfig, environment: [String: String]) -> String {
        if let profile { return profile }
        if let named = environment["NOTES_PROFILE"], !named.isEmpty { return named }
        if let same = config.profiles.keys.sorted().first(where: { ConnectionChoice.sameServer(config.profiles[$0]!.server, server) }) { return same }
        if config.profiles.isEmpty { return ClientConfig.firstProfileName }
        return URLComponents(string: server)?.host ?? ClientConfig.firstProfileName
    }

    /// A copy of `--ca-file` beside the configuration, so that the profile does not
    /// depend on where the file was downloaded to.
    func keptCAFile(profile: String, configPath: String) throws(NotesError) -> String? {
        guard let caFile else { return nil }
        guard let pem = FileManager.default.contents(atPath: caFile), String(decoding: pem, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw NotesError(.invalidArguments, "\(caFile) is not a PEM certificate file (it should hold -----BEGIN CERTIFICATE-----).")
        }
        let folder = (configPath as NSString).deletingLastPathComponent
        let kept = "\(folder)/\(profile)-ca.pem"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if FileManager.default.fileExists(atPath: kept) { try FileManager.default.removeItem(atPath: kept) }
            guard FileManager.default.createFile(atPath: kept, contents: pem, attributes: [.posixPermissions: 0o600]) else {
                throw POSIXError(.EIO)
            }
        } catch {
            throw NotesError(.internalError, "Could not keep a copy of \(caFile) at \(kept): \(error).")
        }
        return kept
    }

    /// The token from standard input, or typed at a prompt that does not echo it.
    func readToken(server: String) throws(NotesError) -> String {
        let text: String?
        if tokenStdin {
            text = readLine(strippingNewline: true)
        } else if isatty(STDIN_FILENO) == 1 {
            FileHandle.standardError.write(Data("Token for \(server): ".utf8))
            var saved = termios()
            tcgetattr(STDIN_FILENO, &saved)
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSANOW, &quiet)
            text = readLine(strippingNewline: true)
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        } else {
            throw NotesError(.invalidArguments, "No token: pass --token-stdin and give the token on standard input, or use a sign-in link.")
        }
        guard let token = text?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
            throw NotesError(.invalidArguments, "No token was given.")
        }
        return token
    }

    static func machineName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "this machine" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// `notes logout`: revokes the profile's token on its server and forgets the profile.
struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Revoke this machine's token on the server and remove the saved profile.",
        discussion: """
            Examples:
              notes logout
              notes logout --profile work
              notes logout --forget     # the server is gone: remove the profile here only
            """)

    @Option(help: ArgumentHelp("The profile to log out of (default: $NOTES_PROFILE, else the default profile).", valueName: "NAME"))
    var profile: String?

    @Flag(help: "Remove the profile even if its server cannot be reached to revoke the token (it stays valid until revoked elsewhere).")
    var forget = false

    func run() async throws {
        try await runReporting {
            let env = ProcessInfo.processInfo.environment
            let configPath = ClientConfigFile.path(environment: env)
            var config = try ClientConfigFile.load(configPath)
            guard let name = profile ?? env["NOTES_PROFILE"].flatMap({ $0.isEmpty ? nil : $0 }) ?? config.defaultProfile, let saved = config.profiles[name] else {
                throw NotesError(.unknownItem, "You are not logged in\(profile.map { " with the profile \($0)" } ?? ""): there is no such profile in \(configPath).")
            }
            let tokenID = TokenCommand.Revoke.tokenID(saved.token)
            var outcome = "Revoked this machine's token (\(tokenID)) on \(saved.server)"
            do {
                _ = try await NotesClient(endpoint: .http(saved.server), token: saved.token, caFile: saved.caFile).revokeToken(id: tokenID)
            } catch let error as NotesError where error.code == .notAuthenticated {
                outcome = "The token was already revoked or expired on \(saved.server)"
            } catch {
                let error = (error as? NotesError) ?? NotesError(.serviceUnavailable, "\(error)")
                guard forget else {
                    throw NotesError(
                        error.code,
                        "\(error.message)\nNothing was removed. Try again once \(saved.server) answers, or `notes logout --forget` to remove the profile here only (the token \(tokenID) then stays valid until revoked: `notes token revoke \(tokenID)` from another machine)."
                    )
                }
                outcome = "Could not reach \(saved.server); the token \(tokenID) stays valid until revoked (`notes token revoke \(tokenID)`)"
            }
            config.profiles[name] = nil
            if config.defaultProfile == name { config.defaultProfile = config.profiles.count == 1 ? config.profiles.keys.first : nil }
            try ClientConfigFile.save(config, to: configPath)
            if let caFile = saved.caFile, caFile.hasPrefix((configPath as NSString).deletingLastPathComponent + "/") {
                try? FileManager.default.removeItem(atPath: caFile)
            }
            print("\(outcome); the profile \(name) is removed.")
        }
    }
}
