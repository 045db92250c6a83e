import Foundation
import NotesModel
import NotesPostgres

/// Where the daemon keeps things, resolved as SPEC section 8 says.
struct DaemonPaths {
    let dataDir: String
    let socket: String
    let database: Database

    /// Where the records are: a SQLite file, or a PostgreSQL database that several
    /// notesd may share.
    enum Database: CustomStringConvertible {
        case sqlite(path: String)
        case postgres(PostgresLocation)

        var description: String {
            switch self {
            case .sqlite(let path): path
            case .postgres(let location): location.description
            }
        }
    }

    init(dataDir: String?, socket: String?, database: String?) throws {
        let env = ProcessInfo.processInfo.environment
        let home = env["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        let resolvedData = dataDir ?? DefaultPaths.dataDir(environment: env, home: home)
        self.dataDir = resolvedData
        var socketEnvironment = env
        socketEnvironment["NOTES_DATA_DIR"] = resolvedData
        self.socket = socket ?? DefaultPaths.socket(environment: socketEnvironment, home: home)
        // The URL may come from the environment (a systemd EnvironmentFile), so that a
        // password in it shows neither in the unit nor in `ps`.
        switch database ?? env["NOTES_DATABASE_URL"] {
        case nil:
            self.database = .sqlite(path: "\(resolvedData)/notes.sqlite")
        case let url? where url.hasPrefix("sqlite:"):
            self.database = .sqlite(path: String(url.dropFirst("sqlite:".count)))
        case let url? where PostgresLocation.matches(url):
            self.database = .postgres(try PostgresLocation(url: url))
        case let url?:
            throw NotesError(.invalidArguments, "--database must be sqlite:PATH or a postgres:// URL, not \(url).")
        }
        try FileManager.default.createDirectory(atPath: resolvedData, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Makes the socket's folder and removes a stale socket file; refuses to start
    /// when another daemon still answers on it.
    func prepareSocket() throws {
        let folder = (socket as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        guard FileManager.default.fileExists(atPath: socket) else { return }
        if SocketProbe.isListening(socket) {
            throw NotesError(.serviceUnavailable, "Another notesd is already listening on \(socket); stop it first or pass --socket.")
        }
        try FileManager.default.removeItem(atPath: socket)
    }
}
