import Foundation
import NotesModel
import NotesTestSupport
import Testing

/// `notes` and `notesd` as a person or a script meets them: help with examples,
/// readable errors on stderr, exit statuses to branch on.
@Suite(.serialized) struct CommandLineTests {
    static func binary(_ name: String) -> String {
        URL(fileURLWithPath: DaemonProcess.binary).deletingLastPathComponent().appendingPathComponent(name).path
    }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary(name))
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe(), stdin = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try stdin.fileHandleForWriting.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
    }

    @Test(arguments: [
        ["--help"], ["whoami", "--help"], ["account", "create", "--help"], ["account", "token", "--help"],
        ["put", "--help"], ["cat", "--help"], ["ls", "--help"], ["mount", "--help"], ["unmount", "--help"],
        ["share", "--help"], ["invitations", "--help"], ["accept", "--help"], ["participants", "--help"],
        ["unshare", "--help"], ["leave", "--help"], ["history", "--help"], ["export", "--help"], ["status", "--help"],
    ])
    func everyCommandHelpHasAnExample(_ arguments: [String]) throws {
        let result = try Self.run("notes", arguments)
        #expect(result.status == 0)
        #expect(result.stdout.contains("Example"), "\(arguments.joined(separator: " ")) --help has no example")
    }

    @Test func daemonHelpHasAnExample() throws {
        let result = try Self.run("notesd", ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Example"))
    }

    @Test func scriptsCanTrustOutputAndExitStatus() async throws {
        let daemon = try await DaemonProcess.started()
        let env = ["NOTES_SOCKET": daemon.socket]
        let created = try Self.run("notes", ["account", "create", "bob", "--json"], environment: env)
        #expect(created.status == 0)
        let issued = try NotesJSON.decoder().decode(API.TokenIssued.self, from: Data(created.stdout.utf8))
        #expect(issued.name == "bob")

        let again = try Self.run("notes", ["account", "create", "bob"], environment: env)
        #expect(again.status == 75)
        #expect(again.stderr.contains("already exists"))

        let bob = env.merging(["NOTES_TOKEN": issued.token]) { $1 }
        #expect(try Self.run("notes", ["whoami"], environment: bob).stdout == "bob\n")
        let notAdmin = try Self.run("notes", ["account", "create", "eve"], environment: bob)
        #expect(notAdmin.status == 77)
        #expect(notAdmin.stderr.contains("Only the admin"))

        #expect(try Self.run("notes", ["put", "plan.md"], environment: bob, input: "# Plan\n").status == 0)
        #expect(try Self.run("notes", ["cat", "plan.md"], environment: bob).stdout == "# Plan\n")
        let missing = try Self.run("notes", ["cat", "nope.md"], environment: bob)
        #expect(missing.status == 66)
        let badName = try Self.run("notes", ["put", "a/b.md"], environment: bob, input: "x")
        #expect(badName.status == 64)
        #expect(badName.stderr.contains("'/'"))

        let forged = try Self.run("notes", ["whoami"], environment: env.merging(["NOTES_TOKEN": "ntk_forged"]) { $1 })
        #expect(forged.status == 77)
        let unreachable = try Self.run("notes", ["whoami"], environment: ["NOTES_SOCKET": daemon.socket + ".missing"])
        #expect(unreachable.status == 69)
        #expect(unreachable.stderr.contains("Is it running?"))
    }
}
