#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesModel

/// `notes-fsbench`: the same small-file workload on a notes mount and on tmpfs in one
/// run, printed as slowdowns per phase, plus save-to-visible latency between two mounts.
@main
struct FSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notes-fsbench",
        abstract: "Measure the notes mount against tmpfs, phase by phase, and save-to-visible latency.",
        discussion: """
            Starts its own notesd and two mounts (two accounts sharing a folder) next to this \
            binary; needs root and /dev/fuse. Build in release mode first. Last, it stops notesd, \
            saves --catch-up notes, starts notesd again and times until the other mount shows them.

            Example:
              swift build -c release && .build/release/notes-fsbench --files 2000
              .build/release/notes-fsbench --scale 100000
              .build/release/notes-fsbench --scale 100000 --mounts-only
            """)

    @Option(help: "Notes in the workload's folder.")
    var files = 2_000

    @Option(help: "Bytes in each note.")
    var bytes = 2_048

    @Option(help: "Saves for the save-to-visible latency.")
    var saves = 200

    @Option(help: "Repetitions of the listing phases (they are fast).")
    var listings = 20

    @Option(help: "Saves queued while notesd is away, for the catch-up figure.")
    var catchUp = 1_000

    @Option(
        help: ArgumentHelp(
            "Instead of the phases: whole-tree reads over this many notes on tmpfs, bindfs and the mount (first mount, find, three warm grep -rl, remount), with the mount's memory.",
            valueName: "notes"))
    var scale: Int?

    @Flag(help: "With --scale: only the first mount and three remounts, no reads and no bindfs (quicker, for profiling a mount's start).")
    var mountsOnly = false

    func run() async throws {
        setvbuf(stdout, nil, _IOLBF, 0)  // progress shows as it comes, also into a file
        let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let work = "/var/tmp/notes-fsbench-\(UUID().uuidString.prefix(6))"
        let shm = "/dev/shm/notes-fsbench-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: shm, withIntermediateDirectories: true)
        // Runs last, once every mount below has stopped (a folder still mounted cannot go).
        defer {
            try? FileManager.default.removeItem(atPath: shm)
            try? FileManager.default.removeItem(atPath: work)
        }
        let daemon = try Daemon(binaries: binaries, folder: "/tmp/nfb-\(UUID().uuidString.prefix(6))")
        defer { daemon.stop() }
        let admin = daemon.client()
        let aliceToken = try await admin.createAccount(name: "alice").token
        let bobToken = try await admin.createAccount(name: "bob").token
        if let scale {
            try await ScaleBenchmark(notes: scale, binaries: binaries, daemon: daemon, token: aliceToken, work: work, shm: shm, mountsOnly: mountsOnly).run()
            return
        }
        print("notes-fsbench: \(files) notes of \(bytes) bytes; tmpfs at \(shm); \(ProcessInfo.processInfo.activeProcessorCount) cores")

        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: bytes)
        // The same workload through bindfs over tmpfs: what any pass-through FUSE file
        // system pays, in the same run.
        let bindfsBase = "\(shm)/bindfs-base"
        let bindfsMount = "\(work)/bindfs-small"
        try FileManager.default.createDirectory(atPath: bindfsBase, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: bindfsMount, withIntermediateDirectories: true)
        guard ScaleBenchmark.run(["bindfs", bindfsBase, bindfsMount]) == 0 else { throw ValidationError("bindfs failed: is it installed (apt-get install bindfs)?") }
        let bindfs: [String: Double]
        do {
            defer { _ = ScaleBenchmark.run(["fusermount3", "-u", bindfsMount]) }
            bindfs = try Workload(folder: bindfsMount, files: files, payload: payload, listings: listings, settle: {}).run()
        }
        for (label, cache) in [("replica cache on tmpfs", "\(shm)/cache-a"), ("replica cache on disk", "\(work)/cache-a")] {
            let mount = try Mount(binaries: binaries, daemon: daemon, token: aliceToken, mountpoint: "\(work)/\(label.hasSuffix("tmpfs") ? "a1" : "a2")", cache: cache)
            defer { mount.stop() }
            let baseline = "\(shm)/tmpfs-\(label.hasSuffix("tmpfs") ? 1 : 2)"
            try FileManager.default.createDirectory(atPath: baseline, withIntermediateDirectories: true)
            let onMount = "\(mount.mountpoint)/private/Bench\(label.hasSuffix("tmpfs") ? 1 : 2)"
            guard mkdir(onMount, 0o755) == 0 else { throw ValidationError("mkdir \(onMount): \(String(cString: strerror(errno)))") }
            let tmpfs = try Workload(folder: baseline, files: files, payload: payload, listings: listings, settle: {}).run()
            let processes = [mount.process.processIdentifier, daemon.process.processIdentifier]
            let notes = try Workload(folder: onMount, files: files, payload: payload, listings: listings, settle: { settle(processes) }).run()
            // With the replica on disk, also a plain folder on that disk: what the disk
            // itself costs (an fsync there is a real one, as in the replica).
            var plain: [String: Double]?
            if !label.hasSuffix("tmpfs") {
                let folder = "\(work)/plain-folder"
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                plain = try Workload(folder: folder, files: files, payload: payload, listings: listings, settle: {}).run()
            }
            print("\n\(label)")
            print(
                "phase".padding(toLength: 22, withPad: " ", startingAt: 0) + "tmpfs µs/op".leftPad(13) + "mount µs/op".leftPad(13) + "slowdown".leftPad(10)
                    + "bindfs µs/op".leftPad(14) + "÷ bindfs".leftPad(10) + "aim".leftPad(14)
                    + (plain == nil ? "" : "disk folder µs/op".leftPad(19) + "mount ÷ disk".leftPad(14)))
            for (phase, aim) in Workload.phases {
                let base = tmpfs[phase]!
                let measured = notes[phase]!
                let ratio = measured / base
                let disk = plain.map { String(format: "%.2f", $0[phase]! * 1e6).leftPad(19) + String(format: "%.2f×", measured / $0[phase]!).leftPad(14) } ?? ""
                let bindfsRatio = measured / bindfs[phase]!
                let passThrough = String(format: "%.2f", bindfs[phase]! * 1e6).leftPad(14) + String(format: "%.2f×", bindfsRatio).leftPad(10)
                let missed = aim.map { !$0.isMet(tmpfsRatio: ratio, bindfsRatio: bindfsRatio) } ?? false
                let name: String = phase.padding(toLength: 22, withPad: " ", startingAt: 0)
                let times: String = String(format: "%.2f", base * 1e6).leftPad(13) + String(format: "%.2f", measured * 1e6).leftPad(13)
                let aimText: String = (aim?.text ?? "–").leftPad(14)
                let note: String = missed ? "  (above aim)" : ""
                print(name + times + String(format: "%.2f×", ratio).leftPad(10) + passThrough + aimText + disk + note)
            }
        }

        // Save-to-visible: alice saves a shared note, bob's mount shows the new text.
        let alice = try Mount(binaries: binaries, daemon: daemon, token: aliceToken, mountpoint: "\(work)/alice", cache: "\(shm)/cache-alice")
        defer { alice.stop() }
        let bob = try Mount(binaries: binaries, daemon: daemon, token: bobToken, mountpoint: "\(work)/bob", cache: "\(shm)/cache-bob")
        defer { bob.stop() }
        let aliceClient = daemon.client(token: aliceToken)
        _ = try await aliceClient.createZone(named: "Team")
        let note = RecordSave(recordName: "latency", recordType: .note, name: "live.md", body: "0")
        _ = try await aliceClient.modify(ModifyRequest(zone: ZoneID(owner: "alice", name: "Team"), saves: [note]))
        let share = try await aliceClient.createShare(
            NewShare(zone: ZoneID(owner: "alice", name: "Team"), rootRecordName: nil, participants: [Invitee(name: "bob", permission: .readWrite)]))
        _ = try await daemon.client(token: bobToken).accept(url: share.url ?? share.urlToken)
        let source = "\(alice.mountpoint)/private/Team/live.md"
        let target = "\(bob.mountpoint)/shared/alice/Team/live.md"
        guard wait(until: { read(source) == "0" && read(target) == "0" }, seconds: 10) else { throw ValidationError("the shared note never reached both mounts") }
        var latencies: [Double] = []
        for round in 1...saves {
            let text = "save \(round)"
            guard write(source, Array(text.utf8)) else { throw ValidationError("writing \(source) failed") }
            let start = ContinuousClock.now
            guard wait(until: { read(target) == text }, seconds: 10) else { throw ValidationError("save \(round) never reached bob's mount") }
            latencies.append((ContinuousClock.now - start).seconds)
        }
        latencies.sort()
        let p50 = latencies[latencies.count / 2]
        let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
        print(String(format: "\nsave on one mount → visible on another (%d saves): p50 %.1f ms, p99 %.1f ms (aim p50 ≤ 5 ms, p99 ≤ 10 ms)", saves, p50 * 1e3, p99 * 1e3))

        // Catch-up: alice saves notes while notesd is away; once it is back, how soon
        // bob's mount shows them all.
        daemon.pause()
        let sourceFolder = "\(alice.mountpoint)/private/Team"
        let targetFolder = "\(bob.mountpoint)/shared/alice/Team"
        let queuedStart = ContinuousClock.now
        for index in 0..<catchUp {
            guard write("\(sourceFolder)/offline-\(index).md", Array("saved offline \(index)\n".utf8)) else { throw ValidationError("saving offline note \(index) failed") }
        }
        let queuing = (ContinuousClock.now - queuedStart).seconds
        try daemon.start()
        let back = ContinuousClock.now
        let last = "\(targetFolder)/offline-\(catchUp - 1).md"
        guard
            wait(
                until: {
                    read(last) == "saved offline \(catchUp - 1)\n"
                        && ((try? FileManager.default.contentsOfDirectory(atPath: targetFolder)) ?? []).filter { $0.hasPrefix("offline-") }.count == catchUp
                }, seconds: 120)
        else { throw ValidationError("the offline saves never all reached bob's mount") }
        let caughtUp = (ContinuousClock.now - back).seconds
        print(
            String(
                format: "catch-up after offline: %d saves queued in %.2f s; notesd back → all on the other mount in %.2f s: %.0f saves/s (aim ≥ 20,000)",
                catchUp, queuing, caughtUp, Double(catchUp) / caughtUp))

        try await historyAndTrash(client: aliceClient, mount: alice, shm: shm)
    }

    /// Listing `.history/NOTE/` of a note with 1,000 versions and a `.trash/` of 10,000
    /// entries (each asks notesd), next to listing a tmpfs folder of as many files.
    func historyAndTrash(client: NotesClient, mount: Mount, shm: String) async throws {
        let history = ZoneID(owner: "alice", name: "History")
        let bin = ZoneID(owner: "alice", name: "Bin")
        _ = try await client.createZone(named: history.name)
        _ = try await client.createZone(named: bin.name)
        var record = try await client.modify(ModifyRequest(zone: history, saves: [RecordSave(recordName: "long", recordType: .note, name: "long.md", body: "v0")])).saved[0]
        for version in 1..<1_000 {
            record = try await client.modify(
                ModifyRequest(
                    zone: history,
                    saves: [
                        RecordSave(recordName: "long", recordType: .note, name: "long.md", body: "v\(version)", changeTag: record.changeTag)
                    ])
            ).saved[0]
        }
        for start in stride(from: 0, to: 10_000, by: Limits.maxBatchItems) {
            let names = (start..<min(10_000, start + Limits.maxBatchItems)).map { "gone-\($0)" }
            _ = try await client.modify(ModifyRequest(zone: bin, saves: names.map { RecordSave(recordName: $0, recordType: .note, name: "\($0).md", body: "x") }))
            _ = try await client.modify(ModifyRequest(zone: bin, deletes: names.map { RecordDelete(recordName: $0) }))
        }
        let historyFolder = "\(mount.mountpoint)/private/History/.history/long.md"
        let trashFolder = "\(mount.mountpoint)/private/Bin/.trash"
        guard wait(until: { FileManager.default.fileExists(atPath: "\(mount.mountpoint)/private/History/long.md") }, seconds: 30) else {
            throw ValidationError("long.md never reached the mount")
        }
        print("\nlisting a made-up folder against a tmpfs folder of as many files: the first listing asks notesd, the next six (median) use its answer")
        for (label, folder, count) in [(".history/ of a note with 1,000 versions", historyFolder, 1_000), (".trash/ with 10,000 entries", trashFolder, 10_000)] {
            let plain = "\(shm)/plain-\(count)"
            try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
            for index in 0..<count { _ = write("\(plain)/file-\(index).md", [UInt8](repeating: 0x78, count: 8)) }
            /// The first listing, then the median of six more.
            func timings(_ path: String) throws -> (first: Double, median: Double, listed: Int) {
                var times: [Double] = []
                var listed = 0
                for _ in 0..<7 {
                    let start = ContinuousClock.now
                    listed = try FileManager.default.contentsOfDirectory(atPath: path).count
                    times.append((ContinuousClock.now - start).seconds)
                }
                return (times[0], times.dropFirst().sorted()[3], listed)
            }
            let base = try timings(plain)
            let measured = try timings(folder)
            guard measured.listed == count else { throw ValidationError("\(folder) listed \(measured.listed) entries, not \(count)") }
            // The call to notesd alone, as the mount makes it.
            var calls: [Double] = []
            for _ in 0..<7 {
                let start = ContinuousClock.now
                if count == 1_000 { _ = try await client.versions(of: "long", in: history) } else { _ = try await client.trash(in: bin) }
                calls.append((ContinuousClock.now - start).seconds)
            }
            print(
                label.padding(toLength: 42, withPad: " ", startingAt: 0)
                    + String(
                        format: "first %6.1f ms (the call to notesd alone: %.1f ms), then %.1f ms (notesd's answer kept); tmpfs %.1f ms; aim < 50 ms",
                        measured.first * 1e3, calls.sorted()[3] * 1e3, measured.median * 1e3, base.median * 1e3))
        }
    }
}

/// The small-file workload, timed phase by phase (seconds per operation).
struct Workload {
    /// What a phase aims at: a ratio to tmpfs (where the kernel's caches can answer) or to
    /// bindfs (where a write must reach the file system), as `BENCHMARKS.md` states them.
    enum Aim {
        case tmpfs(Double)
        case bindfs(Double)

        var text: String {
            switch self {
            case .tmpfs(let ratio): String(format: "≤%g× tmpfs", ratio)
            case .bindfs(let ratio): String(format: "≤%g× bindfs", ratio)
            }
        }

        func isMet(tmpfsRatio: Double, bindfsRatio: Double) -> Bool {
            switch self {
            case .tmpfs(let ratio): tmpfsRatio <= ratio
            case .bindfs(let ratio): bindfsRatio <= ratio
            }
        }
    }

    static let phases: [(String, Aim?)] = [
        ("create+write+close", .bindfs(1)), ("first stat", nil), ("cached stat", nil), ("readdir", nil), ("ls -l", nil),
        ("open+read+close", .tmpfs(10)), ("atomic save", .bindfs(1)), ("unlink", nil),
    ]

    let folder: String
    let files: Int
    let payload: [UInt8]
    let listings: Int
    /// Waits before each phase until the upload of the last one is over, so each phase
    /// pays for its own sync work and not for the one before.
    let settle: () -> Void

    func path(_ index: Int) -> String { "\(folder)/note-\(index).md" }

    func run() throws -> [String: Double] {
        var results: [String: Double] = [:]
        let paths = (0..<files).map(path)
        results["create+write+close"] = try time(files) {
            for path in paths {
                let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
                guard fd >= 0, payload.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == payload.count else { throw failure("create \(path)") }
                close(fd)
            }
        }
        dropCaches()
        var info = stat()
        results["first stat"] = try time(files) {
            for path in paths where stat(path, &info) != 0 { throw failure("stat \(path)") }
        }
        results["cached stat"] = try time(files) {
            for path in paths where stat(path, &info) != 0 { throw failure("stat \(path)") }
        }
        results["readdir"] = try time(files * listings) {
            for _ in 0..<listings { _ = try names() }
        }
        results["ls -l"] = try time(files * listings) {
            for _ in 0..<listings {
                for name in try names() where lstat("\(folder)/\(name)", &info) != 0 { throw failure("lstat \(name)") }
            }
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        results["open+read+close"] = try time(files) {
            for path in paths {
                let fd = open(path, O_RDONLY)
                guard fd >= 0, buffer.withUnsafeMutableBytes({ Glibc.read(fd, $0.baseAddress, $0.count) }) == payload.count else { throw failure("read \(path)") }
                close(fd)
            }
        }
        results["atomic save"] = try time(files) {
            for path in paths {
                let temporary = path + ".new"
                let fd = open(temporary, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
                guard fd >= 0, payload.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == payload.count, fsync(fd) == 0 else {
                    throw failure("save \(temporary)")
                }
                close(fd)
                guard rename(temporary, path) == 0 else { throw failure("rename \(temporary)") }
            }
        }
        results["unlink"] = try time(files) {
            for path in paths where unlink(path) != 0 { throw failure("unlink \(path)") }
        }
        return results
    }

    func names() throws -> [String] {
        guard let directory = opendir(folder) else { throw failure("opendir \(folder)") }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    func time(_ operations: Int, _ body: () throws -> Void) throws -> Double {
        settle()
        let start = ContinuousClock.now
        try body()
        return (ContinuousClock.now - start).seconds / Double(operations)
    }

    func failure(_ what: String) -> ValidationError {
        ValidationError("\(what): \(String(cString: strerror(errno)))")
    }

    /// Drops the kernel's dentry and inode caches (root only) so that "first stat" is one.
    func dropCaches() {
        sync()
        if let handle = FileHandle(forWritingAtPath: "/proc/sys/vm/drop_caches") {
            handle.write(Data("2\n".utf8))
            try? handle.close()
        }
    }
}

/// Waits (up to 20 s) until the given processes have used no CPU for 100 ms.
func settle(_ pids: [Int32]) {
    func cpu() -> Int {
        pids.reduce(0) { total, pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return total }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return total + (fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0)
        }
    }
    let deadline = Date().addingTimeInterval(20)
    var last = cpu()
    var quiet = 0
    while quiet < 2 && Date() < deadline {
        usleep(50_000)
        let now = cpu()
        quiet = now == last ? quiet + 1 : 0
        last = now
    }
}

func read(_ path: String) -> String? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
    return count >= 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : nil
}

func write(_ path: String, _ bytes: [UInt8]) -> Bool {
    let fd = open(path, O_WRONLY | O_TRUNC | O_CREAT, 0o644)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
}

func wait(until condition: () -> Bool, seconds: Double) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(200)
    }
    return condition()
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension String {
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
