import ArgumentParser
import Foundation
import NotesClient
import NotesModel
import NotesReplica

/// `notes status`: is the daemon there, which mounts run, what waits for upload.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether notesd is reachable, the mounts, and the changes waiting for upload.",
        discussion: "Example:\n  notes status\n  notes status --json | jq .queued\n\nConflict copies are listed by their place in the mount (private/plan (conflict, bob, 2026-11-22 14.05).md)\nuntil you delete them.")

    @Option(help: "Folder of the mounts' replicas (default: $XDG_CACHE_HOME/notes or ~/.cache/notes).")
    var cacheDir: String?

    @OptionGroup var options: ClientOptions

    struct Report: Encodable {
        var daemon: String
        var account: String?
        var mounts: [String]
        var queued: Int
        var conflicts: [String]
    }

    func run() async throws {
        try await runReporting {
            var report = Report(daemon: "offline", account: nil, mounts: notesMounts(), queued: 0, conflicts: [])
            if let account = try? await options.client().whoami() {
                report.daemon = "online"
                report.account = account.name
            }
            let cache = cacheDir ?? ReplicaLocation.defaultDirectory()
            for account in ReplicaLocation.accounts(in: cache) {
                guard let replica = try? Replica(path: ReplicaLocation.path(in: cache, account: account)) else { continue }
                report.queued += (try? replica.pendingCount()) ?? 0
                report.conflicts += ((try? replica.conflicts()) ?? []).map(\.path)
            }
            try options.emit(report) {
                var lines = [report.daemon == "online" ? "notesd: online, signed in as \(report.account ?? "?")" : "notesd: offline (mounts keep working from their replicas)"]
                lines.append(report.mounts.isEmpty ? "mounts: none (`notes mount ~/Notes` starts one)" : "mounts: " + report.mounts.joined(separator: ", "))
                lines.append("queued: \(report.queued) change\(report.queued == 1 ? "" : "s") waiting for upload")
                if report.conflicts.isEmpty {
                    lines.append("conflicts: none")
                } else {
                    lines.append("conflicts: \(report.conflicts.count) (edits made here and elsewhere in the same lines; compare each copy with its note, keep what you want, delete the copy)")
                    lines += report.conflicts.map { "  \($0)" }
                }
                return lines.joined(separator: "\n")
            }
        }
    }
}

/// Mount points of notes file systems, from the kernel's mount table.
func notesMounts() -> [String] {
    guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return [] }
    return table.split(separator: "\n").compactMap { line in
        let fields = line.split(separator: " ")
        guard fields.count > 4, line.contains(" - fuse.notes ") else { return nil }
        return String(fields[4])
    }
}
