#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import Logging
import NotesClient
import NotesModel
import NotesMount
import NotesReplica

/// `notes mount DIR`: the account's notes as files, for every editor.
struct Mount: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount your notes at DIR: private/ holds yours, shared/<owner>/ what others shared with you.",
        discussion: """
            Runs in the background unless --foreground is given; `notes unmount DIR` (or \
            `fusermount3 -u DIR`) ends it. Reads come from a local replica in the cache \
            folder, so the mount keeps working while notesd is away; saves are uploaded at once. \
            Edits made here and elsewhere are merged; where they touch the same lines the note \
            keeps the other version and yours goes beside it as "plan (conflict, you, date).md" \
            (listed by `notes status`), or, with --conflict-markers, both go into the note.

            Example:
              notes mount ~/Notes && ls ~/Notes/private
            """)

    @Argument(help: "The folder to mount at (made if missing).")
    var directory: String

    @Flag(help: "Stay in the foreground and log to standard error.")
    var foreground = false

    @Option(help: "Folder for the local replica (default: $XDG_CACHE_HOME/notes or ~/.cache/notes; profiles/NAME in it for a saved profile).")
    var cacheDir: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    @Flag(help: "When your edits and someone else's touch the same lines, put both into the note between git-style <<<<<<< markers instead of keeping yours in a conflict copy.")
    var conflictMarkers = false

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let mountpoint = try prepareMountpoint()
            let cache = try cacheDir ?? defaultCacheDirectory(for: options.choice())
            if foreground {
                var logger = Logger(label: "notes.mount")
                logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
                do {
                    try await MountRunner.run(
                        mountpoint: mountpoint, client: try options.client(waitingForLocal: true), cacheDirectory: cache, conflictMarkers: conflictMarkers, logger: logger)
                } catch let error as NotesError {
                    throw error
                } catch {
                    throw NotesError(.internalError, "The mount failed: \(error)")
                }
            } else {
                try startInBackground(mountpoint: mountpoint, cache: cache)
            }
        }
    }

    /// The absolute mount point, made if missing; a mount left behind by a crashed
    /// process ("Transport endpoint is not connected") is cleared first.
    func prepareMountpoint() throws -> String {
        let path = URL(fileURLWithPath: directory).standardizedFileURL.path
        var info = stat()
        if stat(path, &info) != 0 && errno == ENOTCONN {
            _ = Self.unmount(path)
        }
        if isMounted(path) {
            throw NotesError(.constraintViolation, "\(path) is already a notes mount; `notes unmount \(path)` ends it.")
        }
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw NotesError(.invalidArguments, "\(path) is not a folder; give an empty folder to mount at.")
        }
        return path
    }

    /// Starts `notes mount DIR --foreground` detached, with its log in the cache folder,
    /// and returns once the mount is up (or says why it is not).
    func startInBackground(mountpoint: String, cache: String) throws {
        try ReplicaLocation.prepare(cache)
        let logPath = "\(cache)/mount.log"
        try ReplicaLocation.ownerOnly(logPath)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        // The token goes to the child through its environment, never its arguments,
        // which every local user can read in `ps` for as long as the mount runs.
        process.arguments = Self.withoutToken(Array(CommandLine.arguments.dropFirst())) + ["--foreground"]
        var environment = ProcessInfo.processInfo.environment
        if let token = options.token { environment["NOTES_TOKEN"] = token }
        process.environment = environment
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if isMounted(mountpoint) {
                print("Mounted at \(mountpoint) (log: \(logPath)); `notes unmount \(mountpoint)` ends it.")
                return
            }
            if !process.isRunning { break }
            usleep(50_000)
        }
        let tail = (try? String(contentsOfFile: logPath, encoding: .utf8))?.split(separator: "\n").suffix(5).joined(separator: "\n") ?? ""
        throw NotesError(.serviceUnavailable, "The mount did not come up. Its log (\(logPath)) ends with:\n\(tail)")
    }

    /// `arguments` less `--token T` and `--token=T`.
    static func withoutToken(_ arguments: [String]) -> [String] {
        var kept: [String] = []
        var skipNext = false
        for argument in arguments {
            if skipNext {
                skipNext = false
            } else if argument == "--token" {
                skipNext = true
            } else if !argument.hasPrefix("--token=") {
                kept.append(argument)
            }
        }
        return kept
    }

    static func unmount(_ path: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        process.arguments = ["-u", "-z", path]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

/// Whether `path` is a notes mount now, from the kernel's mount table.
func isMounted(_ path: String) -> Bool {
    notesMounts().contains(path)
}

/// `notes unmount DIR`.
struct Unmount: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a notes mount; queued saves stay in the replica and upload on the next mount.",
        discussion: "Example:\n  notes unmount ~/Notes")

    @Argument(help: "The mount point.")
    var directory: String

    func run() async throws {
        try await runReporting {
            let path = URL(fileURLWithPath: directory).standardizedFileURL.path
            guard isMounted(path) else {
                throw NotesError(.invalidArguments, "\(path) is not a notes mount.")
            }
            guard Mount.unmount(path) else {
                throw NotesError(.internalError, "fusermount3 could not unmount \(path); close the programs that use it and try again.")
            }
            // Give the mount process a moment to finish its last upload.
            for _ in 0..<100 where isMounted(path) { usleep(20_000) }
            print("Unmounted \(path).")
        }
    }
}

/// Where a mount keeps its replica unless told: the cache folder, and for a saved
/// profile a folder of its own in it, so that the same account name on two servers
/// never shares a replica.
func defaultCacheDirectory(for choice: ConnectionChoice) -> String {
    let base = ReplicaLocation.defaultDirectory()
    guard let profile = choice.profile else { return base }
    return "\(base)/profiles/\(profile)"
}
