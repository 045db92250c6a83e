import ArgumentParser
import Foundation
import NotesClient
import NotesModel

/// `notes`: the command-line client of `notesd`.
@main
struct Notes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notes",
        abstract: "Markdown notes, shared the way CloudKit shares records.",
        discussion: """
            Talks to notesd over its Unix socket (--socket, $NOTES_SOCKET, or the default path) \
            or over TCP (--server, $NOTES_SERVER) with a token (--token, $NOTES_TOKEN); over \
            https:// with the system's CAs, or --ca-file ($NOTES_CA_FILE) for a CA of your own.

            Examples:
              notes whoami
              notes mount ~/Notes
              echo "# Plan" | notes put plan.md
              notes cat plan.md
              notes account create bob --email bob@example.com
              notes whoami --server https://notes.example.com:8420 --ca-file team-ca.pem --token "$TOKEN"
            """,
        version: "notes \(NotesVersion.release) (API \(NotesVersion.api))",
        subcommands: [
            Whoami.self, AccountCommand.self, TokenCommand.self, Mount.self, Unmount.self, ShareCommand.self, Invitations.self, Accept.self,
            Participants.self, Unshare.self, Leave.self, History.self, Show.self, Diff.self, Restore.self, Search.self, Watch.self, Export.self, Status.self, Put.self, Cat.self,
            List.self,
        ])
}

/// How to reach the daemon and how to print; shared by every subcommand.
struct ClientOptions: ParsableArguments {
    @Option(help: "Unix socket of notesd (default: $NOTES_SOCKET or the daemon's default path).")
    var socket: String?

    @Option(help: "Base URL of notesd over TCP, e.g. http://127.0.0.1:8420 or https://notes.example.com:8420 (default: $NOTES_SERVER).")
    var server: String?

    @Option(help: "Bearer token (default: $NOTES_TOKEN); needed over TCP.")
    var token: String?

    @Option(
        help: ArgumentHelp("PEM file of the CA that signed notesd's TLS certificate, for an https:// --server (default: $NOTES_CA_FILE, else the system's CAs).", valueName: "FILE")
    )
    var caFile: String?

    @Flag(help: "Print JSON for scripts instead of text.")
    var json = false

    func client() -> NotesClient {
        let env = ProcessInfo.processInfo.environment
        let token = token ?? env["NOTES_TOKEN"]
        if let server = server ?? env["NOTES_SERVER"] {
            return NotesClient(endpoint: .http(server), token: token, caFile: caFile ?? env["NOTES_CA_FILE"])
        }
        let home = env["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        return NotesClient(endpoint: .unixSocket(socket ?? DefaultPaths.socket(environment: env, home: home)), token: token)
    }

    /// Prints `value` as JSON with `--json`, else the text.
    func emit(_ value: some Encodable, text: () -> String) throws {
        if json {
            let encoder = NotesJSON.encoder()
            encoder.outputFormatting.insert(.prettyPrinted)
            print(String(decoding: try encoder.encode(value), as: UTF8.self))
        } else {
            print(text())
        }
    }
}

/// Runs a command body and turns `NotesError` into a sentence on stderr and an exit
/// status scripts can branch on (sysexits-style).
func runReporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as NotesError {
        FileHandle.standardError.write(Data("notes: \(error.message)\n".utf8))
        throw ExitCode(exitStatus(for: error.code))
    }
}

func exitStatus(for code: NotesError.Code) -> Int32 {
    switch code {
    case .invalidArguments, .changeTokenExpired: 64
    case .unknownItem, .zoneNotFound: 66
    case .serviceUnavailable, .requestRateLimited: 69
    case .notAuthenticated, .permissionFailure: 77
    case .serverRecordChanged, .batchRequestFailed, .alreadyShared, .constraintViolation, .folderNotEmpty, .referenceViolation: 75
    case .limitExceeded, .quotaExceeded: 73
    case .internalError: 70
    }
}
