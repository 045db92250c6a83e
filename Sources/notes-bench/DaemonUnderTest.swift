#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesClient
import NotesModel

/// The notesd process being measured.
final class DaemonUnderTest {
    let process = Process()
    let socket: String

    init(binary: String, folder: String, arguments: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        socket = "\(folder)/notesd.sock"
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--data-dir", folder, "--socket", socket, "--log-level", "warning"] + arguments
        try process.run()
    }

    func client() async throws -> NotesClient {
        let client = NotesClient(endpoint: .unixSocket(socket), timeoutSeconds: 300)
        for _ in 0..<400 {
            if (try? await client.whoami()) != nil { return client }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw NotesError(.serviceUnavailable, "notesd at \(socket) did not start")
    }

    /// CPU seconds notesd has used so far.
    func cpuSeconds() -> Double { notes_bench.cpuSeconds(of: process.processIdentifier) }

    /// VmRSS of the daemon, from /proc.
    func residentMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return .nan }
        return kilobytes / 1024
    }

    func stop() {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
}
