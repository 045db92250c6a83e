import Foundation
import NotesModel
import NotesPostgres
import NotesStore
import NotesTestSupport
import Synchronization
import Testing

/// The store's "now", moved by the test: expiries are tested without waiting.
final class ManualClock: Sendable {
    private let current = Mutex(Date())
    var now: Date { current.withLock { $0 } }
    func advance(by seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A backend the conformance suite runs against: every test below runs against each.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres
    var testDescription: String { rawValue }

    /// The store, where its data lives (a file's path, a database's URL), and what must
    /// live as long as the store (PostgreSQL's running pool).
    func makeStore(clock: ManualClock, storage: StoragePolicy = StoragePolicy()) async throws -> (any RecordStore, String, PostgresPool?) {
        switch self {
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notes-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let path = folder.appendingPathComponent("notes.sqlite").path
            return (try SQLiteStore(path: path, clock: { clock.now }, storage: storage), path, nil)
        case .postgres:
            let url = try PostgresCluster.shared().createDatabase()
            let pool = try PostgresPool(url: url)
            try await pool.database.migrate()
            return (PostgresStore(database: pool.database, clock: { clock.now }, storage: storage), url, pool)
        }
    }
}

/// A fresh store with three accounts, and helpers that keep tests short.
struct Fixture {
    let store: any RecordStore
    let backend: Backend
    let location: String
    let pool: PostgresPool?
    let clock = ManualClock()
    static let alice = "alice", bob = "bob", carol = "carol"
    var aliceZone: ZoneID { ZoneID(owner: Self.alice, name: ZoneID.defaultZoneName) }

    init(_ backend: Backend, storage: StoragePolicy = StoragePolicy()) async throws {
        self.backend = backend
        (store, location, pool) = try await backend.makeStore(clock: clock, storage: storage)
        _ = try await store.createAccount(name: Self.alice, email: "alice@example.com", isAdmin: true)
        _ = try await store.createAccount(name: Self.bob, email: "bob@example.com", isAdmin: false)
        _ = try await store.createAccount(name: Self.carol, email: nil, isAdmin: false)
    }

    @discardableResult
    func save(_ saves: [RecordSave], in zone: ZoneID? = nil, as actor: String = alice) async throws -> [Record] {
        try await store.modify(ModifyRequest(zone: zone ?? aliceZone, saves: saves), actor: actor).saved
    }

    @discardableResult
    func note(_ recordName: String, _ name: String, body: String = "text", parent: String? = nil, in zone: ZoneID? = nil, as actor: String = alice) async throws -> Record {
        try await save([RecordSave(recordName: recordName, recordType: .note, name: name, parent: parent, body: body)], in: zone, as: actor)[0]
    }

    @discardableResult
    func folder(_ recordName: String, _ name: String, parent: String? = nil, in zone: ZoneID? = nil) async throws -> Record {
        try await save([RecordSave(recordName: recordName, recordType: .folder, name: name, parent: parent)], in: zone)[0]
    }

    /// Every record of a zone as `actor` sees it.
    func all(_ zone: ZoneID? = nil, as actor: String = alice) async throws -> [String: Record] {
        var result: [String: Record] = [:]
        var token: String?
        while true {
            let page = try await store.zoneChanges(zone ?? aliceZone, since: token, limit: 1000, actor: actor)
            for name in page.deleted { result[name] = nil }
            for record in page.records { result[record.recordName] = record }
            token = page.changeToken
            if !page.moreComing { return result }
        }
    }

    /// Asserts that `body` fails with `code`.
    func expectFailure(_ code: NotesError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected \(code), but it succeeded", sourceLocation: sourceLocation)
        } catch let error as NotesError {
            #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
            #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected NotesError \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    /// Shares `recordName` (or the zone) with `bob` at `permission` and has him accept.
    func shareWithBob(_ recordName: String?, permission: ParticipantPermission, zone: ZoneID? = nil) async throws -> Share {
        let share = try await store.createShare(
            NewShare(zone: zone ?? aliceZone, rootRecordName: recordName, participants: [Invitee(name: Self.bob, permission: permission)]),
            actor: Self.alice)
        return try await store.acceptShare(urlToken: share.urlToken, actor: Self.bob)
    }
}
