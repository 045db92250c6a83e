import Foundation
import Logging
import NotesModel
import NotesPostgres
import NotesTestSupport
import Synchronization
import Testing

/// Many writers through two stores (two pools on one database, as two notesd) and many
/// readers paging by change token through both, at once.
@Suite struct ConcurrentWritersTests {
    /// Each writer owns its records (creates, edits with the tag it holds, deletes) in
    /// one of `zoneCount` zones, and now and then races the others of its zone on three
    /// shared records with the tag it last read; batches of one to three. Each reader
    /// follows the database's change token through a random store and pages each zone it
    /// reports with a small random limit, until the writers are done and it has caught
    /// up. Then:
    /// - every reader saw each change (record and change tag) at most once, in strictly
    ///   increasing change numbers within its zone (no change became visible behind a
    ///   zone token already handed out: a zone's numbers are taken in commit order);
    /// - every reader ends with exactly each zone's final state (so no database token
    ///   skipped a zone's change, whatever order writers of different zones committed
    ///   in), and that state holds every acknowledged write: a writer's own records as it
    ///   last saved them (or gone, if it deleted them), each shared record as its highest
    ///   acknowledged save.
    ///
    /// `NOTES_PG_CONCURRENCY_SEED=N` replays the writers' and readers' choices (the
    /// interleaving is the machine's); `NOTES_PG_WRITERS`, `NOTES_PG_OPS` scale it.
    @Test(arguments: [1, 4])
    func everyReaderSeesEveryChangeExactlyOnceAndNoAcknowledgedWriteIsLost(zoneCount: Int) async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["NOTES_PG_CONCURRENCY_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let writerCount = environment["NOTES_PG_WRITERS"].flatMap(Int.init) ?? 8
        let operations = environment["NOTES_PG_OPS"].flatMap(Int.init) ?? 30
        let readerCount = 4
        print(
            "concurrency test: seed \(seed) (replay: NOTES_PG_CONCURRENCY_SEED=\(seed) swift test --filter ConcurrentWritersTests), \(writerCount) writers × \(operations) operations in \(zoneCount) zones, \(readerCount) readers"
        )

        let url = try PostgresCluster.shared().createDatabase()
        let first = try RunningPool(url: url)
        let second = try RunningPool(url: url)
        try await first.database.migrate()
        let stores = [PostgresStore(database: first.database), PostgresStore(database: second.database)]
        _ = try await stores[0].createAccount(name: "alice", email: nil, isAdmin: false)
        let zones = [ZoneID(owner: "alice", name: ZoneID.defaultZoneName)] + (1..<zoneCount).map { ZoneID(owner: "alice", name: "zone-\($0)") }
        for zone in zones.dropFirst() { _ = try await stores[0].createZone(zone, actor: "alice") }
        let hot = ["hot-0", "hot-1", "hot-2"]
        for zone in zones {
            _ = try await stores[0].modify(
                ModifyRequest(zone: zone, saves: hot.map { RecordSave(recordName: $0, recordType: .note, name: "\($0).md", body: "start") }), actor: "alice")
        }

        let writersDone = Flag()
        let started = ContinuousClock.now
        // Readers and writers run together.
        async let readerResults: [Reader.Outcome] = withThrowingTaskGroup(of: Reader.Outcome.self) { group in
            for index in 0..<readerCount {
                group.addTask {
                    var reader = Reader(seed: seed &+ 1_000 &+ UInt64(index))
                    return try await reader.run(stores: stores, zones: zones, until: writersDone)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let writerResults: [Writer.Outcome] = try await withThrowingTaskGroup(of: Writer.Outcome.self) { group in
            for index in 0..<writerCount {
                group.addTask {
                    var writer = Writer(index: index, seed: seed &+ UInt64(index), hot: hot)
                    return try await writer.run(store: stores[index % 2], zone: zones[index % zones.count], operations: operations)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        writersDone.set()
        let readers = try await readerResults
        let elapsed = ContinuousClock.now - started

        // The truth, read afresh through the other store.
        var truths: [ZoneID: [String: Record]] = [:]
        for zone in zones {
            var truth: [String: Record] = [:]
            var token: String?
            repeat {
                let page = try await stores[1].zoneChanges(zone, since: token, limit: 500, actor: "alice")
                for name in page.deleted { truth[name] = nil }
                for record in page.records { truth[record.recordName] = record }
                token = page.changeToken
                if !page.moreComing { break }
            } while true
            truths[zone] = truth
        }

        // Every acknowledged write is there.
        var lost: [String] = []
        for writer in writerResults {
            let truth = truths[writer.zone] ?? [:]
            for (name, expected) in writer.owned {
                switch expected {
                case .saved(let body, let tag):
                    if truth[name]?.body != body || truth[name]?.changeTag != tag {
                        lost.append("\(name): expected \(body) @\(tag), found \(String(describing: truth[name]?.body)) @\(String(describing: truth[name]?.changeTag))")
                    }
                case .deleted:
                    if truth[name] != nil { lost.append("\(name): deleted, but still there") }
                }
            }
        }
        for zone in zones {
            let truth = truths[zone] ?? [:]
            let hotWrites = writerResults.filter { $0.zone == zone }.flatMap(\.hotAcknowledged)
            for name in hot {
                guard let newest = hotWrites.filter({ $0.name == name }).max(by: { Self.number($0.tag) < Self.number($1.tag) }) else { continue }
                if truth[name]?.changeTag != newest.tag || truth[name]?.body != newest.body {
                    lost.append(
                        "\(zone.name)/\(name): its newest acknowledged save \(newest.body) @\(newest.tag), found \(String(describing: truth[name]?.body)) @\(String(describing: truth[name]?.changeTag))"
                    )
                }
            }
        }
        #expect(lost.isEmpty, "seed \(seed): acknowledged writes lost:\n\(lost.joined(separator: "\n"))")

        // Every reader saw each change once, in order, and ends where every zone is.
        let truthTags = truths.mapValues { $0.mapValues(\.changeTag) }
        for (index, reader) in readers.enumerated() {
            #expect(reader.problems.isEmpty, "seed \(seed), reader \(index): \(reader.problems.prefix(10).joined(separator: "\n"))")
            for zone in zones {
                let state = reader.state[zone] ?? [:]
                let truth = truthTags[zone] ?? [:]
                #expect(
                    state == truth,
                    "seed \(seed), reader \(index) ends with \(state.count) records in \(zone.name), the zone holds \(truth.count); differing: \(Set(state.keys).symmetricDifference(truth.keys).sorted().prefix(10))"
                )
            }
        }
        let acknowledged = writerResults.map(\.acknowledgedBatches).reduce(0, +)
        let refused = writerResults.map(\.refusedHotSaves).reduce(0, +)
        let timedOut = writerResults.map(\.timedOut).reduce(0, +)
        #expect(timedOut * 2 <= acknowledged, "most batches timed out (\(timedOut)): the test proved little")
        let pages = readers.map(\.pages).reduce(0, +)
        print(
            "concurrency test, seed \(seed), \(zoneCount) zones: \(acknowledged) batches acknowledged (\(refused) stale shared saves refused as they should be, \(timedOut) timed out and rolled back), \(truths.values.map(\.count).reduce(0, +)) records at the end; readers read \(pages) pages and saw \(readers.map(\.changesSeen).reduce(0, +)) changes, each once; \(elapsed)"
        )
    }

    /// A change tag's change number (tags are the number in base 36).
    static func number(_ tag: String) -> Int64 { Int64(tag, radix: 36) ?? -1 }

    /// One writer's choices and what was acknowledged to it.
    struct Writer {
        enum Expected: Sendable {
            case saved(body: String, tag: String)
            case deleted
        }
        struct HotSave: Sendable {
            let name: String
            let body: String
            let tag: String
        }
        struct Outcome: Sendable {
            var zone = ZoneID(owner: "", name: "")
            var owned: [String: Expected] = [:]
            var hotAcknowledged: [HotSave] = []
            var acknowledgedBatches = 0
            var refusedHotSaves = 0
            /// Batches that waited past the statement timeout for the change counter on a
            /// loaded machine: rolled back (503), so not acknowledged, and left out.
            var timedOut = 0
        }

        let index: Int
        var random: SplitMix64
        let hot: [String]

        init(index: Int, seed: UInt64, hot: [String]) {
            self.index = index
            self.random = SplitMix64(seed: seed)
            self.hot = hot
        }

        /// A modify's answer, or the error it got (kept out of `run`: a `catch where` on
        /// typed throws there crashed the Swift 6.3.1 compiler).
        static func attempt(_ store: PostgresStore, _ request: ModifyRequest) async -> Result<ModifyResult, NotesError> {
            do {
                return .success(try await store.modify(request, actor: "alice"))
            } catch {
                return .failure(error)
            }
        }

        mutating func run(store: PostgresStore, zone: ZoneID, operations: Int) async throws -> Outcome {
            var outcome = Outcome()
            outcome.zone = zone
            var live: [String: String] = [:]  // own record → its tag
            var created = 0
            var done = 0
            while done < operations {
                let roll = random.next(below: 100)
                if roll < 12 {
                    // Race the others on a shared record, with the tag read just now.
                    let name = hot[random.next(below: hot.count)]
                    let current = try await store.records([name], in: zone, actor: "alice").first
                    let body = "w\(index) op \(done)"
                    switch await Self.attempt(
                        store,
                        ModifyRequest(
                            zone: zone,
                            saves: [
                                RecordSave(recordName: name, recordType: .note, name: "\(name).md", body: body, changeTag: current?.changeTag)
                            ]))
                    {
                    case .success(let result):
                        outcome.hotAcknowledged.append(HotSave(name: name, body: body, tag: result.saved[0].changeTag))
                        outcome.acknowledgedBatches += 1
                    case .failure(let error) where error.code == .serverRecordChanged:
                        outcome.refusedHotSaves += 1
                    case .failure(let error) where error.code == .serviceUnavailable:
                        outcome.timedOut += 1
                    case .failure(let error):
                        throw error
                    }
                    done += 1
                    continue
                }
                // A batch of one to three changes of its own records.
                var saves: [RecordSave] = []
                var deletes: [RecordDelete] = []
                var touched = Set<String>()
                for _ in 0...random.next(below: 3) where done < operations {
                    done += 1
                    let candidates = live.keys.filter { !touched.contains($0) }.sorted()
                    let pick = random.next(below: 100)
                    if candidates.isEmpty || pick < 50 {
                        created += 1
                        let name = "w\(index)-\(created)"
                        touched.insert(name)
                        saves.append(RecordSave(recordName: name, recordType: .note, name: "\(name).md", body: "\(name) v1"))
                    } else if pick < 85 {
                        let name = candidates[random.next(below: candidates.count)]
                        touched.insert(name)
                        saves.append(RecordSave(recordName: name, recordType: .note, name: "\(name).md", body: "\(name) op \(done)", changeTag: live[name]))
                    } else {
                        let name = candidates[random.next(below: candidates.count)]
                        touched.insert(name)
                        deletes.append(RecordDelete(recordName: name, changeTag: live[name]))
                    }
                }
                let result: ModifyResult
                switch await Self.attempt(store, ModifyRequest(zone: zone, saves: saves, deletes: deletes)) {
                case .success(let answer):
                    result = answer
                case .failure(let error) where error.code == .serviceUnavailable:
                    outcome.timedOut += 1
                    continue
                case .failure(let error):
                    throw error
                }
                outcome.acknowledgedBatches += 1
                let sent = Dictionary(uniqueKeysWithValues: saves.map { ($0.recordName, $0.body ?? "") })
                for record in result.saved {
                    live[record.recordName] = record.changeTag
                    outcome.owned[record.recordName] = .saved(body: sent[record.recordName] ?? "", tag: record.changeTag)
                }
                for name in result.deleted {
                    live[name] = nil
                    outcome.owned[name] = .deleted
                }
            }
            return outcome
        }
    }

    /// One reader following the database's change token and paging each zone it
    /// reports by the zone's token, checking as it goes.
    struct Reader {
        struct Outcome: Sendable {
            var state: [ZoneID: [String: String]] = [:]
            var problems: [String] = []
            var pages = 0
            var changesSeen = 0
        }

        var random: SplitMix64
        init(seed: UInt64) { random = SplitMix64(seed: seed) }

        mutating func run(stores: [PostgresStore], zones: [ZoneID], until writersDone: Flag) async throws -> Outcome {
            var outcome = Outcome()
            var seen = Set<String>()
            var newest: [ZoneID: Int64] = [:]
            var tokens: [ZoneID: String] = [:]
            var databaseToken: String?
            while true {
                let finished = writersDone.isSet
                let changes = try await stores[random.next(below: stores.count)].databaseChanges(scope: .private, since: databaseToken, actor: "alice")
                for zone in changes.changedZones where zones.contains(zone) {
                    while true {
                        let store = stores[random.next(below: stores.count)]
                        let page = try await store.zoneChanges(zone, since: tokens[zone], limit: 1 + random.next(below: 12), actor: "alice")
                        outcome.pages += 1
                        for name in page.deleted { outcome.state[zone, default: [:]][name] = nil }
                        for record in page.records {
                            outcome.changesSeen += 1
                            let key = "\(zone.name)/\(record.recordName)@\(record.changeTag)"
                            if !seen.insert(key).inserted { outcome.problems.append("\(key) seen twice") }
                            let number = ConcurrentWritersTests.number(record.changeTag)
                            if number <= newest[zone, default: -1] { outcome.problems.append("\(key) came after change \(newest[zone, default: -1])") }
                            newest[zone] = max(newest[zone, default: -1], number)
                            outcome.state[zone, default: [:]][record.recordName] = record.changeTag
                        }
                        tokens[zone] = page.changeToken
                        if !page.moreComing { break }
                    }
                }
                databaseToken = changes.changeToken
                // Done once a read after the writers finished says no zone changed since
                // the last one: every acknowledged write was committed before it.
                if finished && changes.changedZones.isEmpty { return outcome }
                // Caught up: poll again shortly (the writers are still at it).
                if changes.changedZones.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            }
        }
    }
}

/// A PostgreSQL pool running for as long as the value lives (as notesd's pool service).
final class RunningPool: Sendable {
    let database: PostgresDatabase
    private let running: Task<Void, Never>

    init(url: String, maximumConnections: Int = 6) throws {
        let database = PostgresDatabase(try PostgresLocation(url: url), maximumConnections: maximumConnections, logger: Logger(label: "test.postgres"))
        self.database = database
        running = Task { await database.run() }
    }

    deinit { running.cancel() }
}

/// A small seeded generator (SplitMix64): the same seed, the same choices.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
