#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesFS
import NotesModel
import NotesReplica

/// `notes status`: is the daemon there, which mounts run, what waits for upload.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether notesd is reachable, the mounts, and the changes waiting for upload.",
        discussion:
            "Example:\n  notes status\n  notes status --json | jq .queued\n\nConflict copies are listed by their place in the mount (private/plan (conflict, bob, 2026-11-22 14.05).md)\nuntil you delete them."
    )

    @Option(help: "Also read the replicas in this folder (every running mount of yours is found without it).")
    var cacheDir: String?

    @OptionGroup var options: ClientOptions

    struct Report: Encodable {
        var daemon: String
        /// notesd's URL or socket, and the saved profile that named it.
        var server: String?
        var profile: String?
        var account: String?
        var mounts: [String]
        var queued: Int
        /// Each queued change, with notesd's reason when it refused it.
        var waiting: [Replica.Waiting]
        var conflicts: [String]
    }

    func run() async throws {
        try await runReporting {
            // This user's mounts, wherever each keeps its replica (they register in the
            // user's own cache folder), and the replicas of the default or given folder.
            let mounted = Set(notesMounts())
            let registrations = ReplicaLocation.registrations().filter { mounted.contains($0.mountpoint) }
            let choice = try? options.choice()
            var report = Report(
                daemon: "offline", server: choice.map { $0.server ?? $0.socket ?? "" }, profile: choice?.profile, account: nil,
                mounts: registrations.map(\.mountpoint), queued: 0, waiting: [], conflicts: [])
            if let account = try? await options.client().whoami() {
                report.daemon = "online"
                report.account = account.name
            }
            var replicas = registrations.map(\.replica)
            let folders = Set([ReplicaLocation.defaultDirectory()] + (choice.map { [defaultCacheDirectory(for: $0)] } ?? []) + (cacheDir.map { [$0] } ?? []))
            for folder in folders.sorted() {
                replicas += ReplicaLocation.accounts(in: folder).map { ReplicaLocation.path(in: folder, account: $0) }
            }
            var seen = Set<String>()
            for path in replicas where seen.insert(URL(fileURLWithPath: path).standardizedFileURL.path).inserted {
                guard let replica = try? Replica(path: path) else { continue }
                report.queued += (try? replica.pendingCount()) ?? 0
                report.waiting += (try? replica.waiting()) ?? []
                report.conflicts += ((try? replica.conflicts()) ?? []).map(\.path)
            }
            try options.emit(report) {
                let server = (report.server.map { " at \($0)" } ?? "") + (report.profile.map { " (profile \($0))" } ?? "")
                var lines = [
                    report.daemon == "online"
                        ? "notesd: online\(server), signed in as \(report.account ?? "?")" : "notesd: offline\(server) (mounts keep working from their replicas)"
                ]
                lines.append(report.mounts.isEmpty ? "mounts: none (`notes mount ~/Notes` starts one)" : "mounts: " + report.mounts.joined(separator: ", "))
                lines.append("queued: \(report.queued) change\(report.queued == 1 ? "" : "s") waiting for upload")
                lines += report.waiting.prefix(50).map { item in
                    "  \(item.change) \(item.zone)/\(item.name)" + (item.refusal.map { ": refused: \($0)" } ?? "")
                }
                if report.waiting.count > 50 { lines.append("  … and \(report.waiting.count - 50) more (`notes status --json` lists all)") }
                if report.conflicts.isEmpty {
                    lines.append("conflicts: none")
                } else {
                    lines.append(
                        "conflicts: \(report.conflicts.count) (edits made here and elsewhere in the same lines; compare each copy with its note, keep what you want, delete the copy)"
                    )
                    lines += report.conflicts.map { "  \($0)" }
                }
                return lines.joined(separator: "\n")
            }
        }
    }
}

/// Mount points of this user's notes file systems, from the kernel's mount table (a
/// FUSE mount names its owner as `user_id=` in its options).
func notesMounts() -> [String] {
    MountTable.current()?.notesMounts(ownedBy: getuid()) ?? []
}
