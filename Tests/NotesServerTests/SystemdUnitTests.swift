import Foundation
import NotesTestSupport
import Testing

/// The unit files in `systemd/` pass `systemd-analyze verify`, with `ExecStart`
/// pointed at the notesd just built (verify checks that the binary exists).
@Suite struct SystemdUnitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test(arguments: [("notesd.service", false), ("notesd-postgres.service", false), ("user/notesd.service", true), ("user/notes-mount.service", true)])
    func unitVerifies(_ unit: String, _ user: Bool) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("units-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let text = try String(contentsOf: Self.root.appendingPathComponent("systemd/\(unit)"), encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/notesd", with: DaemonProcess.binary)
            .replacingOccurrences(of: "/usr/local/bin/notes ", with: MountProcess.notesBinary + " ")
        let copy = folder.appendingPathComponent(URL(fileURLWithPath: unit).lastPathComponent)
        try text.write(to: copy, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        process.arguments = (user ? ["--user"] : []) + ["verify", copy.path]
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = folder.path
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(ChildExit.wait(for: process) == 0, "systemd-analyze verify \(unit): \(printed)")
        #expect(printed.isEmpty, "systemd-analyze printed warnings for \(unit): \(printed)")
    }

    /// Every `notes …` command the units' comments give parses as written: run against a
    /// socket where nothing listens, it fails to reach notesd (69), not as a usage error
    /// (64; `--help` would not tell, as it wins over a misplaced option).
    @Test func theCommandsInTheCommentsParse() throws {
        let units = ["notesd.service", "notesd-postgres.service", "user/notesd.service", "user/notes-mount.service"]
        var checked = 0
        for unit in units {
            let text = try String(contentsOf: Self.root.appendingPathComponent("systemd/\(unit)"), encoding: .utf8)
            let comments = text.split(separator: "\n").filter { $0.hasPrefix("#") }.joined(separator: " ")
            for quoted in comments.split(separator: "`").enumerated().filter({ $0.offset % 2 == 1 }).map({ String($0.element) }) {
                var words = quoted.split(separator: " ").map(String.init)
                if words.first == "sudo" { words.removeFirst() }
                guard words.first == "notes", words.count > 1 else { continue }
                let arguments = words.dropFirst().map { $0 == "NAME" ? "bob" : $0 }.map { "'\($0)'" }.joined(separator: " ")
                let run = Shell.run("\(MountProcess.notesBinary) \(arguments)", environment: ["NOTES_SOCKET": "/nonexistent/notesd.sock"])
                #expect(run.status == 69, "\(unit): `\(quoted)` does not parse: \(run.status) \(run.stderr)")
                checked += 1
            }
        }
        #expect(checked >= 1)
    }
}
