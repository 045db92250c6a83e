#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
public import Foundation
import NotesFS
import NotesModel

/// A real `notes mount --foreground` process for one account of a `DaemonProcess`.
///
/// Mount points live under /var/tmp, not /tmp: vim skips its backup-and-rename save
/// for files under /tmp (`backupskip`), and that save is one the tests must drive.
public final class MountProcess: @unchecked Sendable {
    public let mountpoint: String
    public let cacheDir: String
    public let logPath: String
    let folder: String
    let daemon: DaemonProcess
    let token: String?
    public private(set) var process = Process()
    /// More `notes mount` options for the next `start()` (`--conflict-markers`).
    public var extraArguments: [String] = []

    /// Whether the cache folder is a tmpfs of its own (unmounted at the end).
    let cacheOnTmpfs: Bool

    /// - Parameter cacheSize: puts the replica on a tmpfs of this size (`4m`), to fill it up.
    public init(daemon: DaemonProcess, token: String? = nil, cacheSize: String? = nil) throws {
        folder = "/var/tmp/nm-\(UUID().uuidString.prefix(8))"
        mountpoint = "\(folder)/mnt"
        cacheDir = "\(folder)/cache"
        logPath = "\(folder)/mount.log"
        self.daemon = daemon
        self.token = token
        cacheOnTmpfs = cacheSize != nil
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        if let cacheSize {
            try FileManager.default.createDirectory(atPath: cacheDir, withIntermediateDirectories: true)
            let mounted = Shell.run("mount -t tmpfs -o size=\(cacheSize) tmpfs '\(cacheDir)'")
            guard mounted.status == 0 else { throw NotesError(.internalError, "could not put the cache on a tmpfs: \(mounted)") }
        }
        try start()
    }

    /// The `notes` binary next to `notesd`.
    public static var notesBinary: String {
        URL(fileURLWithPath: DaemonProcess.binary).deletingLastPathComponent().appendingPathComponent("notes").path
    }

    /// Starts the mount and waits until the kernel lists it.
    public func start() throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.notesBinary)
        process.arguments = ["mount", mountpoint, "--foreground", "--cache-dir", cacheDir, "--socket", daemon.socket, "--log-level", "debug"] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTES_TOKEN"] = token
        // The mount registers itself for `notes status` in the user's cache folder: the
        // test's own, not the real one.
        environment["XDG_CACHE_HOME"] = xdgCache
        process.environment = environment
        try process.appendOutput(to: logPath)
        try process.run()
        // A mount comes up in 0.2 s, beside stress-ng too; in the full suite's first
        // minute the test process itself has stalled past 20 s.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if Self.isMounted(mountpoint) { return }
            if !process.isRunning { break }
            usleep(20_000)
        }
        // (A test process that stalled past the deadline looks once more before failing.)
        if Self.isMounted(mountpoint) { return }
        // What the test saw, for a failure that comes only under load: whether the mount
        // process still ran (and how it ended), and whether the mount table could be read.
        let ended = process.isRunning ? "still running" : "ended with status \(process.terminationStatus) (\(process.terminationReason == .uncaughtSignal ? "signal" : "exit"))"
        let table = MountTable.current().map { "\($0.entries.count) entries" } ?? "unreadable: \(String(cString: strerror(errno)))"
        throw NotesError(
            .serviceUnavailable, "the mount did not come up at \(mountpoint) (the process \(ended); the mount table \(table)); its log:\n\(self.log())")
    }

    public func log() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// `$XDG_CACHE_HOME` of the mount process: where it registers for `notes status`.
    public var xdgCache: String { "\(folder)/xdg" }

    /// A path inside the mount.
    public func path(_ relative: String) -> String { "\(mountpoint)/\(relative)" }

    /// Sends `signal` and waits for the process to end; returns whether it did.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> Bool {
        kill(process.processIdentifier, signal)
        return waitForExit(killed: signal == SIGKILL)
    }

    /// Waits for the mount process to end (signalled by someone else, say a shell right
    /// after a write); after a kill, clears the mount it could not take down itself.
    @discardableResult
    public func waitForExit(killed: Bool = false) -> Bool {
        let deadline = Date().addingTimeInterval(15)
        while ChildExit.status(of: process) == nil && Date() < deadline { usleep(20_000) }
        if killed { _ = Shell.run("fusermount3 -u -z \(mountpoint)") }
        return ChildExit.status(of: process) != nil
    }

    public static func isMounted(_ path: String) -> Bool {
        MountTable.current()?.hasNotesMount(at: path) == true
    }

    /// Whether this machine can mount FUSE file systems at all.
    public static var fuseAvailable: Bool { FileManager.default.fileExists(atPath: "/dev/fuse") }

    deinit {
        if ChildExit.status(of: process) == nil {
            kill(process.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while ChildExit.status(of: process) == nil && Date() < deadline { usleep(20_000) }
        }
        if Self.isMounted(mountpoint) { _ = Shell.run("fusermount3 -u -z \(mountpoint)") }
        if ChildExit.status(of: process) == nil { kill(process.processIdentifier, SIGKILL) }
        if cacheOnTmpfs { _ = Shell.run("umount -l '\(cacheDir)'") }
        // NOTES_KEEP_LOGS=DIR keeps every mount's log there, for a failure to be read later.
        if let keep = ProcessInfo.processInfo.environment["NOTES_KEEP_LOGS"] {
            try? FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
            try? FileManager.default.copyItem(atPath: logPath, toPath: "\(keep)/\(URL(fileURLWithPath: folder).lastPathComponent).log")
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// Runs commands the way a person types them, through /bin/sh.
public enum Shell {
    public struct Result: Sendable, CustomStringConvertible {
        public var status: Int32
        public var stdout: String
        public var stderr: String
        public var description: String { "status \(status), stdout: \(stdout), stderr: \(stderr)" }
    }

    @discardableResult
    public static func run(_ command: String, in directory: String? = nil, environment: [String: String] = [:]) -> Result {
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        guard let output = Spawn.run(["/bin/sh", "-c", command], environment: merged, directory: directory) else {
            return Result(status: -1, stdout: "", stderr: "could not start /bin/sh: \(String(cString: strerror(errno)))")
        }
        return Result(status: output.status, stdout: String(decoding: output.stdout, as: UTF8.self), stderr: String(decoding: output.stderr, as: UTF8.self))
    }

    /// Runs a program with `environment` only, none of the test process's: what a new
    /// user's shell with nothing exported gives it.
    public static func runAlone(_ arguments: [String], environment: [String: String]) -> Result {
        guard let output = Spawn.run(arguments, environment: environment, directory: nil) else {
            return Result(status: -1, stdout: "", stderr: "could not start \(arguments.first ?? ""): \(String(cString: strerror(errno)))")
        }
        return Result(status: output.status, stdout: String(decoding: output.stdout, as: UTF8.self), stderr: String(decoding: output.stderr, as: UTF8.self))
    }

    /// `run` on a thread of its own, for a command that runs long (a script that waits for
    /// the test to go on): waiting for it on one of the test's task threads would take
    /// that thread from everything else for as long.
    public static func runOnOwnThread(_ command: String, in directory: String? = nil, environment: [String: String] = [:]) async -> Result {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: run(command, in: directory, environment: environment))
            }
        }
    }
}
