import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for the tests of one process: `initdb` into a folder
/// of its own under /tmp, the server started on a free port (and a Unix socket in that
/// folder), and every test its own database in it. Stopped and removed when the process
/// exits. Debian's `postgresql` package provides the programs (`.ci/run` installs it).
///
/// The server runs as this process's child, not daemonized by `pg_ctl start`: a daemon
/// inherits the descriptor through which Foundation's `Process` learns that its child
/// ended, and `waitUntilExit` of pg_ctl then never returned.
public final class PostgresCluster: Sendable {
    public let directory: String
    public let port: Int
    private let server: Mutex<Process?>

    public static let binaries = "/usr/lib/postgresql/15/bin"

    /// The cluster of this test process, started on first use.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { cluster in
            if let cluster { return cluster }
            let started = try PostgresCluster()
            cluster = started
            atexit { PostgresCluster.sharedCluster.withLock { $0 }?.stop() }
            return started
        }
    }

    private static let sharedCluster = Mutex<PostgresCluster?>(nil)

    /// A cluster of the caller's own (a test that stops and starts the server), stopped
    /// and removed when it is released.
    public static func dedicated() throws -> PostgresCluster {
        try PostgresCluster()
    }

    private init() throws {
        guard FileManager.default.isExecutableFile(atPath: "\(Self.binaries)/initdb") else {
            throw ClusterError("PostgreSQL 15 is not installed (no \(Self.binaries)/initdb): run scripts/setup-debian.sh, which installs Debian's postgresql package.")
        }
        // Directly under /tmp and owned by `postgres`: initdb refuses root, and every
        // folder above the cluster must be reachable by the user it runs as.
        directory = "/tmp/notes-pg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        port = DaemonProcess.freePort()
        try Self.chownToPostgres(directory)
        try Self.run("initdb", ["-D", "\(directory)/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"])
        server = Mutex(nil)
        do {
            try startServer()
        } catch {
            stop()
            throw error
        }
    }

    /// Starts the server on the cluster's port and waits until it answers.
    private func startServer() throws {
        let process = Self.process(
            "postgres",
            [
                "-D", "\(directory)/data", "-p", "\(port)", "-k", directory, "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=off", "-c", "max_connections=200",
            ])
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: try Self.outputFile(in: directory, "server.log")))
        process.standardOutput = log
        process.standardError = log
        try process.run()
        server.withLock { $0 = process }
        // Ready once it answers (initdb and the first start take seconds on a busy machine).
        let deadline = Date().addingTimeInterval(120)
        while (try? Self.run("pg_isready", ["-h", directory, "-p", "\(port)", "-U", "postgres"])) == nil {
            guard process.isRunning, Date() < deadline else {
                throw ClusterError("PostgreSQL did not start: see \(directory)/server.log")
            }
            usleep(50_000)
        }
    }

    /// Stops the server at once (SIGQUIT: every connection is cut, as in a crash), keeping
    /// its data; `resume` starts it again on the same port.
    public func pause() {
        if let process = server.withLock({ $0 }), process.isRunning {
            kill(process.processIdentifier, SIGQUIT)
            _ = ChildExit.wait(for: process)
        }
    }

    public func resume() throws {
        try startServer()
    }

    /// A new, empty database; returns its URL.
    public func createDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        try Self.run("createdb", ["-h", directory, "-p", "\(port)", "-U", "postgres", name])
        return url(database: name)
    }

    /// The URL of a database over TCP on loopback.
    public func url(database: String) -> String {
        "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// The database a URL of `url(database:)` names.
    public static func databaseName(of url: String) -> String {
        String(url.split(separator: "/").last?.split(separator: "?").first ?? "")
    }

    /// Runs SQL through `psql` (for a test that plays another version of notesd).
    @discardableResult
    public func psql(_ sql: String, database: String) throws -> String {
        try Self.run("psql", ["-h", directory, "-p", "\(port)", "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
    }

    /// Stops the server (immediately: nothing in it is worth a checkpoint) and removes it.
    public func stop() {
        if let process = server.withLock({ $0 }), process.isRunning {
            kill(process.processIdentifier, SIGQUIT)
            _ = ChildExit.wait(for: process)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Running the programs

    struct ClusterError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static var isRoot: Bool { getuid() == 0 }

    static func chownToPostgres(_ path: String) throws {
        guard isRoot else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/chown")
        process.arguments = ["postgres:postgres", path]
        try process.run()
        guard ChildExit.wait(for: process) == 0 else { throw ClusterError("chown postgres \(path) failed") }
    }

    /// A PostgreSQL program as a process, run as the `postgres` user when the tests run
    /// as root (`setpriv` runs it in place, with no process of its own in between).
    static func process(_ program: String, _ arguments: [String]) -> Process {
        let process = Process()
        if isRoot {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", "\(binaries)/\(program)"] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "\(binaries)/\(program)")
            process.arguments = arguments
        }
        process.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
        return process
    }

    /// An empty file the `postgres` user may write.
    static func outputFile(in folder: String, _ name: String) throws -> String {
        let path = "\(folder)/\(name)"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        try chownToPostgres(path)
        return path
    }

    /// Runs a short PostgreSQL program to its end; throws with its output if it fails.
    @discardableResult
    static func run(_ program: String, _ arguments: [String]) throws -> String {
        let process = process(program, arguments)
        let outputPath = "/tmp/notes-pg-output-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let status = ChildExit.wait(for: process)
        try? output.close()
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else { throw ClusterError("\(program) \(arguments.joined(separator: " ")) failed: \(text)") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
