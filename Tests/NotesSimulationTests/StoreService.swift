import NotesClient
import NotesModel
@testable import NotesMount
import Synchronization

/// notesd as the sync engine sees it, answered in-process by the real store for one
/// account: no HTTP, no sockets, no threads of its own. `online` false answers every
/// call as an unreachable daemon does.
final class StoreService: NotesService {
    let store: any RecordStore
    let actor: String
    private let reachable = Mutex(true)

    init(store: any RecordStore, actor: String) {
        self.store = store
        self.actor = actor
    }

    var online: Bool {
        get { reachable.withLock { $0 } }
        set { reachable.withLock { $0 = newValue } }
    }

    private func reach() throws(NotesError) {
        guard online else { throw NotesError(.serviceUnavailable, "notesd is not reachable (simulated)") }
    }

    func zones(scope: DatabaseScope) async throws(NotesError) -> [Zone] {
        try reach()
        return try await store.zones(scope: scope, actor: actor)
    }

    func createZone(named name: String) async throws(NotesError) -> Zone {
        try reach()
        return try await store.createZone(ZoneID(owner: actor, name: name), actor: actor)
    }

    func deleteZone(_ zone: ZoneID) async throws(NotesError) {
        try reach()
        try await store.deleteZone(zone, actor: actor)
    }

    func modify(_ request: ModifyRequest) async throws(NotesError) -> ModifyResult {
        try reach()
        return try await store.modify(request, actor: actor)
    }

    func records(_ names: [String], in zone: ZoneID) async throws(NotesError) -> [Record] {
        try reach()
        return try await store.records(names, in: zone, actor: actor)
    }

    func zoneChanges(_ zone: ZoneID, since token: String?, limit: Int?) async throws(NotesError) -> ZoneChanges {
        try reach()
        return try await store.zoneChanges(zone, since: token, limit: limit ?? Limits.defaultChangesPage, actor: actor)
    }

    func versions(of recordName: String, in zone: ZoneID) async throws(NotesError) -> [RecordVersion] {
        try reach()
        return try await store.versions(of: recordName, in: zone, actor: actor)
    }

    func trash(in zone: ZoneID) async throws(NotesError) -> [TrashedRecord] {
        try reach()
        return try await store.trash(in: zone, actor: actor)
    }

    func restoreFromTrash(_ recordName: String, in zone: ZoneID, parent: String??, name: String?) async throws(NotesError) -> [Record] {
        try reach()
        return try await store.restoreFromTrash(recordName, in: zone, parent: parent, name: name, actor: actor)
    }

    func shares() async throws(NotesError) -> [Share] {
        try reach()
        return try await store.shares(actor: actor)
    }

    /// The simulation decides when each mount fetches: no notices.
    func events() -> AsyncThrowingStream<NotesClient.StreamEvent, any Error> {
        AsyncThrowingStream { $0.finish() }
    }
}
