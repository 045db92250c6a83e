#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesModel
import NotesMerge

/// `notes share PATH`: share a note, a folder (its hierarchy) or a zone (a top-level
/// folder of private/), invite people, or set the public link.
struct ShareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Share a note, folder or zone; invite accounts; set or revoke the public link.",
        discussion: """
            PATH is in your mount. A top-level folder of private/ is shared whole (zone-wide); \
            sharing again adds people or changes their permission.

            Examples:
              notes share ~/Notes/private/Work/plan.md --with bob carol@example.com --read-write
              notes share ~/Notes/private/Work --with bob
              notes share ~/Notes/private/Work/plan.md --public --read-only
              notes share ~/Notes/private/Work/plan.md --rotate-url
            """)

    @Argument(help: "The note or folder, as a path in the mount.")
    var path: String

    @Option(name: .customLong("with"), parsing: .upToNextOption, help: "Account names or email addresses to invite.")
    var with: [String] = []

    @Flag(help: "Invitees (or the public) may only read (the default).")
    var readOnly = false

    @Flag(help: "Invitees (or the public) may also edit and add notes.")
    var readWrite = false

    @Flag(name: .customLong("public"), help: "Anyone with the URL may read (or, with --read-write, edit).")
    var makePublic = false

    @Flag(name: .customLong("private"), help: "Turn the public link off: those who joined through it lose access at once; invited people keep theirs.")
    var makePrivate = false

    @Flag(help: "Revoke the current URL and print a new one.")
    var rotateURL = false

    // (Unconditional: "-1d" is then this option's value, refused with a reason, not an
    // unknown option.)
    @Option(
        parsing: .unconditional,
        help: "The public link lets nobody new in after this long: 30m, 12h, 7d, 2w (0 removes the limit). Those who joined through it before keep their access; --private ends it."
    )
    var expires: String?

    @Flag(
        help:
            "Protect the public link with a password, read from the terminal or standard input (an empty one removes it). It applies to people joining from now on; --private ends the access of those who joined before."
    )
    var password = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        if readOnly && readWrite { throw ValidationError("Give --read-only or --read-write, not both.") }
        if makePublic && makePrivate { throw ValidationError("Give --public or --private, not both.") }
    }

    func run() async throws {
        try await runReporting {
            let expiry = try expires.map(parseDuration)
            let secret = password ? readPassword("Password for the public link: ") : nil
            let target = try MountedPath(path)
            guard target.isOwner else {
                throw NotesError(.permissionFailure, "\(target.path) belongs to \(target.zone.owner); only the owner can share it. Ask \(target.zone.owner) to invite more people.")
            }
            let permission: ParticipantPermission = readWrite ? .readWrite : .readOnly
            let invitees = with.map { $0.contains("@") ? Invitee(email: $0, permission: permission) : Invitee(name: $0, permission: permission) }
            let client = try options.client()
            var share: Share
            if let shareID = target.shareID {
                share = try await client.share(id: shareID)
                guard share.rootRecordName == target.recordName else {
                    throw NotesError(
                        .alreadyShared, "\(target.path) is already part of the share “\(share.title)” (\(share.id)); change that share instead, from the path it was made on.")
                }
                if !invitees.isEmpty { share = try await client.addParticipants(shareID: share.id, invitees) }
            } else {
                share = try await client.createShare(
                    NewShare(
                        zone: target.zone, rootRecordName: target.recordName, title: target.name,
                        publicPermission: makePublic ? (readWrite ? .readWrite : .readOnly) : nil, participants: invitees))
            }
            var update = ShareUpdate()
            if makePublic { update.publicPermission = readWrite ? .readWrite : .readOnly }
            if makePrivate { update.publicPermission = PublicPermission.none }
            if rotateURL { update.rotateURL = true }
            update.publicExpiresIn = expiry
            update.publicPassword = secret
            if update != ShareUpdate() && (target.shareID != nil || rotateURL || makePrivate || expiry != nil || secret != nil) {
                share = try await client.updateShare(id: share.id, update)
            }
            try options.emit(share) { describe(share) }
            if share.publicPermission != .none, let url = share.url, let warning = unservedLinkWarning(url) {
                FileHandle.standardError.write(Data("notes: \(warning)\n".utf8))
            }
        }
    }
}

/// A warning for a public link that nothing serves: notesd started without `--listen`
/// or `--public-url` names its pages `http://localhost/s/…`, a port nobody listens on.
func unservedLinkWarning(_ url: String) -> String? {
    guard let components = URLComponents(string: url), components.host == "localhost", components.port == nil else { return nil }
    return """
        this link (\(url)) reaches no one yet: notesd serves no public pages without --listen. \
        Start it with --listen HOST:PORT, and --public-url with the address people use (https://notes.example.com), \
        then `notes share PATH --public` again prints the link to send; its token stays the same.
        """
}

/// The share URL and its people, for terminal output.
func describe(_ share: Share) -> String {
    var lines = ["“\(share.title)”  \(share.url ?? share.urlToken)"]
    if share.publicPermission != .none {
        var line = "public: anyone with the URL, \(share.publicPermission == .readWrite ? "read-write" : "read-only")"
        if share.passwordProtected == true { line += ", with a password" }
        if let expiry = share.publicExpiresAt { line += ", until \(ISO8601DateFormatter().string(from: expiry))" }
        if let views = share.publicViews { line += ", \(views == 1 ? "1 view" : "\(views) views")" }
        lines.append(line)
    }
    lines.append(
        table(
            [["NAME", "ROLE", "PERMISSION", "STATUS"]]
                + share.participants.map {
                    [$0.name ?? $0.email ?? "?", $0.role.rawValue, $0.permission.rawValue, $0.status.rawValue]
                }))
    return lines.joined(separator: "\n")
}

struct Invitations: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invitations",
        abstract: "List shares you are invited to and have not accepted yet.",
        discussion: "Example:\n  notes invitations\n  notes accept \"$(notes invitations --json | jq -r '.[0].url')\"")

    @OptionGroup var options: ClientOptions

    struct Invitation: Encodable {
        var url: String
        var owner: String
        var title: String
        var id: String
    }

    func run() async throws {
        try await runReporting {
            let invitations = try await options.client().invitations().map {
                Invitation(url: $0.url ?? $0.urlToken, owner: $0.owner, title: $0.title, id: $0.id)
            }
            try options.emit(invitations) {
                invitations.isEmpty
                    ? "No pending invitations."
                    : table([["OWNER", "TITLE", "URL"]] + invitations.map { [$0.owner, $0.title, $0.url] }) + "\n\nAccept one with `notes accept URL`."
            }
        }
    }
}

struct Accept: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept",
        abstract: "Accept a share by its URL; it appears under shared/<owner>/ in your mounts.",
        discussion: "Example:\n  notes accept http://notes.example.com/s/Xy3…#plan.md")

    @Argument(help: "The share URL (or its token).")
    var url: String

    @Flag(help: "The link has a password: read it from the terminal or standard input.")
    var password = false

    @OptionGroup var options: ClientOptions

    struct Accepted: Encodable {
        var owner: String
        var path: String
        var share: String
    }

    func validate() throws {
        if url.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("Give the share URL you were sent, e.g. notes accept https://notes.example.com/s/Xy3…")
        }
    }

    func run() async throws {
        try await runReporting {
            let secret = password ? readPassword("Password: ") : nil
            let share = try await options.client().accept(url: url, password: secret)
            let accepted = Accepted(owner: share.owner, path: "shared/\(share.owner)/\(share.isZoneWide ? share.zone.name : share.title)", share: share.id)
            try options.emit(accepted) { "Accepted “\(share.title)” from \(share.owner): it is at \(accepted.path) in your mounts." }
        }
    }
}

struct Participants: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "participants",
        abstract: "Who takes part in the share of a note or folder, and with what permission.",
        discussion: "Example:\n  notes participants ~/Notes/private/Work/plan.md --json")

    @Argument(help: "A shared note or folder, as a path in the mount.")
    var path: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let target = try MountedPath(path)
            let share = try await options.client().share(id: try target.requireShare())
            try options.emit(share.participants) { describe(share) }
        }
    }
}

struct Unshare: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unshare",
        abstract: "Owner: remove people from a share, or stop sharing altogether.",
        discussion: "Examples:\n  notes unshare ~/Notes/private/Work/plan.md --with bob\n  notes unshare ~/Notes/private/Work/plan.md")

    @Argument(help: "The shared note or folder, as a path in the mount.")
    var path: String

    @Option(name: .customLong("with"), parsing: .upToNextOption, help: "Participants to remove; without it the share stops.")
    var with: [String] = []

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let target = try MountedPath(path)
            let shareID = try target.requireShare()
            guard target.isOwner else {
                throw NotesError(.permissionFailure, "Only \(target.zone.owner) can change who takes part; to stop seeing it yourself, run `notes leave \(target.path)`.")
            }
            let client = try options.client()
            let share = try await client.share(id: shareID)
            guard share.rootRecordName == target.recordName else {
                throw NotesError(.invalidArguments, "\(target.path) is part of the share “\(share.title)”; unshare it from the path it was shared on.")
            }
            if with.isEmpty {
                try await client.stopShare(id: shareID)
                try options.emit(API.Done()) { "Stopped sharing “\(share.title)”; participants no longer see it." }
            } else {
                var latest = share
                for name in with { latest = try await client.removeParticipant(shareID: shareID, name: name) }
                try options.emit(latest) { "Removed \(with.joined(separator: ", ")).\n" + describe(latest) }
            }
        }
    }
}

struct Leave: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "leave",
        abstract: "Participant: leave a share; it goes from your mounts, the others keep it.",
        discussion: "Example:\n  notes leave ~/Notes/shared/alice/plan.md")

    @Argument(help: "A note or folder of the share, as a path in your mount.")
    var path: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let target = try MountedPath(path)
            let shareID = try target.requireShare()
            guard !target.isOwner else {
                throw NotesError(.permissionFailure, "You own \(target.path); to stop sharing it run `notes unshare \(target.path)`.")
            }
            try await options.client().leaveShare(id: shareID)
            try options.emit(API.Done()) { "Left the share; it leaves your mounts at once." }
        }
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "The versions of a note, newest first: when, by whom, its size, what changed, and its change tag.",
        discussion: "Example:\n  notes history ~/Notes/private/Work/plan.md")

    @Argument(help: "A note, as a path in the mount.")
    var path: String

    @OptionGroup var options: ClientOptions

    struct Entry: Encodable {
        var changeTag: String
        var modifiedBy: String
        var modifiedAt: Date
        var size: Int
        var name: String
        /// What changed from the version before: "+3 -1 lines", "renamed from a.md", "created".
        var summary: String = ""
    }

    /// One line on what changed from `older` to `newer`.
    static func summary(from older: (name: String, body: String?)?, to newer: (name: String, body: String?)) -> String {
        guard let older else { return "created" }
        var parts: [String] = []
        if older.name != newer.name { parts.append("renamed from \(older.name)") }
        if older.body != newer.body {
            let diff = TextDiff.unified(Array((older.body ?? "").utf8), Array((newer.body ?? "").utf8), oldLabel: "a", newLabel: "b", context: 0)
            let lines = diff.split(separator: "\n", omittingEmptySubsequences: false)
            let added = lines.filter { $0.hasPrefix("+") && !$0.hasPrefix("+++") }.count
            let removed = lines.filter { $0.hasPrefix("-") && !$0.hasPrefix("---") }.count
            parts.append("+\(added) -\(removed) lines")
        }
        return parts.isEmpty ? "no change to the text" : parts.joined(separator: ", ")
    }

    func run() async throws {
        try await runReporting {
            let target = try MountedPath(path)
            guard let recordName = target.recordName else {
                throw NotesError(.invalidArguments, "\(target.path) is a zone; give a note or folder inside it.")
            }
            let client = try options.client()
            var entries: [Entry] = []
            var texts: [(name: String, body: String?)] = []
            if let current = try await client.records([recordName], in: target.zone).first {
                entries.append(Entry(changeTag: current.changeTag, modifiedBy: current.modifiedBy, modifiedAt: current.modifiedAt, size: current.contentSize, name: current.name))
                texts.append((current.name, current.body))
            }
            // The history may hold the current state too: each version is listed once.
            let listed = Set(entries.map(\.changeTag))
            for version in try await client.versions(of: recordName, in: target.zone) where !listed.contains(version.changeTag) {
                entries.append(Entry(changeTag: version.changeTag, modifiedBy: version.modifiedBy, modifiedAt: version.modifiedAt, size: version.size, name: version.name))
                texts.append((version.name, version.body))
            }
            for index in entries.indices {
                entries[index].summary = Self.summary(from: index + 1 < texts.count ? texts[index + 1] : nil, to: texts[index])
            }
            try options.emit(entries) {
                table(
                    [["WHEN", "BY", "SIZE", "CHANGE", "CHANGE TAG", "NAME"]]
                        + entries.map {
                            [relativeTime($0.modifiedAt), $0.modifiedBy, "\($0.size)", $0.summary, $0.changeTag, $0.name]
                        })
            }
        }
    }
}

/// "30m", "12h", "7d", "2w" (or plain seconds) as seconds.
func parseDuration(_ text: String) throws(NotesError) -> Double {
    let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
    let trimmed = text.trimmingCharacters(in: .whitespaces)
    if trimmed.hasPrefix("-") {
        throw NotesError(.invalidArguments, "--expires \(text) is in the past: give how long from now, like 30m, 12h, 7d or 2w.")
    }
    if let unit = trimmed.last, let scale = units[unit], let value = Double(trimmed.dropLast()), value >= 0 { return value * scale }
    if let value = Double(trimmed), value >= 0 { return value }
    throw NotesError(.invalidArguments, "\"\(text)\" is not a duration; write it like 30m, 12h, 7d or 2w.")
}

/// A password from the terminal without echo, or the first line of standard input.
func readPassword(_ prompt: String) -> String {
    if isatty(0) != 0, let typed = getpass(prompt) { return String(cString: typed) }
    return readLine(strippingNewline: true) ?? ""
}
