#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
public import Foundation
import GRDB
public import NotesModel

/// Consistent copies of the embedded store, taken while notesd serves, and putting one
/// back (`notesd backup`, `notesd restore`).
///
/// A backup uses SQLite's online backup API in one step: it reads one snapshot of the
/// database (WAL mode lets notesd go on writing meanwhile) into a new file, which is
/// checked (`PRAGMA integrity_check`) and synced before it takes its final name, so a
/// backup that exists is whole.
public enum SQLiteBackup {
    /// What a backup or a restore holds.
    public struct Summary: Sendable, Equatable {
        public var accounts: Int
        public var records: Int
        public var versions: Int
        public var shares: Int
        public var bytes: Int64
    }

    /// Copies the store at `source` into the new file `destination`.
    public static func backup(databaseAt source: String, to destination: String) throws(NotesError) -> Summary {
        guard FileManager.default.fileExists(atPath: source) else {
            throw NotesError(.invalidArguments, "There is no database at \(source): give notesd's --data-dir or --database.")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw NotesError(.invalidArguments, "\(destination) already exists; give a new file name (backups never overwrite).")
        }
        let partial = destination + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let reader = try DatabasePool(path: source, configuration: configuration)
            SQLiteStore.makeOwnerOnly(partial)
            let copy = try DatabaseQueue(path: partial)
            try reader.backup(to: copy)
            let summary = try check(copy)
            try copy.close()
            try syncFile(partial)
            guard rename(partial, destination) == 0 else {
                throw NotesError(.serviceUnavailable, "Cannot name the backup \(destination): \(String(cString: strerror(errno))).")
            }
            try syncFile((destination as NSString).deletingLastPathComponent)
            return summary
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            if let error = error as? NotesError { throw error }
            throw NotesError(.serviceUnavailable, "The backup of \(source) failed: \(error). Nothing was written to \(destination).")
        }
    }

    /// Puts the backup `backup` in place of the store at `database` (notesd stopped). The
    /// database it replaces is kept beside it, renamed, and never deleted.
    /// - Returns: what the restored database holds, and where the old one went (if any).
    public static func restore(from backup: String, to database: String, now: Date = Date()) throws(NotesError) -> (Summary, keptAs: String?) {
        guard FileManager.default.fileExists(atPath: backup) else {
            throw NotesError(.invalidArguments, "There is no backup at \(backup).")
        }
        let staged = database + ".restoring"
        try? FileManager.default.removeItem(atPath: staged)
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let summary = try check(try DatabaseQueue(path: backup, configuration: configuration))
            try FileManager.default.copyItem(atPath: backup, toPath: staged)
            // The schema is brought to this binary's version now, not at notesd's next
            // start: a backup from a newer notesd is refused here.
            _ = try SQLiteStore(path: staged, searchable: false)
            try syncFile(staged)
            var keptAs: String?
            if FileManager.default.fileExists(atPath: database) {
                let stamp = ISO8601DateFormatter().string(from: now).replacingOccurrences(of: ":", with: "")
                let aside = "\(database).before-restore-\(stamp)"
                // Its WAL is checkpointed into it first, so that the kept file is whole.
                _ = try DatabaseQueue(path: database).writeWithoutTransaction { db in try db.checkpoint(.truncate) }
                guard rename(database, aside) == 0 else {
                    throw NotesError(.serviceUnavailable, "Cannot move \(database) aside: \(String(cString: strerror(errno))).")
                }
                for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
                keptAs = aside
            }
            guard rename(staged, database) == 0 else {
                throw NotesError(.serviceUnavailable, "Cannot put the restored database at \(database): \(String(cString: strerror(errno))).")
            }
            // The search index described the database before: notesd rebuilds it.
            let index = SQLiteSearchIndex.path(besides: database)
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: index + suffix) }
            try syncFile((database as NSString).deletingLastPathComponent)
            return (summary, keptAs)
        } catch {
            try? FileManager.default.removeItem(atPath: staged)
            if let error = error as? NotesError { throw error }
            throw NotesError(.serviceUnavailable, "Restoring \(backup) failed: \(error). The database at \(database) is as it was.")
        }
    }

    /// Refuses a damaged file; counts what it holds.
    static func check(_ database: DatabaseQueue) throws -> Summary {
        try database.read { db in
            let verdict = try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? ""
            guard verdict == "ok" else {
                throw NotesError(.internalError, "The copy is damaged (\(verdict.prefix(200))); nothing was replaced.")
            }
            guard try db.tableExists("records") else {
                throw NotesError(.invalidArguments, "That file is not a notes database.")
            }
            return Summary(
                accounts: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM accounts") ?? 0,
                records: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records") ?? 0,
                versions: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM versions") ?? 0,
                shares: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM shares WHERE stopped = 0") ?? 0,
                bytes: try Int64.fetchOne(db, sql: "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()") ?? 0)
        }
    }

    /// fsync of a file or folder, so that a rename that follows is durable.
    static func syncFile(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw NotesError(.serviceUnavailable, "Cannot open \(path) to sync it: \(String(cString: strerror(errno))).") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw NotesError(.serviceUnavailable, "Cannot sync \(path): \(String(cString: strerror(errno))).") }
    }
}
