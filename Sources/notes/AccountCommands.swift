import ArgumentParser
import Foundation
import NotesClient
import NotesModel

struct Whoami: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami",
        abstract: "Print the account this client acts as, and the server and profile it uses.",
        discussion: "Example:\n  notes whoami\n  notes whoami --profile work --json")

    @OptionGroup var options: ClientOptions

    struct Report: Encodable {
        var name: String
        var email: String?
        var isAdmin: Bool
        var isDisabled: Bool
        var createdAt: Date
        /// notesd's URL, or its socket.
        var server: String
        var profile: String?
        /// Where the choice of server came from (options, environment, profile, local socket).
        var via: String
    }

    func run() async throws {
        try await runReporting {
            let choice = try options.choice()
            let account = try await options.client().whoami()
            let report = Report(
                name: account.name, email: account.email, isAdmin: account.isAdmin, isDisabled: account.isDisabled, createdAt: account.createdAt,
                server: choice.server ?? choice.socket ?? "", profile: choice.profile, via: choice.source.rawValue)
            try options.emit(report) { account.name + (account.isAdmin ? " (admin)" : "") + "\n" + Self.whereLine(choice) }
        }
    }

    /// "on https://… (profile team)": which server answered, and why that one.
    static func whereLine(_ choice: ConnectionChoice) -> String {
        switch choice.source {
        case .localSocket: return "on the local notesd (\(choice.socket ?? ""))"
        case .profile: return "on \(choice.server ?? "") (profile \(choice.profile ?? ""))"
        case .options, .environment:
            let given = choice.source == .options ? "given by option" : "from the environment"
            return "on \(choice.server ?? choice.socket ?? "") (\(given)" + (choice.profile.map { ", token of profile \($0)" } ?? "") + ")"
        }
    }
}

struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account",
        abstract: "Create, list, disable and enable accounts, and issue tokens (admin only).",
        discussion: """
            Examples:
              notes account create bob --email bob@example.com --link
              notes account link bob          # a sign-in link for bob's new laptop
              notes account list
              notes account token bob --expires-in 86400
              notes account disable bob
            """,
        subcommands: [Create.self, List.self, Disable.self, Enable.self, Delete.self, Token.self, Link.self, Links.self, RevokeLink.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List every account on this notesd.",
            discussion: "Example:\n  notes account list --json")

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let accounts = try await options.client().accounts()
                try options.emit(accounts) {
                    accounts.map { account in
                        var flags: [String] = []
                        if account.isAdmin { flags.append("admin") }
                        if account.isDisabled { flags.append("disabled") }
                        return [account.name, account.email ?? "-", flags.joined(separator: ",")].filter { !$0.isEmpty }.joined(separator: "\t")
                    }.joined(separator: "\n")
                }
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable",
            abstract: "Refuse an account on every request (its tokens, the socket, its open event streams) until it is enabled; its notes and shares stay.",
            discussion: "Example:\n  notes account disable bob")

        @Argument(help: "Account name.")
        var name: String

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let account = try await options.client().setAccount(name, disabled: true)
                try options.emit(account) { "\(account.name) is disabled; `notes account enable \(account.name)` lets it in again." }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete an account for good: its zones with every note and version, its tokens; its shares stop and it leaves others'.",
            discussion: """
                Notes the account wrote in others' zones stay, with its name as their author. \
                There is no undo: disable the account instead to keep its notes (notes account disable NAME). \
                Without --yes nothing is deleted.

                Example:
                  notes account delete bob --yes
                """)

        @Argument(help: "Account name.")
        var name: String

        @Flag(help: "Delete without asking again.")
        var yes = false

        @OptionGroup var options: ClientOptions

        func validate() throws {
            guard yes else {
                throw ValidationError(
                    """
                    Deleting \(name) deletes its zones with every note and version in them, and its tokens; \
                    its shares stop (their participants lose them) and it leaves the shares of others. \
                    Notes it wrote in others' zones keep \(name) as their author. There is no undo \
                    (`notes account disable \(name)` keeps everything). Run again with --yes to delete it.
                    """)
            }
        }

        func run() async throws {
            try await runReporting {
                let deleted = try await options.client().deleteAccount(name)
                try options.emit(deleted) {
                    "\(deleted.name) is deleted: \(deleted.zones) zones with \(deleted.records) notes and folders, "
                        + "\(deleted.sharesStopped) of its shares stopped, \(deleted.sharesLeft) shares of others left."
                }
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enable",
            abstract: "Let a disabled account in again, with the tokens it had.",
            discussion: "Example:\n  notes account enable bob")

        @Argument(help: "Account name.")
        var name: String

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let account = try await options.client().setAccount(name, disabled: false)
                try options.emit(account) { "\(account.name) is enabled." }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create an account and print a sign-in link for it (--link) or its first token.",
            discussion: """
                With --link, send the link to its person: `notes login LINK` on their machine \
                makes their token there, and you never see it. The link works once.

                Examples:
                  notes account create bob --email bob@example.com --link
                  notes account create ci-bot     # prints a token, shown once
                """)

        @Argument(help: "Account name: letters, digits, '.', '_' and '-'.")
        var name: String

        @Option(help: "Email address; pending email invitations to it resolve to this account.")
        var email: String?

        @Flag(help: "Print a one-time sign-in link instead of a token.")
        var link = false

        @Option(parsing: .unconditional, help: "How long the link works: 30m, 12h, 7d (default 24h, at most 30d).")
        var expires: String?

        @OptionGroup var options: ClientOptions

        func validate() throws {
            if expires != nil && !link { throw ValidationError("--expires is for the sign-in link: add --link.") }
        }

        func run() async throws {
            try await runReporting {
                if link {
                    let made = try await options.client().createAccountWithLink(name: name, email: email, expiresIn: try expires.map(parseDuration))
                    try options.emit(made) { "Created account \(made.account).\n" + Link.text(made) }
                } else {
                    let issued = try await options.client().createAccount(name: name, email: email)
                    try options.emit(issued) { "Created account \(issued.name).\nToken (shown once): \(issued.token)" }
                }
            }
        }
    }

    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "link",
            abstract: "Make a one-time sign-in link for an account (a new laptop, a lost token).",
            discussion: "Example:\n  notes account link bob\n  notes account link bob --expires 2h")

        @Argument(help: "Account name.")
        var name: String

        @Option(parsing: .unconditional, help: "How long the link works: 30m, 12h, 7d (default 24h, at most 30d).")
        var expires: String?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let made = try await options.client().makeSignInLink(for: name, expiresIn: try expires.map(parseDuration))
                try options.emit(made) { Self.text(made) }
            }
        }

        static func text(_ made: API.SignInLinkIssued) -> String {
            """
            Sign-in link for \(made.account) (works once, until \(ISO8601.string(from: made.expiresAt))):
            \(made.link)
            Send it to \(made.account); on their machine: notes login '\(made.link)'
            """
        }
    }

    struct Links: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "links",
            abstract: "List an account's sign-in links that wait to be used.",
            discussion: "Example:\n  notes account links bob")

        @Argument(help: "Account name.")
        var name: String

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let links = try await options.client().signInLinks(of: name)
                try options.emit(links) {
                    links.isEmpty
                        ? "No sign-in links of \(name) wait to be used."
                        : links.map {
                            "\($0.id)\tmade \(ISO8601.string(from: $0.createdAt))\(($0.createdBy.map { " by \($0)" }) ?? "")\texpires \(ISO8601.string(from: $0.expiresAt))"
                        }
                        .joined(separator: "\n")
                }
            }
        }
    }

    struct RevokeLink: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-link",
            abstract: "Revoke a sign-in link before it is used.",
            discussion: "Example:\n  notes account revoke-link 3f9c0a1b2c3d4e5f")

        @Argument(help: "The link's id (`notes account links NAME`), or the whole link.")
        var id: String

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let revoked = try await options.client().revokeSignInLink(id: SignInCode(parsing: id)?.id ?? id)
                try options.emit(revoked) { "Revoked the sign-in link \(revoked.id) of \(revoked.account)." }
            }
        }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
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

/// `notes token`: one's own tokens (an admin may name another account's).
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Create, list and revoke your bearer tokens.",
        discussion: """
            Examples:
              notes token create --label "laptop mount" --expires 90d
              notes token list
              notes token revoke ntk_3fQ…
              notes token list --account bob     # the admin
            """,
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Make a new token for your account and print it (shown once).",
            discussion: "Example:\n  notes token create --label \"CI\" --expires 30d")

        @Option(help: "What the token is for, shown by `notes token list`.")
        var label: String?

        @Option(parsing: .unconditional, help: "It stops working after this long: 30m, 12h, 7d, 2w (default: never; a token made with an expiring token expires by then too).")
        var expires: String?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let lifetime = try expires.map(parseDuration)
                if lifetime == 0 { throw NotesError(.invalidArguments, "--expires 0 would make a token that never works; leave it out for one that does not expire.") }
                let issued = try await options.client().createToken(expiresIn: lifetime, label: label)
                try options.emit(issued) { issued.token }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List your tokens (id, label, when issued, when they expire).",
            discussion: "Example:\n  notes token list --json")

        @Option(help: "Another account's tokens (the admin only).")
        var account: String?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let tokens = try await options.client().tokens(of: account)
                try options.emit(tokens) {
                    tokens.isEmpty
                        ? "No tokens."
                        : tokens.map { token in
                            let expiry = token.expiresAt.map { "expires \(ISO8601.string(from: $0))" } ?? "never expires"
                            return "\(token.id)\t\(token.label ?? "-")\tissued \(ISO8601.string(from: token.createdAt))\t\(expiry)"
                        }.joined(separator: "\n")
                }
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke a token at once: every request with it is refused, and the event streams it opened end.",
            discussion: "Example:\n  notes token revoke ntk_3fQ…")

        @Argument(help: "The token's id (`notes token list`), or the whole token.")
        var id: String

        /// The id of `ntk_<id>_<secret>` (a whole token pasted), else `text` as it is.
        static func tokenID(_ text: String) -> String {
            let parts = text.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
            return parts.count >= 2 && parts[0] == "ntk" ? String(parts[1]) : text
        }

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await runReporting {
                let revoked = try await options.client().revokeToken(id: Self.tokenID(id))
                try options.emit(revoked) { "Revoked \(revoked.id) of \(revoked.account)." }
            }
        }
    }
}
