#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import GRDB
import NIOCore
import NIOPosix
import NotesClient
import NotesModel

/// `notes-bench`: notesd's throughput next to the same work done straight on GRDB in
/// this process, printed as ratios so that the machine's speed cancels out.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notes-bench",
        abstract: "Measure notesd against raw GRDB (or postgres-nio): single saves, batches of 400, change fetch, memory.",
        discussion: """
            Starts its own notesd (next to this binary, or --notesd) in a temporary folder.
            Build in release mode first. With --database postgres://…, notesd runs on that
            database (a throwaway one: it is migrated and filled) next to the same
            statements sent through postgres-nio, then one instance against two, and
            save→visible from one instance to the other.

            Examples:
              swift build -c release && .build/release/notes-bench --records 100000
              scripts/bench-postgres.sh --records 100000
              .build/release/notes-bench --database postgres://bench@%2Ftmp%2Fpg/bench
              .build/release/notes-bench --search --records 100000
            """)

    /// The client side runs Swift concurrency on NIO's event loops too (see notesd).
    static func main() async {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await main(nil)
    }

    @Option(help: "Records in the zone for the batch and change-fetch phases.")
    var records = 100_000

    @Option(help: "Single-record saves (one request each).")
    var singles = 2_000

    @Option(help: "Concurrent clients in the second single-save phase.")
    var concurrency = 8

    @Option(help: "Bytes of text in each note.")
    var bodyBytes = 1_024

    @Option(help: "Path of the notesd binary (default: next to notes-bench).")
    var notesd: String?

    @Option(help: "Folder for the databases (default: a new folder under /tmp).")
    var dir: String?

    @Option(help: "Measure notesd on this PostgreSQL database (postgres://…; a throwaway one) against postgres-nio.")
    var database: String?

    @Option(help: "Saves timed from one instance to the other (with --database).")
    var latencySamples = 500

    @Flag(help: "Measure search instead: --records notes of 1 KiB and --large-notes of 1 MiB, queries against grep -rl, saves with and without the index.")
    var search = false

    @Option(help: "Notes of 1 MiB beside the small ones (with --search).")
    var largeNotes = 4

    @Flag(help: "With --search and --dir: time the queries over the notes a run before left in --dir, without loading them again.")
    var reuse = false

    @Flag(help: "With --search: time grep -rl through a notes mount too (needs FUSE and the notes binary next to notesd).")
    var mountGrep = false

    func run() async throws {
        let folder = dir ?? "/tmp/notes-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { if dir == nil { try? FileManager.default.removeItem(atPath: folder) } }
        let body = String(repeating: "lorem ipsum ", count: bodyBytes / 12 + 1).prefix(bodyBytes)
        let daemonPath = notesd ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("notesd").path
        if search {
            try await SearchBench(
                notes: records, largeNotes: largeNotes, singles: singles, daemonPath: daemonPath, folder: folder, reuse: reuse && dir != nil,
                databaseArguments: database.map { ["--database", $0] } ?? [], secondDatabaseArguments: database.map { ["--database", $0] } ?? [],
                mountGrep: mountGrep
            ).run()
            return
        }
        if let database {
            try await PostgresBench(
                url: database, records: records, singles: singles, concurrency: concurrency, body: String(body), daemonPath: daemonPath,
                folder: folder, latencySamples: latencySamples
            ).run()
            return
        }

        print("notes-bench: \(records) records of \(bodyBytes) bytes, \(singles) single saves; folder \(folder)")
        let baseline = try GRDBBaseline(path: "\(folder)/baseline.sqlite")
        let daemon = try DaemonUnderTest(binary: daemonPath, folder: "\(folder)/daemon")
        defer { daemon.stop() }
        let client = try await daemon.client()
        let zone = ZoneID(owner: try await client.whoami().name, name: "bench")
        _ = try await client.createZone(named: "bench")
        var rows: [ResultRow] = []

        // Single saves: one record per request, each its own durable transaction;
        // first one request at a time (latency), then `concurrency` clients at once
        // (throughput, as a server sees it). GRDB writes one transaction at a time.
        let singleSaves = (0..<singles).map { RecordSave(recordName: "s\($0)", recordType: .note, name: "s\($0).md", body: String(body)) }
        let half = singles / 2
        let baseSingles = try measure { try baseline.insertEach(singleSaves) }
        let notesSequential = try await measureAsync {
            for save in singleSaves[..<half] { _ = try await client.modify(ModifyRequest(zone: zone, saves: [save])) }
        }
        let concurrentSaves = Array(singleSaves[half...])
        let lanes = concurrency
        let notesConcurrent = try await measureAsync {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<lanes {
                    group.addTask {
                        for index in stride(from: lane, to: concurrentSaves.count, by: lanes) {
                            _ = try await client.modify(ModifyRequest(zone: zone, saves: [concurrentSaves[index]]))
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let baseHalf = baseSingles / 2
        rows.append(ResultRow(name: "single saves, 1 client", unit: "saves/s", count: half, notes: notesSequential, baseline: baseHalf, aim: 0.25))
        rows.append(ResultRow(name: "single saves, \(lanes) clients", unit: "saves/s", count: concurrentSaves.count, notes: notesConcurrent, baseline: baseHalf, aim: 0.25))
        progress("single saves done")

        // Batches of 400 until the zone holds `records` records.
        let batchSaves = (0..<records).map { RecordSave(recordName: "r\($0)", recordType: .note, name: "r\($0).md", body: String(body)) }
        let batches = stride(from: 0, to: batchSaves.count, by: Limits.maxBatchItems).map { Array(batchSaves[$0..<min($0 + Limits.maxBatchItems, batchSaves.count)]) }
        let baseBatches = try measure { for batch in batches { try baseline.insertBatch(batch) } }
        var done = 0
        let notesBatches = try await measureAsync {
            for batch in batches {
                _ = try await client.modify(ModifyRequest(zone: zone, saves: batch))
                done += batch.count
                if done % 20_000 == 0 { progress("batches: \(done)/\(records)") }
            }
        }
        rows.append(ResultRow(name: "batches of 400", unit: "records/s", count: records, notes: notesBatches, baseline: baseBatches, aim: 0.5))

        // All changes of the zone, from no token, paged.
        var baselineCount = 0
        let baseFetch = try measure { baselineCount = try baseline.fetchAll() }
        var fetched = 0
        let cpuBefore = (notesd: daemon.cpuSeconds(), client: cpuSeconds(of: getpid()))
        let notesFetch = try await measureAsync {
            try await client.forEachZoneChangePage(zone, since: nil, limit: Limits.maxChangesPage) { page in
                fetched += page.records.count
            }
        }
        rows.append(ResultRow(name: "fetch all changes", unit: "records/s", count: fetched, notes: notesFetch, baseline: baseFetch, aim: 0.5))
        // Pages are pipelined: the fetch runs at the pace of the busier side.
        let fetchCPU = (notesd: daemon.cpuSeconds() - cpuBefore.notesd, client: cpuSeconds(of: getpid()) - cpuBefore.client)
        guard fetched == records + singles, baselineCount == records + singles else {
            throw ValidationError("fetched \(fetched) records from notesd and \(baselineCount) from GRDB; expected \(records + singles)")
        }

        let rss = daemon.residentMegabytes()
        print("")
        print("phase".padding(toLength: 26, withPad: " ", startingAt: 0) + "notesd".leftPad(14) + "GRDB".leftPad(14) + "ratio".leftPad(8) + "aim".leftPad(8))
        for row in rows { print(row.line) }
        print(String(format: "notesd resident memory with %d records: %.1f MB (aim < 100 MB)", records + singles, rss))
        print(String(format: "change fetch: %.2f s in all; CPU %.2f s in notesd, %.2f s in this client", notesFetch, fetchCPU.notesd, fetchCPU.client))
    }

    func progress(_ text: String) {
        FileHandle.standardError.write(Data("  … \(text)\n".utf8))
    }
}

struct ResultRow {
    var name: String
    var unit: String
    var count: Int
    var notes: Double
    var baseline: Double
    /// The ratio aimed at; `nil` for a row shown for comparison only.
    var aim: Double?

    var line: String {
        let notesRate = Double(count) / notes
        let baseRate = Double(count) / baseline
        let ratio = notesRate / baseRate
        return name.padding(toLength: 26, withPad: " ", startingAt: 0)
            + String(format: "%8.0f", notesRate).leftPad(14)
            + String(format: "%8.0f", baseRate).leftPad(14)
            + String(format: "%.2f", ratio).leftPad(8)
            + (aim.map { String(format: "≥%.2f", $0) } ?? "").leftPad(8)
            + "  \(unit)" + (ratio >= (aim ?? 0) ? "" : "  (below aim)")
    }
}

extension String {
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

func measure(_ body: () throws -> Void) throws -> Double {
    let start = ContinuousClock.now
    try body()
    return (ContinuousClock.now - start).seconds
}

func measureAsync(_ body: () async throws -> Void) async throws -> Double {
    let start = ContinuousClock.now
    try await body()
    return (ContinuousClock.now - start).seconds
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// CPU seconds (user + system) a process has used so far, from /proc; with
/// `withEndedChildren`, also those of its children that ended and were waited for.
func cpuSeconds(of pid: Int32, withEndedChildren: Bool = false) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 14, let user = Double(fields[11]), let system = Double(fields[12]),
        let childUser = Double(fields[13]), let childSystem = Double(fields[14])
    else { return 0 }
    return (user + system + (withEndedChildren ? childUser + childSystem : 0)) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
