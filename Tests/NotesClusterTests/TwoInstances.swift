#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Synchronization
import Testing

/// Two real notesd processes on one fresh PostgreSQL database of the test process's
/// throwaway cluster, each with its own data folder, socket and TCP port, as two
/// instances behind a load balancer would run.
struct TwoInstances {
    let url: String
    let a: DaemonProcess
    let b: DaemonProcess

    var database: String { PostgresCluster.databaseName(of: url) }

    /// Starts both at once (so that they race to migrate the schema and to make the
    /// admin account). `urlA` replaces A's database URL (another role, say).
    static func start(urlA: ((String) -> String)? = nil) async throws -> TwoInstances {
        let url = try PostgresCluster.shared().createDatabase()
        let aURL = urlA?(url) ?? url
        async let a = DaemonProcess.started(tcp: true, arguments: ["--database", aURL])
        async let b = DaemonProcess.started(tcp: true, arguments: ["--database", url])
        return TwoInstances(url: url, a: try await a, b: try await b)
    }

    /// An account made through A; clients acting as it on A and on B.
    func account(_ name: String) async throws -> (onA: NotesClient, onB: NotesClient) {
        let issued = try await a.client().createAccount(name: name, email: "\(name)@example.com")
        return (a.client(token: issued.token), b.client(token: issued.token))
    }

    /// SQL on the shared database.
    @discardableResult
    func psql(_ sql: String) throws -> String {
        try PostgresCluster.shared().psql(sql, database: database)
    }

    /// The backend of `daemon`'s listening connection (its application_name carries
    /// notesd's process id), if it is connected.
    func listenerBackend(of daemon: DaemonProcess) throws -> Int? {
        let pid = daemon.process.processIdentifier
        return Int(
            try psql("SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'notesd-listen/%-\(pid)-%' AND datname = '\(database)'")
                .split(separator: "\n").first ?? "")
    }
}

/// The events an account's stream delivers, each with the moment it arrived.
final class EventLog: Sendable {
    struct Entry: Sendable {
        let at: ContinuousClock.Instant
        let event: NotesClient.StreamEvent
    }

    private final class Box: Sendable {
        let entries = Mutex<[Entry]>([])
        let ended = Mutex<String?>(nil)
    }

    private let box = Box()
    private let task: Task<Void, Never>

    init(_ client: NotesClient) {
        let box = box
        task = Task {
            do {
                for try await event in client.events() {
                    box.entries.withLock { $0.append(Entry(at: .now, event: event)) }
                }
                box.ended.withLock { $0 = "the stream ended" }
            } catch {
                box.ended.withLock { $0 = "\(error)" }
            }
        }
    }

    deinit { task.cancel() }

    var count: Int { box.entries.withLock { $0.count } }
    var entries: [Entry] { box.entries.withLock { $0 } }

    /// The first entry from `index` on that `matches`, waiting for it up to `timeout`.
    @discardableResult
    func wait(from index: Int = 0, timeout: Duration = .seconds(60), _ matches: (NotesClient.StreamEvent) -> Bool) async throws -> (index: Int, entry: Entry) {
        let deadline = ContinuousClock.now + timeout
        while true {
            let found = box.entries.withLock { entries -> (Int, Entry)? in
                guard index < entries.count else { return nil }
                return entries[index...].enumerated().first { matches($0.element.event) }.map { (index + $0.offset, $0.element) }
            }
            if let found { return found }
            if let ended = box.ended.withLock({ $0 }) { throw ClusterTestError("the event stream ended while waiting: \(ended)") }
            guard ContinuousClock.now < deadline else { throw ClusterTestError("no matching event within \(timeout); events: \(entries.map(\.event))") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    func waitUntilReady() async throws {
        try await wait { $0 == .ready }
    }
}

struct ClusterTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(_ timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

extension NotesClient.StreamEvent {
    /// A change notice for `zone` (or, with `zone` nil, one that asks to fetch everything).
    func isChange(of zone: ZoneID?, scope: DatabaseScope? = nil) -> Bool {
        guard case .change(let notice) = self else { return false }
        return notice.zone == zone && (scope == nil || notice.scope == scope)
    }
}

extension Duration {
    var milliseconds: Double { Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15 }
}

/// The value below which `fraction` of `values` lie (nearest rank).
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank - 1, 0), sorted.count - 1)]
}

/// A flag set once, read from any task.
final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
