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
            Talks to the server `notes login` saved (a profile), or to notesd on this machine \
            over its Unix socket. Options come first, then environment variables, then the \
            profile, then the local socket: --socket ($NOTES_SOCKET), --server ($NOTES_SERVER) \
            with --token ($NOTES_TOKEN) and --ca-file ($NOTES_CA_FILE), --profile ($NOTES_PROFILE).

            Examples:
              notes login 'https://notes.example.com:8420/sign-in#nsl_…'
              notes whoami
              notes mount ~/Notes
              echo "# Plan" | notes put plan.md
              notes cat plan.md
              notes account create bob --email bob@example.com
              notes whoami --server https://notes.example.com:8420 --ca-file team-ca.pem --token "$TOKEN"
            """,
        version: "notes \(NotesVersion.release) (API \(NotesVersion.api))",
        subcommands: [
            Login.self, Logout.self, Whoami.self, AccountCommand.self, TokenCommand.self, Mount.self, Unmount.self, ShareCommand.self, Invitations.self, Accept.self,
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

    @Option(help: "Bearer token (default: $NOTES_TOKEN, else the profile's); needed over TCP.")
    var token: String?

    @Option(
        help: ArgumentHelp(
            "PEM file of the CA that signed notesd's TLS certificate, for an https:// --server (default: $NOTES_CA_FILE, else the profile's, else the system's CAs).",
            valueName: "FILE")
    )
    var caFile: String?

    @Option(help: ArgumentHelp("Saved sign-in to use (default: $NOTES_PROFILE, else the one `notes login` made first).", valueName: "NAME"))
    var profile: String?

    @Flag(help: "Print JSON for scripts instead of text.")
    var json = false

    var asked: ConnectionChoice.Asked {
        ConnectionChoice.Asked(socket: socket, server: server, token: token, caFile: caFile, profile: profile)
    }

    /// Which notesd to talk to: options, then environment variables, then the saved
    /// profile, then the local socket (`ConnectionChoice`).
    func choice() throws(NotesError) -> ConnectionChoice {
        let env = ProcessInfo.processInfo.environment
        let home = env["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        let configPath = ClientConfigFile.path(environment: env)
        return try ConnectionChoice.choose(
            asked, environment: env, defaultSocket: DefaultPaths.socket(environment: env, home: home),
            config: { () throws(NotesError) in try ClientConfigFile.load(configPath) }, configPath: configPath)
    }

    /// The client for `choice()`. With no profile and no local notesd, says how to log
    /// in, unless `waitingForLocal` (the mount, which may start before a local notesd).
    func client(waitingForLocal: Bool = false) throws(NotesError) -> NotesClient {
        let choice = try choice()
        if choice.source == .localSocket, !waitingForLocal, let socket = choice.socket, !FileManager.default.fileExists(atPath: socket) {
            throw NotesError(
                .serviceUnavailable,
                """
                No notesd to talk to: you have not logged in to a server, and no notesd listens on this machine (\(socket)). \
                Log in to your team's server with `notes login https://notes.example.com:8420` (or the sign-in link your admin sent), \
                or start notesd here (`systemctl --user enable --now notesd`, or `notesd &`).
                """)
        }
        return NotesClient(endpoint: choice.endpoint, token: choice.token, caFile: choice.caFile)
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
