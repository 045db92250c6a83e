#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import GRDB
import Logging
import NotesClient
import NotesModel
import NotesReplica
import NotesSearch
import NotesText

/// `notes-bench --search`: search through notesd over a corpus of many notes, next to
/// `grep -rl` over the same notes as files on tmpfs, and single saves with the index
/// against a notesd keeping none, in the same run.
struct SearchBench {
    let notes: Int
    let largeNotes: Int
    let singles: Int
    let daemonPath: String
    let folder: String
    /// Whether the notes are in `folder` already, loaded and indexed by an earlier run.
    let reuse: Bool
    /// notesd's database options (`--database URL`), empty for SQLite.
    let databaseArguments: [String]
    let secondDatabaseArguments: [String]
    /// Whether `grep -rl` is timed on a `notes mount` too (the mount first fetches every
    /// note: a minute or more).
    var mountGrep = false

    /// A seeded generator, so that every run measures the same corpus.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }

    /// Words in order of how often they are used (Zipf: the n-th is used 1/n as often).
    struct Vocabulary {
        let words: [String]
        let cumulative: [Double]

        init(count: Int, generator: inout Generator) {
            let syllables = ["ka", "to", "ri", "men", "sol", "va", "ne", "plan", "ter", "ux", "lo", "bri", "dan", "qui", "es", "mar", "ol", "zen", "fi", "gra"]
            var seen = Set<String>()
            var words: [String] = []
            while words.count < count {
                let length = 2 + generator.below(3)
                let word = (0..<length).map { _ in syllables[generator.below(syllables.count)] }.joined()
                if seen.insert(word).inserted { words.append(word) }
            }
            self.words = words
            var total = 0.0
            cumulative = (1...count).map { rank in
                total += 1 / Double(rank)
                return total
            }
        }

        func pick(_ generator: inout Generator) -> String {
            let target = Double(generator.next() % 1_000_000) / 1_000_000 * cumulative.last!
            var low = 0
            var high = cumulative.count - 1
            while low < high {
                let middle = (low + high) / 2
                if cumulative[middle] < target { low = middle + 1 } else { high = middle }
            }
            return words[low]
        }
    }

    static func note(_ index: Int, bytes: Int, vocabulary: Vocabulary, generator: inout Generator) -> String {
        var text = "# \(vocabulary.pick(&generator)) \(vocabulary.pick(&generator)) \(index)\n\n"
        if index % 20 == 7 {
            // One note in twenty is Japanese or Chinese.
            while text.utf8.count < bytes {
                let scalar = Unicode.Scalar(0x4E00 + UInt32(generator.below(600)))!
                text.unicodeScalars.append(scalar)
                if generator.below(12) == 0 { text += "。" }
            }
            return text
        }
        var line = 0
        while text.utf8.count < bytes {
            text += vocabulary.pick(&generator)
            line += 1
            text += line % 12 == 0 ? ".\n" : " "
        }
        return text
    }

    func run() async throws {
        print("notes-bench --search: \(notes) notes of 1 KiB and \(largeNotes) of 1 MiB; folder \(folder)")
        var generator = Generator(state: 2026)
        let vocabulary = Vocabulary(count: 30_000, generator: &generator)
        var bodies = (0..<notes).map { Self.note($0, bytes: 1_024, vocabulary: vocabulary, generator: &generator) }
        bodies += (0..<largeNotes).map { Self.note(notes + $0, bytes: 1 << 20, vocabulary: vocabulary, generator: &generator) }
        let textBytes = bodies.reduce(0) { $0 + $1.utf8.count }

        // Loaded in batches, then timed until the index says it holds every note.
        let daemon = try DaemonUnderTest(binary: daemonPath, folder: "\(folder)/indexed", arguments: databaseArguments)
        defer { daemon.stop() }
        let client = try await daemon.client()
        let zone = ZoneID(owner: try await client.whoami().name, name: ZoneID.defaultZoneName)
        let saves = bodies.enumerated().map { index, body in
            RecordSave(recordName: "n\(index)", recordType: .note, name: "n\(index).md", body: body)
        }
        // Single saves with the index and without, in turns, on stores of the same
        // size (before the corpus is loaded).
        let plain = try DaemonUnderTest(binary: daemonPath, folder: "\(folder)/plain", arguments: secondDatabaseArguments + ["--no-search"])
        defer { plain.stop() }
        let plainClient = try await plain.client()
        var withIndex = 0.0
        var without = 0.0
        let body = bodies[1]
        for round in 0..<(reuse ? 0 : 4) {
            for (target, isIndexed) in [(client, true), (plainClient, false)] {
                let seconds = try await measureAsync {
                    for index in 0..<(singles / 4) {
                        _ = try await target.modify(
                            ModifyRequest(
                                zone: zone,
                                saves: [
                                    RecordSave(
                                        recordName: "s\(isIndexed)-\(round)-\(index)", recordType: .note, name: "s\(isIndexed)-\(round)-\(index).md", body: body)
                                ]))
                    }
                }
                if isIndexed { withIndex += seconds } else { without += seconds }
            }
        }
        if !reuse {
            print(
                String(
                    format: "single saves, 1 client: %.0f/s with the index, %.0f/s without: %.2f (aim ≥ 0.90)", Double(singles) / withIndex, Double(singles) / without,
                    without / withIndex))
        }

        let start = ContinuousClock.now
        var batch: [RecordSave] = []
        var batchBytes = 0
        for save in saves where !reuse {
            batch.append(save)
            batchBytes += save.body?.utf8.count ?? 0
            if batch.count == Limits.maxBatchItems || batchBytes > 8 << 20 {
                _ = try await client.modify(ModifyRequest(zone: zone, saves: batch))
                batch = []
                batchBytes = 0
            }
        }
        if !batch.isEmpty, !reuse { _ = try await client.modify(ModifyRequest(zone: zone, saves: batch)) }
        let loaded = (ContinuousClock.now - start).seconds
        while try await !client.search("zzzz").complete {}
        let indexed = (ContinuousClock.now - start).seconds
        print(String(format: "load in batches of 400: %.1f s; every note searchable %.1f s after the first save (aim < 30 s)", loaded, indexed))
        // Queries are timed once the index is merged (`notes_search_indexer_working` 0):
        // right after a load it holds many segments, and merges them in the background.
        while try await Self.indexerWorking(client) {
            try await Task.sleep(for: .milliseconds(50))
        }
        print(String(format: "index merged %.1f s after the first save", (ContinuousClock.now - start).seconds))
        if databaseArguments.isEmpty {
            // The index itself, and the words it is built over (the docs table).
            var configuration = Configuration()
            configuration.readonly = true
            let sizes = try await DatabaseQueue(path: "\(folder)/indexed/notes-search.sqlite", configuration: configuration).read { db in
                (
                    try Int.fetchOne(db, sql: "SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'docs_index%'") ?? 0,
                    try Int.fetchOne(db, sql: "SELECT SUM(pgsize) FROM dbstat WHERE name = 'docs' OR name LIKE 'sqlite_autoindex_docs%'") ?? 0
                )
            }
            print(
                String(
                    format: "word index: %.0f MB for %.0f MB of notes: %.2f× (aim ≤ 3×); with the words it is built over: %.2f×", Double(sizes.0) / 1e6,
                    Double(textBytes) / 1e6, Double(sizes.0) / Double(textBytes), Double(sizes.0 + sizes.1) / Double(textBytes)))
        }

        // Queries of each kind, with words drawn as they are used.
        var kinds: [(String, [String])] = []
        func words(_ rank: ClosedRange<Int>) -> [String] { (0..<40).map { _ in vocabulary.words[rank.lowerBound + generator.below(rank.count)] } }
        kinds.append(("rare word", words(5_000...29_999)))
        kinds.append(("middling word", words(200...2_000)))
        kinds.append(("common word", words(0...20)))
        kinds.append(("inside words", words(200...2_000).map { String($0.dropFirst().prefix(4)) }))
        kinds.append(("word start*", words(200...2_000).map { String($0.prefix(4)) + "*" }))
        kinds.append(("\"phrase\"", (0..<40).map { _ in "\"\(vocabulary.words[generator.below(300)]) \(vocabulary.words[generator.below(300)])\"" }))
        kinds.append(("-excluded", words(200...2_000).map { "\($0) -\(vocabulary.words[generator.below(50)])" }))
        kinds.append(("title:", words(100...1_000).map { "title:\($0)" }))
        kinds.append(
            (
                "Chinese, 1–2 characters",
                (0..<40).map { index in
                    let first = String(Unicode.Scalar(0x4E00 + UInt32(generator.below(600)))!)
                    return index % 2 == 0 ? first : first + String(Unicode.Scalar(0x4E00 + UInt32(generator.below(600)))!)
                }
            ))
        print("\nthrough notesd:")
        let middling = try await Self.measure(kinds, aim: databaseArguments.isEmpty ? 50 : 20) { query in try await client.search(query, limit: 20).results.count }

        // The same notes in a mount's replica, indexed there and searched offline.
        let account = zone.owner
        let replicaFolder = "\(folder)/replica"
        try FileManager.default.createDirectory(atPath: replicaFolder, withIntermediateDirectories: true)
        let replica = try Replica(path: ReplicaLocation.path(in: replicaFolder, account: account))
        let now = Date()
        for first in stride(from: 0, to: reuse ? 0 : bodies.count, by: 1_000) {
            let records = (first..<min(bodies.count, first + 1_000)).map { index in
                Record(
                    recordName: "n\(index)", zone: zone, recordType: .note, name: "n\(index).md", parent: nil, body: bodies[index], bytes: nil,
                    createdAt: now, modifiedAt: now, modifiedBy: account, changeTag: "t\(index)", shareID: nil)
            }
            _ = try replica.applyRemote(zone, records: records, deleted: [], token: "\(first)", scope: .private)
        }
        let making = ContinuousClock.now
        var wordCount = 0
        for body in bodies { wordCount += SearchDocument(name: "n.md", body: body).words.utf8.count }
        let madeIn = (ContinuousClock.now - making).seconds
        print(
            String(
                format: "\nmaking the words of every note on one core: %.1f s (%.0f MB/s of text, %.0f MB of words)", madeIn, Double(textBytes) / 1e6 / madeIn,
                Double(wordCount) / 1e6))
        let indexStart = ContinuousClock.now
        let local = try ReplicaSearch(replica: replica, logger: Logger(label: "notes-bench"))
        try await local.indexer?.catchUp { _ in }
        print(String(format: "\nthe same notes in a mount's replica: every note searchable %.1f s after the index opened (aim < 30 s)", (ContinuousClock.now - indexStart).seconds))
        while local.indexer?.isIdle == false { try await Task.sleep(for: .milliseconds(50)) }
        print(String(format: "index merged %.1f s after it opened", (ContinuousClock.now - indexStart).seconds))
        print("offline, over the replica's index (in-process):")
        _ = try await Self.measure(kinds, aim: 50) { query in
            try local.search(try SearchRules.Request(API.Search(query: query, limit: 20)), in: nil, account: account).count
        }
        local.close()
        guard !reuse else { return }

        // grep -rl over the same notes as files on tmpfs, for reference.
        let tree = "/dev/shm/notes-bench-grep-\(getpid())"
        try FileManager.default.createDirectory(atPath: tree, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: tree) }
        for (index, body) in bodies.enumerated() {
            let sub = "\(tree)/\(index / 1000)"
            if index % 1000 == 0 { try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true) }
            try Data(body.utf8).write(to: URL(fileURLWithPath: "\(sub)/n\(index).md"))
        }
        let word = vocabulary.words[1_000]
        _ = try grep(word, tree)
        let grepSeconds = try (0..<3).map { _ in try grep(word, tree) }.sorted()[1]
        print(
            String(format: "grep -rl %@ over the same notes on tmpfs (warm, median of 3): %.0f ms; a middling word through notesd: p50 %.1f ms", word, grepSeconds * 1000, middling)
        )
        if mountGrep {
            try await grepOnMount(word, daemon: daemon, last: "n\(bodies.count - 1).md")
        }
    }

    /// `grep -rl` over the same notes through a `notes mount` of notesd's account (the
    /// bench's), once the mount shows the last note; warm (a run before the one timed).
    func grepOnMount(_ word: String, daemon: DaemonUnderTest, last: String) async throws {
        let mountpoint = "\(folder)/mount"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: daemonPath).deletingLastPathComponent().appendingPathComponent("notes")
        mount.arguments = ["mount", mountpoint, "--foreground", "--cache-dir", "\(folder)/mount-cache", "--socket", daemon.socket, "--log-level", "warning"]
        try mount.run()
        defer {
            mount.terminate()
            mount.waitUntilExit()
        }
        let start = ContinuousClock.now
        while !FileManager.default.fileExists(atPath: "\(mountpoint)/private/\(last)") {
            guard mount.isRunning, ContinuousClock.now - start < .seconds(1_200) else {
                print("the mount did not show every note; grep -rl on it not measured")
                return
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        let shown = (ContinuousClock.now - start).seconds
        _ = try grep(word, "\(mountpoint)/private")
        let seconds = try grep(word, "\(mountpoint)/private")
        print(String(format: "grep -rl %@ over the same notes through a notes mount (warm; the mount showed them all %.0f s after it started): %.1f s", word, shown, seconds))
    }

    /// Whether notesd's search indexer is taking notes in or merging its index, from
    /// `GET /metrics`.
    static func indexerWorking(_ client: NotesClient) async throws -> Bool {
        let (_, body) = try await client.raw("GET", "/metrics", body: nil)
        let line = String(decoding: body, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("notes_search_indexer_working ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { $0 > 0 } ?? false
    }

    /// Times every query of every kind; prints each kind's p50 and p99 and all
    /// queries'; returns the middling words' p50.
    static func measure(_ kinds: [(String, [String])], aim: Int, _ search: (String) async throws -> Int) async throws -> Double {
        var all: [Double] = []
        var middling = Double.nan
        print("query".padding(toLength: 26, withPad: " ", startingAt: 0) + "p50 ms".leftPad(9) + "p99 ms".leftPad(9) + "hits (median)".leftPad(15))
        for (kind, queries) in kinds {
            var times: [Double] = []
            var hits: [Int] = []
            for query in queries {
                let begin = ContinuousClock.now
                hits.append(try await search(query))
                times.append((ContinuousClock.now - begin).seconds * 1000)
            }
            all += times
            if kind == "middling word" { middling = percentile(times, 0.5) }
            print(
                kind.padding(toLength: 26, withPad: " ", startingAt: 0) + String(format: "%.1f", percentile(times, 0.5)).leftPad(9)
                    + String(format: "%.1f", percentile(times, 0.99)).leftPad(9) + "\(hits.sorted()[hits.count / 2])".leftPad(15))
        }
        print(String(format: "all queries: p50 %.1f ms, p99 %.1f ms (aim p50 ≤ 5, p99 ≤ %d)", percentile(all, 0.5), percentile(all, 0.99), aim))
        return middling
    }

    func grep(_ word: String, _ tree: String) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/grep")
        process.arguments = ["-rl", word, tree]
        process.standardOutput = FileHandle.nullDevice
        let start = ContinuousClock.now
        try process.run()
        process.waitUntilExit()
        return (ContinuousClock.now - start).seconds
    }
}
