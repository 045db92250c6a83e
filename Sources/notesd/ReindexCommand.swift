import ArgumentParser
import Foundation
import Logging
import NotesModel
import NotesPostgres
import NotesStore

/// `notesd reindex`: builds the search index again from every note.
struct ReindexCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reindex",
        abstract: "Build the search index again from every note, showing progress.",
        discussion: """
            The index is derived from the notes and rebuilt by itself when it is missing; \
            this rebuilds it on demand (after a crash that damaged it, say). On SQLite, stop \
            notesd first (the index is a file of its own, notes-search.sqlite). On PostgreSQL \
            it may run while notesd serves: the instances help take the notes in.

            Example:
              systemctl stop notesd && notesd reindex --data-dir /var/lib/notes && systemctl start notesd
              notesd reindex --database 'postgres://notes@db.example.com/notes'
            """)

    /// --data-dir, --database and --socket, as notesd takes them.
    @ParentCommand var daemon: Notesd

    func run() async throws {
        let paths = try DaemonPaths(dataDir: daemon.dataDir, socket: daemon.socket, database: daemon.database)
        var logger = Logger(label: "notesd.reindex")
        logger.logLevel = .warning
        let progress = IndexProgress()
        do {
            switch paths.database {
            case .sqlite(let path):
                try await SQLiteStore(path: path, logger: logger).rebuildSearchIndex { progress.show(left: $0) }
            case .postgres(let location):
                let database = PostgresDatabase(location, maximumConnections: 2, logger: logger)
                let pool = Task { await database.run() }
                defer { pool.cancel() }
                _ = try await database.migrate()
                try await PostgresStore(database: database, logger: logger).rebuildSearchIndex { progress.show(left: $0) }
            }
            progress.end()
            print("The search index holds every note.")
        } catch {
            progress.end()
            FileHandle.standardError.write(Data("notesd reindex: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// "N notes left" on standard error, redrawn in place on a terminal, every few thousand otherwise.
final class IndexProgress: Sendable {
    private let terminal = isatty(STDERR_FILENO) != 0

    func show(left: Int) {
        let text = "search index: \(left) notes left to take in"
        if terminal {
            FileHandle.standardError.write(Data(("\r" + text + "   ").utf8))
        } else if left % 5_000 < 256 {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        }
    }

    func end() {
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
