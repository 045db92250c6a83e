#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesModel
import NotesSpawn

/// Whole-tree reads at scale: the same notes on tmpfs, on bindfs over that tmpfs (the
/// cost of any FUSE file system that passes calls through), and on a notes mount, with
/// the mount's resident memory after each step.
struct ScaleBenchmark {
    let notes: Int
    let binaries: URL
    let daemon: Daemon
    let token: String
    let work: String
    let shm: String
    let mountsOnly: Bool

    /// A word found in one note of a hundred, for `grep -rl`.
    static let needle = "zebrafish"

    static func text(_ index: Int) -> String {
        var text = "# Note \(index)\n\n"
        let words = ["plan", "meeting", "quarter", "budget", "review", "draft", "team", "notes", "idea", "list"]
        var word = UInt(index)
        while text.utf8.count < 1_000 {
            text += words[Int(word % UInt(words.count))] + (word % 7 == 0 ? ".\n" : " ")
            word = word &* 31 &+ 7
        }
        if index % 100 == 0 { text += Self.needle + "\n" }
        return text
    }

    func run() async throws {
        let client = daemon.client(token: token)
        let zone = try await client.createZone(named: "Scale").id
        let tree = "\(shm)/tree"
        try FileManager.default.createDirectory(atPath: tree, withIntermediateDirectories: true)
        print("notes-fsbench --scale: \(notes) notes of about 1 KiB, \(notes / 100) of them holding '\(Self.needle)'")
        let loading = ContinuousClock.now
        var batch: [RecordSave] = []
        for index in 0..<notes {
            let text = Self.text(index)
            batch.append(RecordSave(recordName: "n\(index)", recordType: .note, name: "note-\(index).md", body: text))
            try text.write(toFile: "\(tree)/note-\(index).md", atomically: false, encoding: .utf8)
            if batch.count == 400 || index == notes - 1 {
                _ = try await client.modify(ModifyRequest(zone: zone, saves: batch))
                batch = []
            }
        }
        print(String(format: "loaded into notesd and tmpfs in %.1f s", (ContinuousClock.now - loading).seconds))

        if mountsOnly {
            try remounts(into: "\(work)/scale-mount", cache: "\(shm)/scale-cache")
            return
        }
        let bound = "\(work)/bindfs"
        try FileManager.default.createDirectory(atPath: bound, withIntermediateDirectories: true)
        guard Self.run(["bindfs", tree, bound]) == 0 else { throw ValidationError("bindfs failed: is it installed (apt-get install bindfs)?") }
        defer { _ = Self.run(["fusermount3", "-u", bound]) }

        let mountpoint = "\(work)/scale-mount"
        let cache = "\(shm)/scale-cache"
        var started = ContinuousClock.now
        var mount = try Mount(binaries: binaries, daemon: daemon, token: token, mountpoint: mountpoint, cache: cache)
        let folder = "\(mountpoint)/private/Scale"
        guard waitForListing(folder, count: notes) else { throw ValidationError("the mount never listed all \(notes) notes") }
        print(String(format: "first mount, until all notes are listed: %.2f s (aim ≤ 3 s); mount memory %@", (ContinuousClock.now - started).seconds, rss(mount)))

        let places = [("tmpfs", tree), ("bindfs", bound), ("notes mount", folder)]
        print(
            "\n" + "step".padding(toLength: 26, withPad: " ", startingAt: 0) + places.map { $0.0.leftPad(14) }.joined() + "mount ÷ bindfs".leftPad(16) + "mount memory".leftPad(14))
        func row(_ label: String, _ command: (String) -> [String], expect: Int) throws {
            var seconds: [Double] = []
            for (name, path) in places {
                let start = ContinuousClock.now
                let lines = output(command(path)).split(separator: "\n").count
                seconds.append((ContinuousClock.now - start).seconds)
                guard lines == expect else { throw ValidationError("\(label) on \(name) printed \(lines) lines, not \(expect)") }
            }
            print(
                label.padding(toLength: 26, withPad: " ", startingAt: 0) + seconds.map { String(format: "%.2f s", $0).leftPad(14) }.joined()
                    + String(format: "%.2f×", seconds[2] / seconds[1]).leftPad(16) + rss(mount).leftPad(14))
        }
        try row("find -type f", { ["find", $0, "-type", "f"] }, expect: notes)
        for run in 1...3 {
            try row("grep -rl, warm, run \(run)", { ["grep", "-rl", Self.needle, $0] }, expect: notes / 100)
        }

        mount.stop()
        started = ContinuousClock.now
        mount = try Mount(binaries: binaries, daemon: daemon, token: token, mountpoint: mountpoint, cache: cache)
        defer { mount.stop() }
        guard waitForListing(folder, count: notes) else { throw ValidationError("the remount never listed all \(notes) notes") }
        print(
            String(format: "\nremount with a warm replica, until all notes are listed: %.2f s (aim ≤ 0.5 s); mount memory %@", (ContinuousClock.now - started).seconds, rss(mount)))
        try row("grep -rl after the remount", { ["grep", "-rl", Self.needle, $0] }, expect: notes / 100)
    }

    /// The first mount, then three remounts with the replica warm, each timed until
    /// every note is listed.
    func remounts(into mountpoint: String, cache: String) throws {
        let folder = "\(mountpoint)/private/Scale"
        for round in 0...3 {
            let started = ContinuousClock.now
            let mount = try Mount(binaries: binaries, daemon: daemon, token: token, mountpoint: mountpoint, cache: cache)
            defer { mount.stop() }
            guard waitForListing(folder, count: notes) else { throw ValidationError("the mount never listed all \(notes) notes") }
            print(
                String(
                    format: "%@, until all notes are listed: %.2f s (aim ≤ %@); mount memory %@", round == 0 ? "first mount" : "remount \(round)",
                    (ContinuousClock.now - started).seconds, round == 0 ? "3 s" : "0.5 s", rss(mount)))
        }
    }

    func entries(_ folder: String) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: folder).count) ?? -1
    }

    /// Waits until `folder` lists `count` entries. A listing of 100,000 names costs the
    /// mount (and the kernel) about a third of a second, as much as the work being
    /// timed: polling with listings took a core from the first mount it measured. So
    /// it waits, a lookup at a time, for the last note loaded (the mount fetches them
    /// in the order they were saved) and only then lists the folder; if the listing is
    /// short, it goes on polling with listings, each after a pause as long as the last.
    func waitForListing(_ folder: String, count: Int) -> Bool {
        let deadline = ContinuousClock.now + .seconds(600)
        var info = stat()
        while ContinuousClock.now < deadline && stat("\(folder)/note-\(count - 1).md", &info) != 0 {
            usleep(200)
        }
        while ContinuousClock.now < deadline {
            let start = ContinuousClock.now
            if entries(folder) == count { return true }
            let took = ContinuousClock.now - start
            usleep(useconds_t(max(200, took.seconds * 1e6)))
        }
        return false
    }

    /// The mount process's resident memory.
    func rss(_ mount: Mount) -> String {
        let status = (try? String(contentsOfFile: "/proc/\(mount.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return "?" }
        return "\(kilobytes / 1024) MB"
    }

    /// Runs a program to its end (found on PATH); its exit status.
    @discardableResult
    static func run(_ arguments: [String]) -> Int32 {
        guard let child = try? ChildProcess.start("/usr/bin/env", arguments: arguments, environment: ProcessInfo.processInfo.environment) else { return -1 }
        return child.wait()
    }

    /// Runs a program to its end; what it printed.
    func output(_ arguments: [String]) -> String {
        guard let child = try? ChildProcess.start("/usr/bin/env", arguments: arguments, environment: ProcessInfo.processInfo.environment, pipeOutput: true),
            let descriptor = child.output
        else { return "" }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += buffer[0..<count]
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        close(descriptor)
        _ = child.wait()
        return String(decoding: bytes, as: UTF8.self)
    }
}
