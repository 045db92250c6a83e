import ArgumentParser
import Foundation
import Logging
import NotesModel
import NotesPostgres
import NotesTransfer
import Synchronization

/// `notesd migrate`: moves a team from the embedded store to PostgreSQL.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy a SQLite store into a PostgreSQL database, to run several notesd on it.",
        discussion: """
            Stop notesd first: the copy refuses to finish if the SQLite database changes under \
            it. Everything is copied as it is (accounts, tokens, zones, records with every \
            version, shares, participants, public links), so tokens, share URLs, record names \
            and change tags stay the same and mounts keep their caches. The PostgreSQL database \
            must be new and empty (created with createdb); an interrupted copy goes on where it \
            stopped when run again. At the end every table is compared on both sides, row \
            counts and content.

            Example:
              systemctl stop notesd
              notesd migrate --from sqlite:/var/lib/notes/notes.sqlite --to 'postgres://notes@db.example.com/notes?sslmode=verify-full'
              notesd --database 'postgres://notes@db.example.com/notes?sslmode=verify-full' --listen 127.0.0.1:8420
            """)

    @Option(help: "The SQLite store to copy: sqlite:PATH, or the path of notes.sqlite.")
    var from: String

    @Option(help: "The PostgreSQL database to copy into: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE].")
    var to: String

    func run() async throws {
        let path = from.hasPrefix("sqlite:") ? String(from.dropFirst("sqlite:".count)) : from
        let parsed = Result { () throws(NotesError) in try PostgresLocation(url: to) }
        guard case .success(let location) = parsed else {
            if case .failure(let error) = parsed { throw ValidationError(error.message) }
            return
        }
        var logger = Logger(label: "notesd.migrate")
        logger.logLevel = .warning
        let database = PostgresDatabase(location, maximumConnections: 2, logger: logger)
        let transfer = StoreTransfer(sqlitePath: path, target: database, logger: logger)
        let pool = Task { await database.run() }
        defer { pool.cancel() }
        let progress = ProgressLine()
        do {
            let report = try await transfer.run { progress.show($0) }
            progress.end()
            if report.alreadyComplete {
                print("The copy was already complete; compared again, both databases hold the same.")
            } else {
                print(report.resumed ? "Copy finished (taken up where it stopped) and compared:" : "Copy finished and compared:")
            }
            for (table, count) in report.rows {
                print("  \(table): \(count) rows, identical")
            }
            print("Start notesd with --database '\(location)'.")
        } catch {
            progress.end()
            FileHandle.standardError.write(Data("notesd migrate: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// Progress on standard error: a line per table, redrawn in place on a terminal and
/// printed every ten percent otherwise (a log stays short).
final class ProgressLine: Sendable {
    private let state = Mutex<(table: String, percent: Int, open: Bool)>(("", -1, false))
    private let terminal = isatty(STDERR_FILENO) != 0

    func show(_ progress: StoreTransfer.Progress) {
        let percent = progress.total == 0 ? 100 : min(100, progress.copied * 100 / progress.total)
        let text = "\(progress.table): \(progress.copied) of \(progress.total) rows (\(percent)%)"
        state.withLock { state in
            let newTable = state.table != progress.table
            let step = percent / 10 != state.percent / 10 || percent == 100 && state.percent != 100
            if terminal {
                FileHandle.standardError.write(Data(((newTable && state.open) ? "\n" : "\r").utf8) + Data(text.utf8))
                state.open = true
            } else if newTable || step {
                FileHandle.standardError.write(Data((text + "\n").utf8))
            }
            state.table = progress.table
            state.percent = percent
        }
    }

    func end() {
        state.withLock { state in
            if terminal && state.open { FileHandle.standardError.write(Data("\n".utf8)) }
            state.open = false
        }
    }
}
