import Foundation
import NotesClient
import NotesModel
import NotesPostgres
import Synchronization

/// `notes-bench --database postgres://…`: notesd on PostgreSQL next to the same
/// statements sent straight through postgres-nio from this process; then one instance
/// against two on the same database (throughput and CPU per request of each process),
/// save→visible from one instance to the other, and notesd's memory.
///
/// The database should be a throwaway one: notesd migrates it and the bench fills it.
struct PostgresBench {
    let url: String
    let records: Int
    let singles: Int
    let concurrency: Int
    let body: String
    let daemonPath: String
    let folder: String
    let latencySamples: Int

    func run() async throws {
        let location = try PostgresLocation(url: url)
        print("notes-bench on PostgreSQL (\(location)): \(records) records of \(body.utf8.count) bytes, \(singles) single saves; folder \(folder)")
        let a = try DaemonUnderTest(binary: daemonPath, folder: "\(folder)/a", arguments: ["--database", url])
        defer { a.stop() }
        let onA = try await a.client()
        let account = try await onA.whoami().name
        let zone = ZoneID(owner: account, name: "bench")
        _ = try await onA.createZone(named: "bench")
        // The baseline's own zone, for notesd's statements sent straight through postgres-nio.
        let rawZone = ZoneID(owner: account, name: "bench-raw")
        _ = try await onA.createZone(named: rawZone.name)
        let feed = PostgresChangeFeed(instance: "notes-bench")
        let baseline = PostgresBaseline(location: location)
        var rows: [ResultRow] = []
        var bareRows: [ResultRow] = []
        var rss = 0.0

        try await baseline.run { baseline in
            // Single saves: one record per request, each its own transaction; first one
            // request at a time, then `concurrency` clients at once.
            let saves = (0..<singles).map { RecordSave(recordName: "s\($0)", recordType: .note, name: "s\($0).md", body: body) }
            let half = singles / 2
            let baseSequential = try await measureAsync { try await baseline.saveEach(saves[..<half], in: rawZone, feed: feed) }
            let bareSequential = try await measureAsync { try await baseline.insertEach(saves[..<half], from: 0) }
            let notesSequential = try await measureAsync {
                for save in saves[..<half] { _ = try await onA.modify(ModifyRequest(zone: zone, saves: [save])) }
            }
            let rest = Array(saves[half...])
            let baseConcurrent = try await measureAsync {
                try await inLanes(concurrency, rest.count) { _, range in try await baseline.saveEach(rest[range], in: rawZone, feed: feed) }
            }
            let bareConcurrent = try await measureAsync {
                try await inLanes(concurrency, rest.count) { _, range in try await baseline.insertEach(rest[range], from: half + range.lowerBound) }
            }
            let notesConcurrent = try await measureAsync {
                try await inLanes(concurrency, rest.count) { _, range in
                    for save in rest[range] { _ = try await onA.modify(ModifyRequest(zone: zone, saves: [save])) }
                }
            }
            rows.append(ResultRow(name: "single saves, 1 client", unit: "saves/s", count: half, notes: notesSequential, baseline: baseSequential, aim: 0.5))
            rows.append(ResultRow(name: "single saves, \(concurrency) clients", unit: "saves/s", count: rest.count, notes: notesConcurrent, baseline: baseConcurrent, aim: 0.5))
            bareRows.append(ResultRow(name: "single saves, 1 client", unit: "saves/s", count: half, notes: notesSequential, baseline: bareSequential, aim: nil))
            bareRows.append(ResultRow(name: "single saves, \(concurrency) clients", unit: "saves/s", count: rest.count, notes: notesConcurrent, baseline: bareConcurrent, aim: nil))
            progress("single saves done")

            // Batches of 400 until the zone holds `records` records.
            let batchSaves = (0..<records).map { RecordSave(recordName: "r\($0)", recordType: .note, name: "r\($0).md", body: body) }
            let batches = stride(from: 0, to: batchSaves.count, by: Limits.maxBatchItems).map { Array(batchSaves[$0..<min($0 + Limits.maxBatchItems, batchSaves.count)]) }
            // The three take turns, a batch each: they write to tables that grow as they
            // go, and PostgreSQL's plans and statistics follow the growth; whichever ran
            // last would find them settled.
            var baseBatches = 0.0
            var bareBatches = 0.0
            var notesBatches = 0.0
            for (index, batch) in batches.enumerated() {
                baseBatches += try await measureAsync { try await baseline.saveBatch(batch, in: rawZone, feed: feed) }
                bareBatches += try await measureAsync { try await baseline.insertBatch(batch, from: 1_000_000 + index * Limits.maxBatchItems) }
                notesBatches += try await measureAsync { _ = try await onA.modify(ModifyRequest(zone: zone, saves: batch)) }
                if (index + 1) * batch.count % 20_000 == 0 { progress("batches: \((index + 1) * batch.count)/\(records)") }
            }
            rows.append(ResultRow(name: "batches of 400", unit: "records/s", count: records, notes: notesBatches, baseline: baseBatches, aim: 0.5))
            bareRows.append(ResultRow(name: "batches of 400", unit: "records/s", count: records, notes: notesBatches, baseline: bareBatches, aim: nil))

            // All changes of the zone, from no token, paged: notesd's statements for its
            // pages on the same rows, and a full read of the bare table.
            var baseCount = 0
            var sameCount = 0
            let sameFetch = try await measureAsync { sameCount = try await baseline.fetchLikeNotesd(zone, pageSize: Limits.maxChangesPage) }
            let baseFetch = try await measureAsync { baseCount = try await baseline.fetchAll() }
            var fetched = 0
            let notesFetch = try await measureAsync {
                try await onA.forEachZoneChangePage(zone, since: nil, limit: Limits.maxChangesPage) { page in fetched += page.records.count }
            }
            guard fetched == records + singles, baseCount == records + singles, sameCount == records + singles else {
                throw NotesError(.internalError, "fetched \(fetched) records from notesd, \(sameCount) and \(baseCount) from postgres-nio; expected \(records + singles)")
            }
            rows.append(ResultRow(name: "fetch all changes", unit: "records/s", count: fetched, notes: notesFetch, baseline: sameFetch, aim: 0.5))
            bareRows.append(ResultRow(name: "fetch all changes", unit: "records/s", count: fetched, notes: notesFetch, baseline: baseFetch, aim: nil))
            rss = a.residentMegabytes()
        }

        print("")
        print("Against notesd's statements sent straight through postgres-nio, on the same rows:")
        print("phase".padding(toLength: 26, withPad: " ", startingAt: 0) + "notesd".leftPad(14) + "postgres-nio".leftPad(14) + "ratio".leftPad(8) + "aim".leftPad(8))
        for row in rows { print(row.line) }
        print("")
        print("Against a bare INSERT into a table of the same shape, and one read of all of it (what the counter, access, usage, notices and pages cost):")
        for row in bareRows { print(row.line) }
        print(String(format: "notesd resident memory with %d records: %.1f MB", records + singles, rss))

        try await instances(a: a, onA: onA, zone: zone)
    }

    /// One instance against two on the same database: the same concurrent single saves,
    /// all through A, then half through A and half through B; each into one zone, then
    /// each client into a zone of its own (zones count their changes apart); then
    /// save→visible from A to B.
    func instances(a: DaemonUnderTest, onA: NotesClient, zone: ZoneID) async throws {
        let b = try DaemonUnderTest(binary: daemonPath, folder: "\(folder)/b", arguments: ["--database", url])
        defer { b.stop() }
        let onB = try await b.client()
        let count = max(singles, 4 * concurrency)
        let saves = (0..<count).map { RecordSave(recordName: "i\($0)", recordType: .note, name: "i\($0).md", body: body) }
        let zones = (0..<concurrency).map { ZoneID(owner: zone.owner, name: "bench-\($0)") }
        for lane in zones { _ = try await onA.createZone(named: lane.name) }
        let postgres = PostgresProcesses()

        func phase(
            _ name: String, _ clients: @escaping @Sendable (Int) -> NotesClient, _ zoneOf: @escaping @Sendable (Int) -> ZoneID, _ slice: ArraySlice<RecordSave>
        ) async throws {
            let before = (a: a.cpuSeconds(), b: b.cpuSeconds(), pg: postgres.cpuSeconds())
            let part = Array(slice)
            let seconds = try await measureAsync {
                try await inLanes(concurrency, part.count) { lane, range in
                    let client = clients(lane)
                    let zone = zoneOf(lane)
                    for save in part[range] { _ = try await client.modify(ModifyRequest(zone: zone, saves: [save])) }
                }
            }
            let cpu = (a: a.cpuSeconds() - before.a, b: b.cpuSeconds() - before.b, pg: postgres.cpuSeconds() - before.pg)
            let perRequest = { (value: Double) in value / Double(slice.count) * 1_000 }
            print(
                String(
                    format: "%@: %.0f saves/s; CPU per save %.2f ms in notesd A, %.2f ms in notesd B, %.2f ms in PostgreSQL",
                    name, Double(slice.count) / seconds, perRequest(cpu.a), perRequest(cpu.b), perRequest(cpu.pg)))
        }
        let quarter = count / 4
        print("")
        print("\(concurrency) clients saving one note per request, \(quarter) saves per phase:")
        try await phase("one zone, one instance    ", { _ in onA }, { _ in zone }, saves[..<quarter])
        try await phase("one zone, two instances   ", { lane in lane % 2 == 0 ? onA : onB }, { _ in zone }, saves[quarter..<(2 * quarter)])
        try await phase("\(concurrency) zones, one instance  ", { _ in onA }, { zones[$0] }, saves[(2 * quarter)..<(3 * quarter)])
        try await phase("\(concurrency) zones, two instances ", { lane in lane % 2 == 0 ? onA : onB }, { zones[$0] }, saves[(3 * quarter)...])

        // Save→visible across instances: a save through A, until B's event stream has
        // its notice, and until a fetch through B returns it.
        let arrivals = NoticeArrivals(onB)
        try await arrivals.ready()
        var notified: [Double] = []
        var visible: [Double] = []
        var token = try await onB.zoneChanges(zone, since: nil, limit: 1).changeToken
        for index in 0..<latencySamples {
            let save = RecordSave(recordName: "v\(index)", recordType: .note, name: "v\(index).md", body: "v\(index)")
            let seen = arrivals.count
            let start = ContinuousClock.now
            _ = try await onA.modify(ModifyRequest(zone: zone, saves: [save]))
            try await arrivals.wait(beyond: seen)
            notified.append((ContinuousClock.now - start).seconds * 1_000)
            var found = false
            while !found {
                let page = try await onB.zoneChanges(zone, since: token, limit: 1_000)
                token = page.changeToken
                found = page.records.contains { $0.recordName == save.recordName }
            }
            visible.append((ContinuousClock.now - start).seconds * 1_000)
        }
        arrivals.stop()
        print("")
        print(
            String(
                format: "save through A → notice on B's event stream: p50 %.1f ms, p99 %.1f ms; → fetched through B: p50 %.1f ms, p99 %.1f ms (%d saves; aim p99 ≤ 20 ms)",
                percentile(notified, 0.5), percentile(notified, 0.99), percentile(visible, 0.5), percentile(visible, 0.99), latencySamples))
    }

    func progress(_ text: String) {
        FileHandle.standardError.write(Data("  … \(text)\n".utf8))
    }
}

/// Runs `body` on `lanes` parts of `0..<count` at once (with the lane's number).
func inLanes(_ lanes: Int, _ count: Int, _ body: @escaping @Sendable (Int, Range<Int>) async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        let size = (count + lanes - 1) / lanes
        for lane in 0..<lanes where lane * size < count {
            let range = (lane * size)..<min(count, (lane + 1) * size)
            group.addTask { try await body(lane, range) }
        }
        try await group.waitForAll()
    }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

/// The CPU time of every PostgreSQL server process on this machine: the live ones', and
/// what the ones that ended left in their parent's count (a backend ends with its
/// connection).
struct PostgresProcesses {
    func cpuSeconds() -> Double {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init) ?? []
        return pids.reduce(0) { sum, pid in
            let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            return name == "postgres" ? sum + notes_bench.cpuSeconds(of: pid, withEndedChildren: true) : sum
        }
    }
}

/// Counts change notices on a client's event stream.
final class NoticeArrivals: Sendable {
    private final class Box: Sendable {
        let state = Mutex<(ready: Bool, count: Int)>((false, 0))
    }
    private let box = Box()
    private let task: Task<Void, Never>

    init(_ client: NotesClient) {
        let box = box
        task = Task {
            do {
                for try await event in client.events() {
                    box.state.withLock { value in
                        switch event {
                        case .ready: value.ready = true
                        case .change: value.count += 1
                        }
                    }
                }
            } catch {}
        }
    }

    var count: Int { box.state.withLock { $0.count } }

    func ready() async throws {
        while !box.state.withLock({ $0.ready }) { try await Task.sleep(for: .milliseconds(1)) }
    }

    /// Waits (polling every 0.2 ms) until more than `seen` notices have come.
    func wait(beyond seen: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while count <= seen {
            guard ContinuousClock.now < deadline else { throw NotesError(.serviceUnavailable, "no notice on the other instance within 30 s") }
            try await Task.sleep(for: .microseconds(200))
        }
    }

    func stop() { task.cancel() }
}
