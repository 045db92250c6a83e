#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesMerge
import NotesModel

/// A note's versions as the CLI needs them: the current state first, then the kept ones,
/// newest first, each once.
struct NoteVersions {
    let target: MountedPath
    let recordName: String
    let current: Record
    let all: [RecordVersion]

    static func load(_ path: String, client: NotesClient) async throws -> NoteVersions {
        let target = try MountedPath(path)
        guard let recordName = target.recordName else {
            throw NotesError(.invalidArguments, "\(target.path) is a zone; give a note inside it.")
        }
        guard let current = try await client.records([recordName], in: target.zone).first else {
            throw NotesError(.unknownItem, "\(target.path) is not on notesd (deleted elsewhere, or not uploaded yet).")
        }
        guard current.recordType == .note else {
            throw NotesError(.invalidArguments, "\(target.path) is a \(current.recordType.rawValue); versions can be shown, compared and restored for notes.")
        }
        let now = RecordVersion(
            changeTag: current.changeTag, name: current.name, parent: current.parent, body: current.body, size: current.contentSize,
            modifiedBy: current.modifiedBy, modifiedAt: current.modifiedAt)
        let older = try await client.versions(of: recordName, in: target.zone).filter { $0.changeTag != current.changeTag }
        return NoteVersions(target: target, recordName: recordName, current: current, all: [now] + older)
    }

    /// The version with change tag `tag` (the current one for nil).
    func version(_ tag: String?) throws(NotesError) -> RecordVersion {
        guard let tag else { return all[0] }
        guard let found = all.first(where: { $0.changeTag == tag }) else {
            throw NotesError(.unknownItem, "\(target.name) has no version \(tag); `notes history \(target.path)` lists them.")
        }
        return found
    }

    func label(_ version: RecordVersion) -> String {
        "\(version.name)@\(version.changeTag) (\(version.modifiedBy), \(ISO8601.string(from: version.modifiedAt)))"
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a note as it is on notesd, or one of its earlier versions.",
        discussion: """
            Examples:
              notes show ~/Notes/private/plan.md --version 3f
              notes history ~/Notes/private/plan.md     # lists the change tags
            """)

    @Argument(help: "A note, as a path in the mount.")
    var path: String

    @Option(help: "The version's change tag (`notes history`); the current one if left out.")
    var version: String?

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let versions = try await NoteVersions.load(path, client: try options.client())
            let chosen = try versions.version(version)
            if options.json {
                try options.emit(chosen) { "" }
            } else {
                // The text as it is, byte for byte (`> file` gives the note back).
                FileHandle.standardOutput.write(Data((chosen.body ?? "").utf8))
            }
        }
    }
}

struct Diff: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two versions of a note as a unified diff (by default: the one before the current, and the current).",
        discussion: """
            Examples:
              notes diff ~/Notes/private/plan.md
              notes diff ~/Notes/private/plan.md --from 3f --to 5a
            """)

    @Argument(help: "A note, as a path in the mount.")
    var path: String

    @Option(help: "The older version's change tag (default: the version before --to).")
    var from: String?

    @Option(help: "The newer version's change tag (default: the current one).")
    var to: String?

    @Flag(help: "Colour even when not printing to a terminal.")
    var color = false

    @OptionGroup var options: ClientOptions

    struct Compared: Encodable {
        var from: String
        var to: String
        var diff: String
    }

    func run() async throws {
        try await runReporting {
            let versions = try await NoteVersions.load(path, client: try options.client())
            let newer = try versions.version(to)
            let older: RecordVersion
            if let from {
                older = try versions.version(from)
            } else {
                guard let index = versions.all.firstIndex(where: { $0.changeTag == newer.changeTag }), index + 1 < versions.all.count else {
                    throw NotesError(.unknownItem, "\(versions.target.name) has no version before \(newer.changeTag) to compare with.")
                }
                older = versions.all[index + 1]
            }
            let diff = TextDiff.unified(
                Array((older.body ?? "").utf8), Array((newer.body ?? "").utf8), oldLabel: versions.label(older), newLabel: versions.label(newer))
            try options.emit(Compared(from: older.changeTag, to: newer.changeTag, diff: diff)) {
                diff.isEmpty ? "The two versions hold the same text." : Self.coloured(diff, when: color || isatty(1) != 0)
            }
        }
    }

    /// Removed lines red, added green, hunk heads cyan (as git prints them).
    static func coloured(_ diff: String, when: Bool) -> String {
        guard when else { return diff.hasSuffix("\n") ? String(diff.dropLast()) : diff }
        return diff.split(separator: "\n", omittingEmptySubsequences: false).dropLast(diff.hasSuffix("\n") ? 1 : 0).map { line in
            if line.hasPrefix("+++") || line.hasPrefix("---") { return "\u{1B}[1m\(line)\u{1B}[0m" }
            if line.hasPrefix("+") { return "\u{1B}[32m\(line)\u{1B}[0m" }
            if line.hasPrefix("-") { return "\u{1B}[31m\(line)\u{1B}[0m" }
            if line.hasPrefix("@@") { return "\u{1B}[36m\(line)\u{1B}[0m" }
            return String(line)
        }.joined(separator: "\n")
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make an earlier version's text the note's newest version (the history keeps every version, the current one included).",
        discussion: """
            Example:
              notes restore ~/Notes/private/plan.md --version 3f
            """)

    @Argument(help: "A note, as a path in the mount.")
    var path: String

    @Option(help: "The change tag of the version to bring back (`notes history`).")
    var version: String

    @OptionGroup var options: ClientOptions

    struct Restored: Encodable {
        var restored: String
        var changeTag: String
    }

    func run() async throws {
        try await runReporting {
            let client = try options.client()
            let versions = try await NoteVersions.load(path, client: client)
            let chosen = try versions.version(version)
            let current = versions.current
            guard chosen.body != current.body else {
                try options.emit(Restored(restored: chosen.changeTag, changeTag: current.changeTag)) {
                    "\(versions.target.name) already holds the text of \(chosen.changeTag); nothing to restore."
                }
                return
            }
            // A save of the current record with the old text, against its current tag:
            // rights as for any save, and a change made meanwhile is refused, not lost.
            let saved = try await client.modify(
                ModifyRequest(
                    zone: current.zone,
                    saves: [
                        RecordSave(
                            recordName: current.recordName, recordType: .note, name: current.name, parent: current.parent,
                            body: chosen.body ?? "", changeTag: current.changeTag)
                    ])
            ).saved[0]
            try options.emit(Restored(restored: chosen.changeTag, changeTag: saved.changeTag)) {
                "Restored \(versions.target.name) to the text of \(chosen.changeTag) (\(ISO8601.string(from: chosen.modifiedAt))) as its newest version, \(saved.changeTag)."
            }
        }
    }
}
