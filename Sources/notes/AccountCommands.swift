import ArgumentParser
import NotesClient
import NotesModel

struct Whoami: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the account this client acts as.",
        discussion: "Example:\n  notes whoami\n  NOTES_TOKEN=ntk_… notes whoami --json")

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let account = try await options.client().whoami()
            try options.emit(account) { account.name + (account.isAdmin ? " (admin)" : "") }
        }
    }
}

struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account",
        abstract: "Create accounts and issue tokens (admin only).",
        subcommands: [Create.self, Token.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account and print its first token.",
            discussion: "Example:\n  notes account create bob --email bob@example.com")

        @Argument(help: "Account name: letters, digits, '.', '_' and '-'.")
        var name: String

        @Option(help: "Email address; pending email invitations to it resolve to this account.")
        var email: String?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let issued = try await options.client().createAccount(name: name, email: email)
                try options.emit(issued) { "Created account \(issued.name).\nToken (shown once): \(issued.token)" }
            }
        }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a new bearer token for an account.",
            discussion: "Example:\n  notes account token bob --expires-in 86400")

        @Argument(help: "Account name.")
        var name: String

        @Option(help: "Seconds until the token expires (default: never).")
        var expiresIn: Double?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let issued = try await options.client().issueToken(for: name, expiresIn: expiresIn)
                try options.emit(issued) { issued.token }
            }
        }
    }
}
