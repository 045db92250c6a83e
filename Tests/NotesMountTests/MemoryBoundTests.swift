import Foundation
import NotesTestSupport
import Testing

/// The mount's memory holds its bound whatever runs in it: closed files' content kept in
/// memory is counted and capped (32 MiB), whether it came from writes, appends, renames
/// over other files or truncates. (fsstress left the mount at 513 MB resident with its
/// files still there: appends doubled buffers the count did not see, and content loaded
/// by a rename or truncate of a closed file was never counted at all.)
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct MemoryBoundTests {
    static func resident(_ pid: Int32) -> (rss: Int, peak: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "0").map { $0 / 1024 } ?? 0
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    @Test func closedFilesContentStaysWithinItsBound() async throws {
        let people = try await TwoMounts()
        let folder = people.aliceMount.path("private")
        let pid = people.aliceMount.process.processIdentifier
        let before = Self.resident(pid)
        // 48 files of 2 MiB, each appended to after (its buffer grows past its bytes), a
        // third renamed over another, a third truncated by path: 96 MiB of files.
        let script = """
            set -e
            for i in $(seq 1 48); do head -c 2097152 /dev/urandom > f$i.bin; head -c 65536 /dev/urandom >> f$i.bin; done
            for i in $(seq 1 3 46); do mv f$i.bin f$((i+1)).bin; done
            for i in $(seq 3 3 48); do truncate -s 1000000 f$i.bin; done
            cat f*.bin > /dev/null
            """
        let run = Shell.run(script, in: folder)
        #expect(run.status == 0, "\(run)")
        #expect(await queueDrained(people.aliceMount, 120))
        // The bound: 32 MiB of content over what the mount held before, with room for
        // one file in flight and the allocator's slack. Content kept while its save was
        // still queued (a busy machine) leaves within a tick of the commit: the mount
        // gets a few seconds to come back under it.
        var after = Self.resident(pid)
        _ = await eventually(15) {
            after = Self.resident(pid)
            return after.rss - before.rss < 32 + 48
        }
        print("mount memory: \(before.rss) MB resident before, \(after.rss) MB after (peak \(after.peak) MB) for 96 MiB of files")
        #expect(after.rss - before.rss < 32 + 48, "the mount grew from \(before.rss) to \(after.rss) MB resident")
    }
}
