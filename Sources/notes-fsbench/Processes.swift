#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesFS

/// The notesd the benchmark runs against, in a folder of its own.
final class Daemon {
    private(set) var process = Process()
    let socket: String
    let folder: String
    let binaries: URL

    init(binaries: URL, folder: String) throws {
        self.folder = folder
        self.binaries = binaries
        socket = "\(folder)/notesd.sock"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try start()
    }

    /// Starts notesd on the folder's data and waits for its socket.
    func start() throws {
        process = Process()
        process.executableURL = binaries.appendingPathComponent("notesd")
        process.arguments = ["--data-dir", folder, "--socket", socket, "--log-level", "warning"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        guard wait(until: { FileManager.default.fileExists(atPath: self.socket) }, seconds: 20) else {
            throw ValidationError("notesd did not start")
        }
    }

    /// Stops notesd and keeps its data, for `start()` again.
    func pause() {
        process.terminate()
        process.waitUntilExit()
    }

    func client(token: String? = nil) -> NotesClient {
        NotesClient(endpoint: .unixSocket(socket), token: token)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// One `notes mount --foreground` process.
final class Mount {
    let process = Process()
    let mountpoint: String

    init(binaries: URL, daemon: Daemon, token: String, mountpoint: String, cache: String) throws {
        self.mountpoint = mountpoint
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        process.executableURL = binaries.appendingPathComponent("notes")
        process.arguments = ["mount", mountpoint, "--foreground", "--cache-dir", cache, "--socket", daemon.socket, "--log-level", "warning"]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTES_TOKEN"] = token
        process.environment = environment
        try process.run()
        guard wait(until: { Self.mounted(mountpoint) }, seconds: 20) else { throw ValidationError("the mount at \(mountpoint) did not come up") }
    }

    static func mounted(_ path: String) -> Bool {
        MountTable.current()?.hasNotesMount(at: path) == true
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
