#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
public import Foundation
public import NotesClient
import NotesModel
import Testing

/// A real `notesd` process on a real Unix socket (and optionally TCP), in its own
/// temporary data directory.
public final class DaemonProcess: @unchecked Sendable {
    public let dataDir: String
    public let socket: String
    /// Options given to every start of this daemon (restarts too).
    let extraArguments: [String]
    public let port: Int?
    public private(set) var process: Process
    public let logPath: String

    /// The built `notesd`: `$NOTESD_BINARY`, else next to the test bundle, else the
    /// package's `.build/debug`.
    public static var binary: String {
        if let path = ProcessInfo.processInfo.environment["NOTESD_BINARY"] { return path }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("notesd").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/notesd").path
    }

    /// A TCP port free now, below Linux's ephemeral range (32768–60999), where the
    /// suite's own outgoing connections take theirs: a random port there was once taken
    /// by one of them ("Address already in use").
    public static func freePort() -> Int {
        for _ in 0..<100 {
            let candidate = Int.random(in: 10_000...32_000)
            let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { continue }
            defer { Glibc.close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(candidate).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound == 0 { return candidate }
        }
        return Int.random(in: 10_000...32_000)
    }

    /// Starts a daemon and waits until it answers on its socket.
    public init(tcp: Bool = false, dataDir: String? = nil, arguments extra: [String] = []) async throws {
        self.extraArguments = extra
        // Unix socket paths are limited to 108 bytes: keep the folder short.
        self.dataDir = dataDir ?? "/tmp/nt-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: self.dataDir, withIntermediateDirectories: true)
        socket = "\(self.dataDir)/notesd.sock"
        port = tcp ? Self.freePort() : nil
        logPath = "\(self.dataDir)/notesd.log"
        process = Process()
        try start()
    }

    private func start() throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        var arguments = ["--data-dir", dataDir, "--socket", socket, "--log-level", "debug"] + extraArguments
        if let port { arguments += ["--listen", "127.0.0.1:\(port)"] }
        process.arguments = arguments
        try process.appendOutput(to: logPath)
        try process.run()
    }

    /// Waits for the socket, then for an answer. (Asking before the socket exists made
    /// the HTTP client back off and retry on its own until past this deadline, on a
    /// machine busy enough that notesd took seconds to start.)
    ///
    /// The deadline is generous: with the suite's simulation holding the test process's
    /// two cooperative threads beside `stress-ng --cpu 2`, notesd was up and listening
    /// while the probe's answer took over a minute to be read.
    public func waitUntilReady() async throws {
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline && !FileManager.default.fileExists(atPath: socket) && process.isRunning {
            try await Task.sleep(for: .milliseconds(20))
        }
        let probe = NotesClient(endpoint: .unixSocket(socket), token: nil, timeoutSeconds: 5)
        while ContinuousClock.now < deadline {
            if (try? await probe.whoami()) != nil { return }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw NotesError(.serviceUnavailable, "notesd did not come up; its log:\n\(log)")
    }

    public static func started(tcp: Bool = false, arguments: [String] = []) async throws -> DaemonProcess {
        let daemon = try await DaemonProcess(tcp: tcp, arguments: arguments)
        try await daemon.waitUntilReady()
        return daemon
    }

    /// A client on the socket, as the Unix user running the tests or with a token.
    public func client(token: String? = nil) -> NotesClient {
        NotesClient(endpoint: .unixSocket(socket), token: token, timeoutSeconds: 30)
    }

    public func tcpClient(token: String? = nil) -> NotesClient {
        NotesClient(endpoint: .http("http://127.0.0.1:\(port ?? 0)"), token: token, timeoutSeconds: 30)
    }

    /// Creates an account through the API and returns a client acting as it.
    public func account(_ name: String, email: String? = nil) async throws -> NotesClient {
        let issued = try await client().createAccount(name: name, email: email)
        return client(token: issued.token)
    }

    /// Sends `signal` and waits for the process to exit; returns its exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) async throws -> Int32 {
        kill(process.processIdentifier, signal)
        var deadline = ContinuousClock.now + .seconds(15)
        var extended = false
        while true {
            while ContinuousClock.now < deadline {
                if let status = ChildExit.status(of: process) { return status }
                try await Task.sleep(for: .milliseconds(20))
            }
            // Once its first thread has ended, notesd's own code has run to its end; what
            // is left is the kernel ending the other threads (one in the middle of an
            // fsync on a busy disk): that gets longer, and what they wait on is shown.
            guard !extended, ChildExit.leaderEnded(process.processIdentifier) else { break }
            print("notesd \(process.processIdentifier) has ended but its threads have not after 15 s: \(ChildExit.threads(of: process.processIdentifier))")
            extended = true
            deadline = ContinuousClock.now + .seconds(45)
        }
        // Reaped, with Foundation's handler held back from saying so: it has ended.
        if ChildExit.isGone(process) { return -1 }
        let state =
            (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("State:") } ?? "?"
        Issue.record(
            """
            notesd did not exit within 15 s of signal \(signal) (\(state)); its log ends: \(((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").suffix(2_000))
            its threads: \(ChildExit.threads(of: process.processIdentifier))
            \(ChildExit.stacks(of: process.processIdentifier))
            """)
        kill(process.processIdentifier, SIGKILL)
        return -1
    }

    /// The most memory notesd has held resident since it started (`VmHWM`), in MiB.
    public var peakResidentMiB: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "0").map { $0 / 1024 } ?? 0
    }

    public func restart() async throws {
        try start()
        try await waitUntilReady()
    }

    deinit {
        if ChildExit.status(of: process) == nil { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: dataDir)
    }
}

extension Process {
    /// Sends the process's stdout and stderr to the end of `path` (made if missing), so
    /// a restarted process keeps one log.
    func appendOutput(to path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        log.seekToEndOfFile()
        standardOutput = log
        standardError = log
    }
}
