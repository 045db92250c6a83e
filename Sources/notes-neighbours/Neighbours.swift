#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import NotesClient
import NotesModel

/// `notes-neighbours`: what one account's heavy use does to everyone else on the same
/// notesd. One account (mallory) runs each pattern that once stopped, stalled or swelled
/// notesd, one at a time and then all together, while another (alice) saves a small note
/// every 50 ms and a visitor reads a public page every 50 ms. Each phase prints the
/// victims' p50/p99 against their idle figures, their errors, notesd's peak memory, and
/// what the attacker got done and was refused.
@main
struct Neighbours: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notes-neighbours",
        abstract: "Measure what one account's heavy use does to other accounts' latency on one notesd.",
        discussion: """
            Starts its own notesd (next to this binary, or --notesd) in a temporary folder, on
            the embedded SQLite store or on --database (a throwaway PostgreSQL database).
            Build in release mode first for figures; the test suite runs --short on a debug
            build with generous bounds.

            Examples:
              swift build -c release && .build/release/notes-neighbours
              .build/release/notes-neighbours --database postgres://bench@%2Ftmp%2Fpg/bench --seconds 20
              .build/debug/notes-neighbours --short --json
            """)

    /// Swift concurrency on NIO's event loops, as notesd runs it.
    static func main() async {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await main(nil)
    }

    @Option(help: "Seconds each phase runs.")
    var seconds: Double = 10

    @Flag(help: "A short run (2 s a phase, smaller patterns): what the test suite runs.")
    var short = false

    @Flag(help: "Print the phases as JSON lines instead of a table.")
    var json = false

    @Option(help: "Path of the notesd binary (default: next to this one).")
    var notesd: String?

    @Option(help: "Run notesd on this PostgreSQL database (postgres://…; a throwaway one).")
    var database: String?

    @Option(help: "Only these patterns (comma-separated: lookup, title, passwords, batches, guesses, restore, all).")
    var patterns: String?

    @Option(help: "Print each victim request slower than this many milliseconds, with its second in the phase (to stderr).")
    var traceSlow: Double?

    @Flag(
        help: """
            Run the attacking account's requests in this process, beside the victims', instead of \
            in a process of its own in the idle scheduling class (as if from another machine).
            """)
    var attackerInProcess = false

    @Option(help: .hidden)
    var attackPlan: String?

    func run() async throws {
        if let attackPlan {
            try await Attacker.runAlone(plan: attackPlan)
            return
        }
        let binary = notesd ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("notesd").path
        let daemon = try await Daemon.start(binary: binary, database: database)
        defer { daemon.stop() }
        let world = try await World.make(daemon, short: short)
        if let database {
            try await world.warmUp()
            try analyze(database)
        }
        try await world.settle()
        let duration = short ? 2 : seconds
        let chosen = patterns.map { Set($0.split(separator: ",").map(String.init)) }
        if !json {
            print("notes-neighbours: notesd on \(database == nil ? "SQLite" : "PostgreSQL"), \(duration) s a phase\(short ? " (short)" : "")")
            print(Phase.header)
        }
        let inProcess = attackerInProcess
        let idle = try await Phase.measure("idle", world: world, daemon: daemon, seconds: duration, idle: nil, attack: [], inProcess: inProcess, traceSlow: traceSlow)
        report(idle)
        for pattern in Pattern.allCases where chosen?.contains(pattern.rawValue) ?? true {
            let attack = pattern == .all ? Pattern.allCases.filter { $0 != .all } : [pattern]
            report(
                try await Phase.measure(pattern.rawValue, world: world, daemon: daemon, seconds: duration, idle: idle, attack: attack, inProcess: inProcess, traceSlow: traceSlow))
        }
    }

    /// Vacuums the rows the set-up deleted (the trashed folder's 10,000) and gathers
    /// PostgreSQL's statistics on the tables `World.warmUp` filled, as autovacuum does
    /// within a minute on a server in use: with no statistics, plans made for empty tables
    /// (a scan of every content for each one a batch replaces, an index on the zone alone
    /// to find a record by name) stay while the tables grow, and autovacuum's own pass
    /// would land in the first phase; the phases would measure a database's first minute
    /// instead of its life.
    func analyze(_ database: String) throws {
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        psql.arguments = [database, "--quiet", "--command", "VACUUM ANALYZE"]
        try psql.run()
        psql.waitUntilExit()
        guard psql.terminationStatus == 0 else {
            throw NotesError(.serviceUnavailable, "psql could not run VACUUM ANALYZE on \(database) (exit \(psql.terminationStatus)); install postgresql-client.")
        }
    }

    func report(_ phase: Phase.Outcome) {
        if json {
            print(String(decoding: (try? JSONEncoder().encode(phase)) ?? Data(), as: UTF8.self))
        } else {
            print(phase.row)
        }
    }
}

/// The patterns one account runs, each as fast as notesd lets it.
enum Pattern: String, CaseIterable, Sendable {
    /// A lookup naming a 4 MiB note 2,000 times, two at a time.
    case lookup
    /// A public folder whose note's title is `# ` and 65,000 `[`, saved anew and its
    /// folder page opened, again and again.
    case title
    /// A link password set 8 times at once, again and again.
    case passwords
    /// Batches of 400 notes of 40 KB, 4 at once.
    case batches
    /// 200 wrong link passwords at once from one address.
    case guesses
    /// A folder of 10,000 notes restored from the trash, then deleted again.
    case restore
    case all
}

/// notesd in a folder of its own, on the socket and on TCP.
final class Daemon: Sendable {
    let process: Process
    let folder: String
    let port: Int
    let socket: String

    private init(process: Process, folder: String, port: Int, socket: String) {
        self.process = process
        self.folder = folder
        self.port = port
        self.socket = socket
    }

    static func start(binary: String, database: String?) async throws -> Daemon {
        let folder = "/tmp/notes-neighbours-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let socket = "\(folder)/notesd.sock"
        let port = Int.random(in: 20_000...30_000)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments =
            ["--data-dir", folder, "--socket", socket, "--listen", "127.0.0.1:\(port)", "--log-level", "error"]
            + (database.map { ["--database", $0] } ?? [])
        try process.run()
        let daemon = Daemon(process: process, folder: folder, port: port, socket: socket)
        for _ in 0..<600 {
            if (try? await daemon.admin().whoami()) != nil { return daemon }
            try await Task.sleep(for: .milliseconds(50))
        }
        daemon.stop()
        throw NotesError(.serviceUnavailable, "notesd did not start; run it by hand with the same options to see why.")
    }

    func admin() -> NotesClient { NotesClient(endpoint: .unixSocket(socket), timeoutSeconds: 120) }
    /// Each person's requests on connections of their own, as from a machine of their own.
    func tcp(token: String?, pool: String, connections: Int = 8) -> NotesClient {
        NotesClient(endpoint: .http("http://127.0.0.1:\(port)"), token: token, timeoutSeconds: 120, pool: NotesClient.Pool(name: pool, connections: connections))
    }

    /// notesd's most resident memory since the last `resetPeak`, in MB.
    var peakMegabytes: Double {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? .nan) / 1024
    }

    /// Starts the peak over from the memory held now (`clear_refs`, Linux 4.0 on).
    func resetPeak() {
        try? "5".write(toFile: "/proc/\(process.processIdentifier)/clear_refs", atomically: false, encoding: .utf8)
    }

    var isRunning: Bool { process.isRunning }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// The accounts, notes and links the phases use.
struct World: Sendable {
    let alice: NotesClient
    let mallory: NotesClient
    /// The anonymous victim, over TCP.
    let visitor: NotesClient
    let alicePage: String
    let aliceZone: ZoneID
    let malloryZone: ZoneID
    /// What mallory's patterns need, for this process or another.
    let plan: Attacker.Plan
    let short: Bool

    static func make(_ daemon: Daemon, short: Bool) async throws -> World {
        let admin = daemon.admin()
        let alice = daemon.tcp(token: try await admin.createAccount(name: "alice").token, pool: "alice")
        let malloryToken = try await admin.createAccount(name: "mallory").token
        let mallory = daemon.tcp(token: malloryToken, pool: "mallory", connections: 32)
        let aliceZone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        let malloryZone = ZoneID(owner: "mallory", name: ZoneID.defaultZoneName)
        // alice's public page, which the visitor reads
        _ = try await alice.modify(
            ModifyRequest(
                zone: aliceZone,
                saves: [
                    RecordSave(recordName: "page", recordType: .note, name: "page.md", body: "# Minutes\n\n" + String(repeating: "A line of the minutes.\n", count: 200)),
                    RecordSave(recordName: "mine", recordType: .note, name: "mine.md", body: "0"),
                ]))
        let alicePage = try await alice.createShare(NewShare(zone: aliceZone, rootRecordName: "page", publicPermission: .readOnly)).urlToken
        // mallory's large note, public folder with the bracket title, and a link with a password
        let large = String(repeating: "0123456789abcdef", count: (short ? 1 : 4) << 16)
        _ = try await mallory.modify(
            ModifyRequest(
                zone: malloryZone,
                saves: [
                    RecordSave(recordName: "large", recordType: .note, name: "large.md", body: large),
                    RecordSave(recordName: "folder", recordType: .folder, name: "folder"),
                    RecordSave(recordName: "brackets", recordType: .note, name: "brackets.md", parent: "folder", body: "# " + String(repeating: "[", count: 65_000)),
                    RecordSave(recordName: "locked", recordType: .note, name: "locked.md", body: "secret"),
                ]))
        let folder = try await mallory.createShare(NewShare(zone: malloryZone, rootRecordName: "folder", publicPermission: .readOnly))
        let locked = try await mallory.createShare(NewShare(zone: malloryZone, rootRecordName: "locked", publicPermission: .readOnly))
        _ = try await mallory.updateShare(id: locked.id, ShareUpdate(publicPassword: "the right one"))
        // mallory's trashed folder, which the restore pattern brings back and deletes again
        let archive = Attacker.Plan.archive(short ? 1_000 : 10_000)
        _ = try await mallory.modify(ModifyRequest(zone: malloryZone, saves: [RecordSave(recordName: "archive", recordType: .folder, name: "archive")]))
        let note = String(repeating: "An archived line.\n", count: 56)
        for start in stride(from: 0, to: archive.count, by: Limits.maxBatchItems) {
            let names = archive[start..<min(start + Limits.maxBatchItems, archive.count)]
            _ = try await mallory.modify(
                ModifyRequest(zone: malloryZone, saves: names.map { RecordSave(recordName: $0, recordType: .note, name: "\($0).md", parent: "archive", body: note) }))
        }
        try await World.trash(archive + ["archive"], of: mallory, in: malloryZone)
        let visitor = daemon.tcp(token: nil, pool: "visitor")
        // The page rendered once before the idle phase: its first view is a render, which
        // would make every later phase's p99 look small against it.
        _ = try await visitor.raw("GET", "/s/\(alicePage)", body: nil)
        let plan = Attacker.Plan(
            socket: daemon.socket, port: daemon.port, token: malloryToken, zoneOwner: malloryZone.owner, zoneName: malloryZone.name,
            page: folder.urlToken, shareID: locked.id, passwordLink: locked.urlToken, archiveCount: archive.count, short: short, patterns: [], until: 0)
        return World(alice: alice, mallory: mallory, visitor: visitor, alicePage: alicePage, aliceZone: aliceZone, malloryZone: malloryZone, plan: plan, short: short)
    }

    /// Deletes `names` (children before their folders) 100 at a time: the restore
    /// pattern measures the restore; batches of 400 are the batches pattern's.
    static func trash(_ names: [String], of client: NotesClient, in zone: ZoneID) async throws {
        for start in stride(from: 0, to: names.count, by: RestoreRules.recordsPerTurn) {
            let batch = names[start..<min(start + RestoreRules.recordsPerTurn, names.count)]
            _ = try await client.modify(ModifyRequest(zone: zone, deletes: batch.map { RecordDelete(recordName: $0) }))
        }
    }
}

extension World {
    /// Two batches of 400 notes of 40 KB saved and saved again, under names no pattern
    /// uses: the tables then hold records, versions and contents as on a server in use.
    func warmUp() async throws {
        let text = String(repeating: "w", count: short ? 4_000 : 40_000)
        for lane in 0..<2 {
            let names = (0..<400).map { "warm-\(lane)-\($0)" }
            let first = try await mallory.modify(
                ModifyRequest(zone: malloryZone, saves: names.map { RecordSave(recordName: $0, recordType: .note, name: "\($0).md", body: text) }))
            _ = try await mallory.modify(
                ModifyRequest(
                    zone: malloryZone,
                    saves: first.saved.map { RecordSave(recordName: $0.recordName, recordType: .note, name: $0.name, body: text + "2", changeTag: $0.changeTag) }))
        }
    }
}

extension World {
    /// A few of alice's saves, not measured, after the set-up's 30,000 writes: the first
    /// save after them pays once for the log they left (SQLite starts its write-ahead log
    /// over), which would otherwise be the idle phase's p99 and every ratio's baseline.
    func settle() async throws {
        var tag = try await alice.records(["mine"], in: aliceZone).first?.changeTag
        for round in 0..<5 {
            let saved = try await alice.modify(
                ModifyRequest(zone: aliceZone, saves: [RecordSave(recordName: "mine", recordType: .note, name: "mine.md", body: "settle \(round)", changeTag: tag)]))
            tag = saved.saved.first?.changeTag
        }
    }
}

/// Latencies and errors gathered by one loop.
final class Tally: @unchecked Sendable {
    // (Guarded by `lock`: loops on several threads add to one tally.)
    private let lock = NSLock()
    private var latencies: [Double] = []
    private var errors: [String: Int] = [:]
    private var done = 0
    private let trace: Trace?

    /// Which requests to print as they end (`--trace-slow`).
    struct Trace {
        var label: String
        var overMilliseconds: Double
        var start: ContinuousClock.Instant
    }

    init(trace: Trace? = nil) {
        self.trace = trace
    }

    func record(_ milliseconds: Double) {
        if let trace, milliseconds > trace.overMilliseconds {
            let second = (ContinuousClock.now - trace.start) / .seconds(1)
            // (The wall-clock time too, to find the request in a server log or a profile.)
            let line = String(format: "slow: %@ %.1f ms at %.3f s (%.3f)\n", trace.label, milliseconds, second, Date().timeIntervalSince1970)
            FileHandle.standardError.write(Data(line.utf8))
        }
        lock.withLock {
            latencies.append(milliseconds)
            done += 1
        }
    }

    func fail(_ what: String) { lock.withLock { errors[what, default: 0] += 1 } }

    var summary: (p50: Double, p99: Double, count: Int, errors: [String: Int]) {
        lock.withLock {
            let sorted = latencies.sorted()
            func at(_ q: Double) -> Double { sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] }
            return (at(0.5), at(0.99), done, errors)
        }
    }
}

enum Phase {
    struct Outcome: Codable {
        var phase: String
        var saveP50: Double
        var saveP99: Double
        var pageP50: Double
        var pageP99: Double
        /// The victims' p99 against their idle p99 (1 in the idle phase).
        var saveRatio: Double
        var pageRatio: Double
        var victimErrors: Int
        var victimErrorKinds: [String: Int]
        var peakMegabytes: Double
        var attackerDone: Int
        var attackerRefused: Int
        var notesdAlive: Bool

        var row: String {
            func ms(_ value: Double) -> String { String(format: "%7.1f", value) }
            let kinds = victimErrorKinds.isEmpty ? "" : " \(victimErrorKinds)"
            return "\(phase.padding(toLength: 10, withPad: " ", startingAt: 0)) \(ms(saveP50)) \(ms(saveP99)) \(String(format: "%5.1fx", saveRatio))"
                + "  \(ms(pageP50)) \(ms(pageP99)) \(String(format: "%5.1fx", pageRatio))  \(String(format: "%6d", victimErrors))"
                + "  \(String(format: "%7.0f", peakMegabytes))  \(String(format: "%6d", attackerDone)) \(String(format: "%6d", attackerRefused))"
                + (notesdAlive ? "" : "  NOTESD DIED") + kinds
        }
    }

    static let header = """
        phase      save p50    p99  ×idle   page p50    p99  ×idle  errors  peak MB    done    429
        """

    static func measure(
        _ name: String, world: World, daemon: Daemon, seconds: Double, idle: Outcome?, attack: [Pattern], inProcess: Bool, traceSlow: Double? = nil
    ) async throws -> Outcome {
        daemon.resetPeak()
        let start = ContinuousClock.now
        let saves = Tally(trace: traceSlow.map { Tally.Trace(label: "\(name) save", overMilliseconds: $0, start: start) })
        let pages = Tally(trace: traceSlow.map { Tally.Trace(label: "\(name) page", overMilliseconds: $0, start: start) })
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        var plan = world.plan
        plan.patterns = attack.map(\.rawValue)
        plan.until = Date().timeIntervalSince1970 + seconds
        let attacking = plan
        let attack = try await withThrowingTaskGroup(of: Attacker.Outcome?.self) { group in
            group.addTask {
                await victimSaves(world, saves, until: deadline)
                return nil
            }
            group.addTask {
                await victimPage(world, pages, until: deadline)
                return nil
            }
            if !attack.isEmpty {
                group.addTask { inProcess ? await Attacker(attacking).run() : try await Attacker.runElsewhere(attacking) }
            }
            var outcome = Attacker.Outcome(done: 0, errors: [:])
            for try await finished in group {
                if let finished { outcome = finished }
            }
            return outcome
        }
        let save = saves.summary
        let page = pages.summary
        let refused = attack.errors.filter { ["requestRateLimited", "serviceUnavailable"].contains($0.key) }.values.reduce(0, +)
        return Outcome(
            phase: name, saveP50: save.p50, saveP99: save.p99, pageP50: page.p50, pageP99: page.p99,
            saveRatio: idle.map { save.p99 / $0.saveP99 } ?? 1, pageRatio: idle.map { page.p99 / $0.pageP99 } ?? 1,
            victimErrors: save.errors.values.reduce(0, +) + page.errors.values.reduce(0, +),
            victimErrorKinds: save.errors.merging(page.errors, uniquingKeysWith: +), peakMegabytes: daemon.peakMegabytes,
            attackerDone: attack.done, attackerRefused: refused, notesdAlive: daemon.isRunning)
    }

    static func timed(_ tally: Tally, _ body: () async throws -> Void) async {
        let start = ContinuousClock.now
        do {
            try await body()
            let elapsed = ContinuousClock.now - start
            tally.record(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
        } catch let error as NotesError {
            tally.fail("\(error.code)")
        } catch {
            tally.fail("\(type(of: error))")
        }
    }

    /// alice saves her note every 50 ms (each save waits for the previous one).
    static func victimSaves(_ world: World, _ tally: Tally, until deadline: ContinuousClock.Instant) async {
        var tag = try? await world.alice.records(["mine"], in: world.aliceZone).first?.changeTag
        var counter = 0
        while ContinuousClock.now < deadline {
            let next = ContinuousClock.now + .milliseconds(50)
            counter += 1
            await timed(tally) {
                let saved = try await world.alice.modify(
                    ModifyRequest(zone: world.aliceZone, saves: [RecordSave(recordName: "mine", recordType: .note, name: "mine.md", body: "\(counter)", changeTag: tag)]))
                tag = saved.saved.first?.changeTag
            }
            try? await Task.sleep(until: next)
        }
    }

    /// A visitor reads alice's public page every 50 ms.
    static func victimPage(_ world: World, _ tally: Tally, until deadline: ContinuousClock.Instant) async {
        while ContinuousClock.now < deadline {
            let next = ContinuousClock.now + .milliseconds(50)
            await timed(tally) {
                let answer = try await world.visitor.raw("GET", "/s/\(world.alicePage)", body: nil)
                guard answer.status == 200 else { throw NotesError(.internalError, "page answered \(answer.status)") }
            }
            try? await Task.sleep(until: next)
        }
    }
}

/// mallory and an anonymous client on her side, running patterns: in this process, or
/// in one of its own in the idle scheduling class (`runElsewhere`), so that the benchmark's own work of
/// making her requests does not take the CPU from notesd as it would not from a server
/// she reached over the network.
struct Attacker: Sendable {
    /// What a process needs to attack: how to reach notesd, mallory's token, her notes
    /// and links, the patterns and when to stop.
    struct Plan: Codable, Sendable {
        var socket: String
        var port: Int
        var token: String
        var zoneOwner: String
        var zoneName: String
        var page: String
        var shareID: String
        var passwordLink: String
        /// Notes in mallory's trashed folder `archive` (`archive(_:)` names them).
        var archiveCount: Int
        var short: Bool
        var patterns: [String]
        /// Seconds since 1970 at which the patterns stop.
        var until: Double

        static func archive(_ count: Int) -> [String] { (0..<count).map { "archived-\($0)" } }
    }

    struct Outcome: Codable, Sendable {
        var done: Int
        var errors: [String: Int]
    }

    let plan: Plan
    let mallory: NotesClient
    /// Anonymous on the socket: another address than the victim's, as two visitors.
    let anonymous: NotesClient
    var zone: ZoneID { ZoneID(owner: plan.zoneOwner, name: plan.zoneName) }
    var page: String { plan.page }
    var shareID: String { plan.shareID }
    var passwordLink: String { plan.passwordLink }
    var archive: [String] { Plan.archive(plan.archiveCount) }
    var short: Bool { plan.short }

    init(_ plan: Plan) {
        self.plan = plan
        mallory = NotesClient(
            endpoint: .http("http://127.0.0.1:\(plan.port)"), token: plan.token, timeoutSeconds: 120, pool: NotesClient.Pool(name: "mallory", connections: 32))
        anonymous = NotesClient(endpoint: .unixSocket(plan.socket), timeoutSeconds: 120, pool: NotesClient.Pool(name: "anonymous", connections: 200))
    }

    /// Every lane of every pattern of the plan until its end.
    func run() async -> Outcome {
        let tally = Tally()
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, plan.until - Date().timeIntervalSince1970) * 1000))
        await withTaskGroup(of: Void.self) { group in
            for pattern in plan.patterns.compactMap(Pattern.init(rawValue:)) {
                for lane in 0..<Self.lanes(pattern) {
                    group.addTask { await run(pattern, lane: lane, tally: tally, until: deadline) }
                }
            }
        }
        let summary = tally.summary
        return Outcome(done: summary.count, errors: summary.errors)
    }

    /// Runs the plan in a new process of this binary (`runAlone`) and reads its outcome.
    static func runElsewhere(_ plan: Plan) async throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = ["--attack-plan", String(decoding: try JSONEncoder().encode(plan), as: UTF8.self)]
        let output = Pipe()
        process.standardOutput = output
        let ended = AsyncStream<Void> { continuation in
            process.terminationHandler = { _ in continuation.finish() }
        }
        try process.run()
        // (Its outcome is one short line: it fits the pipe, so reading after the end
        // never blocks a thread of the event loops the victims' requests run on.)
        for await _ in ended {}
        let data = output.fileHandleForReading.readDataToEndOfFile()
        guard process.terminationStatus == 0, let outcome = try? JSONDecoder().decode(Outcome.self, from: data) else {
            throw NotesError(.internalError, "The attacking process ended with status \(process.terminationStatus) and no outcome.")
        }
        return outcome
    }

    /// The attacking process: gives way to every other, runs the plan, prints the outcome.
    static func runAlone(plan text: String) async throws {
        let plan = try JSONDecoder().decode(Plan.self, from: Data(text.utf8))
        yieldEveryThread()
        let attacker = Attacker(plan)
        yieldEveryThread()
        let outcome = await attacker.run()
        print(String(decoding: try JSONEncoder().encode(outcome), as: UTF8.self))
    }

    /// Puts every thread of this process in the idle scheduling class, which new threads
    /// inherit. A nice value would not hold: on Linux it belongs to each thread, and
    /// libdispatch sets its own on its threads (user-initiated work ran at -2 here, above
    /// notesd, encoding mallory's batches).
    static func yieldEveryThread() {
        // (`SCHED_IDLE` from <linux/sched.h>, which Glibc's module does not carry.)
        let idle: Int32 = 5
        var parameters = sched_param(sched_priority: 0)
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            if let thread = pid_t(entry) { _ = sched_setscheduler(thread, idle, &parameters) }
        }
    }

    static func lanes(_ pattern: Pattern) -> Int {
        switch pattern {
        case .lookup: 2
        case .title, .guesses, .restore: 1
        case .passwords: 8
        case .batches: 4
        case .all: 0
        }
    }

    /// One lane of a pattern, as fast as notesd answers it, and at least one round
    /// however late this process got a core: the tests judge what a round did (a burst
    /// of guesses refused past the limit, a folder restored), and in the idle class
    /// beside stress-ng and the whole suite the attacker once made no round at all
    /// before its phase ended.
    func run(_ pattern: Pattern, lane: Int, tally: Tally, until deadline: ContinuousClock.Instant) async {
        let world = self
        var tags: [String: String] = [:]
        var round = 0
        repeat {
            round += 1
            switch pattern {
            case .lookup:
                await Phase.timed(tally) { _ = try await mallory.records(Array(repeating: "large", count: 2_000), in: world.zone) }
            case .title:
                await Phase.timed(tally) {
                    let current = try await mallory.records(["brackets"], in: world.zone).first?.changeTag
                    _ = try await mallory.modify(
                        ModifyRequest(
                            zone: world.zone,
                            saves: [
                                RecordSave(
                                    recordName: "brackets", recordType: .note, name: "brackets.md", parent: "folder",
                                    body: "# " + String(repeating: "[", count: 65_000) + "\(round)", changeTag: current)
                            ]))
                    _ = try await world.anonymous.raw("GET", "/s/\(world.page)/", body: nil)
                }
            case .passwords:
                await Phase.timed(tally) { _ = try await mallory.updateShare(id: world.shareID, ShareUpdate(publicPassword: "password \(lane) \(round)")) }
            case .batches:
                let names = (0..<400).map { "batch-\(lane)-\($0)" }
                let text = String(repeating: "x", count: world.short ? 4_000 : 40_000)
                await Phase.timed(tally) {
                    let saved = try await mallory.modify(
                        ModifyRequest(
                            zone: world.zone,
                            saves: names.map { RecordSave(recordName: $0, recordType: .note, name: "\($0).md", body: text + "\(round)", changeTag: tags[$0]) }))
                    for record in saved.saved { tags[record.recordName] = record.changeTag }
                }
            case .guesses:
                let burst = round
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<200 {
                        group.addTask {
                            await Phase.timed(tally) {
                                let answer = try await world.anonymous.raw(
                                    "POST", "/s/\(world.passwordLink)", body: Array("password=wrong+\(burst)+\(index)".utf8))
                                if answer.status == 429 { throw NotesError(.requestRateLimited, "refused") }
                            }
                        }
                    }
                }
            case .restore:
                await Phase.timed(tally) {
                    _ = try await mallory.restoreFromTrash("archive", in: world.zone)
                    try await World.trash(world.archive + ["archive"], of: mallory, in: world.zone)
                }
            case .all:
                return
            }
        } while ContinuousClock.now < deadline
    }
}
