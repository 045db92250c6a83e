public import NotesClient
public import NotesModel

/// What the sync engine asks of notesd. `NotesClient` answers over HTTP; the simulation
/// test answers in-process from a real store, with no sockets, so that a run is decided
/// by its seed alone.
public protocol NotesService: Sendable {
    func zones(scope: DatabaseScope) async throws(NotesError) -> [Zone]
    func createZone(named name: String) async throws(NotesError) -> Zone
    func deleteZone(_ zone: ZoneID) async throws(NotesError)
    func modify(_ request: ModifyRequest) async throws(NotesError) -> ModifyResult
    func records(_ names: [String], in zone: ZoneID) async throws(NotesError) -> [Record]
    func zoneChanges(_ zone: ZoneID, since token: String?, limit: Int?) async throws(NotesError) -> ZoneChanges
    func versions(of recordName: String, in zone: ZoneID) async throws(NotesError) -> [RecordVersion]
    func trash(in zone: ZoneID) async throws(NotesError) -> [TrashedRecord]
    func restoreFromTrash(_ recordName: String, in zone: ZoneID, parent: String??, name: String?) async throws(NotesError) -> [Record]
    func shares() async throws(NotesError) -> [Share]
    /// The daemon's notices, until the connection ends.
    func events() -> AsyncThrowingStream<NotesClient.StreamEvent, any Error>
}

extension NotesClient: NotesService {}
