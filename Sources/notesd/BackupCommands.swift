import ArgumentParser
import Foundation
import NotesModel
import NotesStore

extension Notesd {
    /// The SQLite file behind notesd's own options (`notesd --data-dir X backup …`, or
    /// the options after the subcommand, which ArgumentParser gives to notesd too).
    func sqlitePath(for what: String) throws -> (path: String, paths: DaemonPaths) {
        let paths = try DaemonPaths(dataDir: dataDir, socket: socket, database: database)
        switch paths.database {
        case .sqlite(let path):
            return (path, paths)
        case .postgres(let location):
            throw ValidationError(
                """
                On PostgreSQL, \(what) with PostgreSQL's own tools, which take a consistent copy while notesd serves:
                  pg_dump --format=custom --file notes.dump '\(location)'
                  pg_restore --clean --if-exists --no-owner --dbname '\(location)' notes.dump   # with every notesd stopped
                """)
        }
    }
}

/// `notesd backup`: a consistent copy of the store while notesd serves.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the store into a new file, while notesd runs.",
        discussion: """
            The copy is one consistent snapshot (notesd goes on serving and writing), checked \
            for integrity and synced to disk before it takes its name. On PostgreSQL it tells \
            how to use pg_dump instead.

            Example:
              notesd backup --to /var/backups/notes-$(date +%F).sqlite
              notesd backup --data-dir /var/lib/notes --to /var/backups/notes.sqlite
            """)

    /// --data-dir, --database and --socket, as notesd takes them.
    @ParentCommand var daemon: Notesd

    @Option(help: "The file to write (it must not exist).")
    var to: String

    func run() async throws {
        let (path, _) = try daemon.sqlitePath(for: "take backups")
        do {
            let summary = try SQLiteBackup.backup(databaseAt: path, to: to)
            print("Backed up \(path) to \(to): \(describe(summary)).")
        } catch {
            FileHandle.standardError.write(Data("notesd backup: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// `notesd restore`: puts a backup back, with notesd stopped.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put a backup in place of the store (notesd must be stopped).",
        discussion: """
            The backup is checked first; the database it replaces is kept beside it as \
            notes.sqlite.before-restore-DATE, never deleted. Mounts that synced after the \
            backup was taken fetch their zones again from the restored state; what they \
            still have queued is uploaded again.

            Example:
              systemctl stop notesd
              notesd restore --from /var/backups/notes-2026-11-24.sqlite
              systemctl start notesd
            """)

    /// --data-dir, --database and --socket, as notesd takes them.
    @ParentCommand var daemon: Notesd

    @Option(help: "The backup file to restore.")
    var from: String

    func run() async throws {
        let (path, paths) = try daemon.sqlitePath(for: "restore backups")
        if DaemonProbe.isAnswering(socket: paths.socket) {
            FileHandle.standardError.write(Data("notesd restore: notesd is running on \(paths.socket); stop it first (systemctl stop notesd).\n".utf8))
            throw ExitCode(1)
        }
        do {
            let (summary, keptAs) = try SQLiteBackup.restore(from: from, to: path)
            print("Restored \(from) to \(path): \(describe(summary)).")
            if let keptAs { print("The database it replaced is kept as \(keptAs).") }
        } catch {
            FileHandle.standardError.write(Data("notesd restore: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

private func describe(_ summary: SQLiteBackup.Summary) -> String {
    "\(summary.accounts) accounts, \(summary.records) records, \(summary.versions) versions, \(summary.shares) shares, "
        + ByteCountFormatter.string(fromByteCount: summary.bytes, countStyle: .binary)
}

/// Whether a notesd answers on a Unix socket.
enum DaemonProbe {
    static func isAnswering(socket path: String) -> Bool {
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return connected == 0
    }
}
