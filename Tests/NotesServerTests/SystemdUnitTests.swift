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
}
