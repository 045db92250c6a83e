#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
public import NotesModel

/// The servers this user signed in to, saved by `notes login` and read by every command
/// and the mount: `$XDG_CONFIG_HOME/notes/config` (else `~/.config/notes/config`), JSON,
/// readable by its owner only (it holds bearer tokens). `docs/interface.md` documents it.
public struct ClientConfig: Codable, Sendable, Equatable {
    /// One server and the token to use there.
    public struct Profile: Codable, Sendable, Equatable {
        /// notesd's base URL (`https://notes.example.com:8420`).
        public var server: String
        public var token: String
        /// PEM file of the CA that signed the server's certificate (else the system's CAs).
        public var caFile: String?
        /// The account the token speaks for, as the server said at login.
        public var account: String?

        public init(server: String, token: String, caFile: String? = nil, account: String? = nil) {
            self.server = server
            self.token = token
            self.caFile = caFile
            self.account = account
        }
    }

    /// The profile commands use when none is named (`--profile`, `NOTES_PROFILE`).
    public var defaultProfile: String?
    public var profiles: [String: Profile]

    public init(defaultProfile: String? = nil, profiles: [String: Profile] = [:]) {
        self.defaultProfile = defaultProfile
        self.profiles = profiles
    }

    /// The name `notes login` gives a profile when none is asked for.
    public static let firstProfileName = "default"
}

/// Reading and writing `ClientConfig`'s file.
public enum ClientConfigFile {
    /// The file for `environment`: `$XDG_CONFIG_HOME/notes/config`, else `~/.config/notes/config`.
    public static func path(environment: [String: String]) -> String {
        if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty { return "\(config)/notes/config" }
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        return "\(home)/.config/notes/config"
    }

    /// The saved configuration, empty when there is no file. A file that others may read
    /// or write, or that another user owns, is refused: its tokens may have leaked, or
    /// someone else could point this user's commands at their server.
    public static func load(_ path: String) throws(NotesError) -> ClientConfig {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return ClientConfig() }
            throw NotesError(.invalidArguments, "Could not read \(path): \(String(cString: strerror(errno))).")
        }
        if info.st_uid != geteuid() {
            throw NotesError(
                .permissionFailure, "\(path) belongs to another user (uid \(info.st_uid)); it holds tokens, so it is not used. Remove it and log in again with `notes login`.")
        }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 {
            throw NotesError(
                .permissionFailure,
                "\(path) can be read by others (mode \(String(mode, radix: 8))) and holds your tokens, so it is not used. Run `chmod 600 \(path)`; if others may have read it, revoke its tokens (`notes token list`, `notes token revoke ID`) and log in again."
            )
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw NotesError(.invalidArguments, "Could not read \(path).")
        }
        do {
            return try JSONDecoder().decode(ClientConfig.self, from: data)
        } catch {
            throw NotesError(.invalidArguments, "\(path) is not a notes configuration (\(Self.reason(error))). Fix it, or move it away and log in again with `notes login`.")
        }
    }

    /// Writes the configuration whole (a new file renamed over the old), readable by
    /// its owner only, in a folder only its owner may enter.
    public static func save(_ config: ClientConfig, to path: String) throws(NotesError) {
        let folder = (path as NSString).deletingLastPathComponent
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let data = try encoder.encode(config) + Data("\n".utf8)
            let temporary = "\(path).\(getpid()).new"
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            defer { close(descriptor) }
            let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == data.count, fsync(descriptor) == 0 else {
                unlink(temporary)
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            guard rename(temporary, path) == 0 else {
                unlink(temporary)
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        } catch {
            throw NotesError(.internalError, "Could not save \(path): \(error). Nothing was changed.")
        }
    }

    private static func reason(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .dataCorrupted(let context): return context.debugDescription
        case .keyNotFound(let key, _): return "\"\(key.stringValue)\" is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
