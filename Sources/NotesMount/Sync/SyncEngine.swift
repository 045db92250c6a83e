import Foundation
public import Logging
import NotesClient
import NotesModel
public import NotesReplica
import Synchronization

/// Keeps the replica and the daemon in step: uploads queued local changes in batches,
/// follows the daemon's change notices, and fetches what others changed.
///
/// Everything it learns from the server goes into the replica first and then into the
/// tree, so the mount keeps working from the replica whenever the daemon is away.
public final class SyncEngine: Sendable {
    let client: any NotesService
    let replica: Replica
    let tree: NoteTree
    let logger: Logger
    private let uploads: AsyncStream<Void>
    private let uploadSignal: AsyncStream<Void>.Continuation
    private let fetches: AsyncStream<Void>
    private let fetchSignal: AsyncStream<Void>.Continuation
    /// Whether the last exchange with the daemon worked.
    let online = Mutex(false)
    /// Changes the daemon refused for a reason that retrying will not fix; skipped until
    /// the mount restarts (logged once).
    let stuck = Mutex<Set<RecordKey>>([])
    /// Counts requests for uploads, so the uploader can tell a burst is still going on.
    let uploadRequests = Mutex<Int>(0)
    /// What the next fetch must look at: `nil` for everything, else the zones named by
    /// the daemon's notices (with their scope).
    let fetchScope = Mutex<[ZoneID: DatabaseScope]?>(nil)
    /// Zones whose next fetch starts from scratch: a refused change was dropped and the
    /// server's state must come back. Kept here, not as a cleared token in the replica,
    /// which a fetch already under way would write over, and written to the replica's
    /// meta as well (`saveRefetches`): a mount killed before the fetch would otherwise
    /// never bring back what it dropped (the simulation found a folder lost that way).
    let refetchZones: Mutex<Set<ZoneID>>

    /// Changes whose name notesd refused and that were queued again behind the others
    /// once (see `settle`): a second refusal names them aside.
    let deferredForName = Mutex<Set<RecordKey>>([])

    /// After notesd failed a whole upload (`internalError`: its database starting up, a
    /// fault of its own), no upload before `until`; the pause doubles up to a minute and
    /// ends with the next upload that works. Nothing was wrong with the changes: they
    /// stay queued, not refused (a database restart once left a note queued until the
    /// mount restarted).
    let serverFault = Mutex<(until: ContinuousClock.Instant, pause: Duration)?>(nil)

    /// Uploads and fetches take turns (see `TurnLock`).
    let turns = TurnLock()

    /// Ends the pause between attempts to reach notesd early (`notesdMayBeBack`).
    let doorbell = Doorbell()

    /// Overlapping edits go into the note between git's conflict markers instead of
    /// into a conflict copy (`notes mount --conflict-markers`).
    let conflictMarkers: Bool

    /// Where changes from notesd are told (`.notes/events`), if anywhere.
    let events: EventLog?

    public init(client: any NotesService, replica: Replica, tree: NoteTree, logger: Logger, conflictMarkers: Bool = false, events: EventLog? = nil) {
        self.events = events
        self.conflictMarkers = conflictMarkers
        self.client = client
        self.replica = replica
        self.tree = tree
        self.logger = logger
        let saved = (try? replica.meta(Self.refetchKey)).flatMap { try? JSONDecoder().decode([ZoneID].self, from: Data($0.utf8)) } ?? []
        refetchZones = Mutex(Set(saved))
        (uploads, uploadSignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (fetches, fetchSignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for an upload soon; cheap and safe from any thread.
    public func requestUpload() {
        uploadRequests.withLock { $0 += 1 }
        uploadSignal.yield()
    }

    /// Asks for a fetch of everything the account sees.
    public func requestFetch() {
        fetchScope.withLock { $0 = nil }
        fetchSignal.yield()
    }

    /// Asks for a fetch of one zone (a notice named it), unless a full fetch is pending.
    func requestFetch(_ zone: ZoneID, scope: DatabaseScope) {
        fetchScope.withLock { pending in
            if pending != nil { pending![zone] = scope }
        }
        fetchSignal.yield()
    }

    public var isOnline: Bool { online.withLock { $0 } }

    /// Runs until cancelled.
    public func run() async {
        requestFetch()
        requestUpload()
        await withDiscardingTaskGroup { group in
            group.addTask { await self.uploadLoop() }
            group.addTask { await self.fetchLoop() }
            group.addTask { await self.eventLoop() }
            group.addTask { await self.tickLoop() }
        }
    }

    private func uploadLoop() async {
        for await _ in uploads {
            // A moment for a burst of saves (an editor's temp-write-rename, a `cp -r`) to
            // settle, so that temporaries never reach the server and a burst goes up in
            // few requests instead of competing with the writer for the CPU; a lone save
            // waits 1 ms, a long burst at most 250 ms.
            var seen = uploadRequests.withLock { $0 }
            let start = ContinuousClock.now
            repeat {
                try? await Task.sleep(for: .milliseconds(1))
                let now = uploadRequests.withLock { $0 }
                if now == seen { break }
                seen = now
            } while ContinuousClock.now - start < .milliseconds(250)
            await turns.turn { await uploadPending() }
        }
    }

    private func fetchLoop() async {
        for await _ in fetches {
            // Notices come in bursts while others save: those that came while the last
            // fetch ran are already one signal (the stream keeps the newest only), and a
            // yield gathers those arriving at once; a pause would only delay a lone one.
            await Task.yield()
            let scope = fetchScope.withLock { pending in
                defer { pending = [:] }
                return pending
            }
            await turns.turn {
                if let zones = scope {
                    for (zone, scope) in zones.sorted(by: { $0.key.description < $1.key.description }) {
                        await fetchOne(zone, scope: scope)
                    }
                } else {
                    await fetchAll()
                }
            }
        }
    }

    /// Says that notesd may be reachable again (its socket was made again): the event
    /// loop tries at once instead of finishing its pause.
    public func notesdMayBeBack() { doorbell.ring() }

    /// Follows the daemon's notices; reconnects with a growing pause when it is away
    /// (at most a second: a failed connect is cheap, and queued saves wait on it), or at
    /// once when `notesdMayBeBack()` says so.
    private func eventLoop() async {
        var pause = 0.1
        while !Task.isCancelled {
            do {
                for try await event in client.events() {
                    switch event {
                    case .ready:
                        pause = 0.1
                        setOnline(true)
                        requestFetch()
                        requestUpload()
                    case .change(let notice):
                        if let zone = notice.zone {
                            requestFetch(zone, scope: notice.scope)
                        } else {
                            requestFetch()
                        }
                    }
                }
            } catch {
                setOnline(false)
                logger.debug("event stream ended: \(error)")
            }
            if await doorbell.pause(upTo: .seconds(pause)) {
                pause = 0.1
            } else {
                pause = min(pause * 2, 1)
            }
        }
    }

    /// Once a second: editors' moved-aside notes that were not taken back are deleted,
    /// and a queue left by a failed upload is tried again.
    private func tickLoop() async {
        var ticks = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            ticks += 1
            let unsaved = tree.saveUnsaved()
            if unsaved > 0 && ticks % 30 == 1 {
                logger.error("\(unsaved) closed file(s) wait in memory: the disk of the local replica is full. Free some space; they are saved as soon as there is room.")
            }
            let expired = deleteMovedAside(olderThan: NoteTree.sameNoteWindow)
            let queued = (try? replica.pendingCount()) ?? 0
            if expired || (queued > 0 && ticks % 2 == 0) { requestUpload() }
            if ticks % 30 == 0 { requestFetch() }
        }
    }

    /// Deletes the notes that editors moved aside and did not take back within `age`
    /// seconds; true if there were any.
    func deleteMovedAside(olderThan age: Double) -> Bool {
        let (expired, uploadFreed) = tree.expireDetached(olderThan: age)
        for key in expired {
            do { try replica.deleteLocal(key) } catch { logger.error("\(error)") }
        }
        return !expired.isEmpty || uploadFreed
    }

    func setOnline(_ value: Bool) {
        let changed = online.withLock { online in
            defer { online = value }
            return online != value
        }
        if changed { logger.info(value ? "notesd is reachable" : "notesd is not reachable; working from the local replica") }
    }

    // MARK: Upload

    /// Uploads queued changes, zone by zone, up to 400 a request, until none are left or
    /// the daemon is unreachable.
    func uploadPending() async {
        if let fault = serverFault.withLock({ $0 }), ContinuousClock.now < fault.until { return }
        do {
            try await uploadZoneChanges()
            var rounds = 0
            while rounds < 1000 {
                rounds += 1
                let batch = try replica.nextBatch(
                    limit: Limits.maxBatchItems, byteBudget: Limits.uploadBudgetBytes, skipping: stuck.withLock { $0 },
                    holding: { key, deleted in deleted ? self.tree.holdsDelete(key) : self.tree.holdsSave(key) }, cost: Self.encodedSize)
                guard !batch.isEmpty else { return }
                guard try await upload(batch) else { return }
            }
        } catch {
            logger.error("upload: \(error)")
        }
    }

    /// The bytes a queued content takes in a modify request: escaped text for a note,
    /// base64 for a file. Batches are sized by it to stay under notesd's request limit
    /// (a batch over it would be refused whole, again and again).
    @Sendable static func encodedSize(_ content: [UInt8]?, _ type: RecordType) -> Int {
        guard let content else { return 0 }
        return type == .file ? (content.count + 2) / 3 * 4 : JSONBytes.escapedLength(content)
    }

    /// Zones made or removed in `private/` go first: their records depend on them.
    private func uploadZoneChanges() async throws {
        for zone in try replica.zones() where zone.pending != nil {
            if zone.pending == .create {
                let outcome = await attempt { () async throws(NotesError) in _ = try await self.client.createZone(named: zone.id.name) }
                guard try settleZone(outcome, ignoring: [.constraintViolation]) else { return }
                try replica.saveZone(ReplicaZone(id: zone.id, scope: .private, changeToken: nil, pending: nil))
            } else {
                let outcome = await attempt { () async throws(NotesError) in try await self.client.deleteZone(zone.id) }
                guard try settleZone(outcome, ignoring: [.zoneNotFound, .unknownItem]) else { return }
                tree.zoneRemoved(zone.id, records: try replica.removeZone(zone.id))
            }
        }
    }

    private func attempt<T>(_ body: () async throws(NotesError) -> T) async -> NotesError? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error
        }
    }

    /// True when the zone change is done (or was already); false when the daemon is away.
    private func settleZone(_ error: NotesError?, ignoring codes: Set<NotesError.Code>) throws -> Bool {
        guard let error, !codes.contains(error.code) else { return true }
        if error.code == .serviceUnavailable {
            setOnline(false)
            return false
        }
        throw error
    }

    /// One modify operation. Returns false when the daemon could not be reached.
    private func upload(_ batch: [PendingChange]) async throws -> Bool {
        let zone = batch[0].record.zone
        var saves: [RecordSave] = []
        var deletes: [RecordDelete] = []
        var dirty: [String: Int64] = [:]
        for change in batch {
            let record = change.record
            dirty[record.recordName] = record.dirty
            if record.deleted && record.changeTag == nil {
                // Never reached the server (uploads run one at a time, so none is under way).
                try replica.markDeleted(record.key, dirty: record.dirty)
                continue
            }
            if record.deleted {
                deletes.append(RecordDelete(recordName: record.recordName, changeTag: record.changeTag))
                continue
            }
            let content = change.content ?? []
            saves.append(
                RecordSave(
                    recordName: record.recordName, recordType: record.recordType, name: record.name, parent: record.parent,
                    body: record.recordType == .note ? String(decoding: content, as: UTF8.self) : nil,
                    bytes: record.recordType == .file ? Data(content) : nil, changeTag: record.changeTag))
        }
        if saves.isEmpty && deletes.isEmpty { return true }
        // Best effort: on a full cache disk the upload must still go (it is what lets
        // the mount catch up); only the recognition of a lost answer is given up.
        do {
            try replica.noteSending(
                batch.compactMap { change in
                    change.record.deleted ? nil : (change.record.key, ContentDigest.of(change.content ?? []))
                })
        } catch {
            logger.warning("could not note what an upload sends: \(error)")
        }
        do {
            let result = try await client.modify(ModifyRequest(zone: zone, saves: saves, deletes: deletes))
            setOnline(true)
            try replica.markUploaded(
                in: zone, saved: result.saved.map { ($0, dirty[$0.recordName] ?? 0) }, deleted: result.deleted.map { ($0, dirty[$0] ?? 0) })
            deferredForName.withLock { deferred in
                guard !deferred.isEmpty else { return }
                for saved in result.saved { deferred.remove(RecordKey(zone: zone, recordName: saved.recordName)) }
            }
            // What notesd says of the zone's history and trash changed too.
            tree.noteChanged(zone)
            logger.debug("uploaded \(saves.count) saves and \(deletes.count) deletes to \(zone)")
            serverFault.withLock { $0 = nil }
            return true
        } catch let error as NotesError {
            return try await settle(error, batch: batch, zone: zone)
        }
    }

    /// Decides what a refused upload means for each item, so that the next round can go on.
    private func settle(_ error: NotesError, batch: [PendingChange], zone: ZoneID) async throws -> Bool {
        if error.code == .serviceUnavailable || error.code == .requestRateLimited {
            setOnline(false)
            return false
        }
        setOnline(true)
        if error.code == .internalError && error.itemErrors.isEmpty {
            let pause = serverFault.withLock { fault in
                let pause = fault.map { min($0.pause * 2, .seconds(60)) } ?? .seconds(1)
                fault = (ContinuousClock.now + pause, pause)
                return pause
            }
            logger.warning("notesd failed to take \(batch.count) change(s) (\(error.message)); they stay queued and go again in \(pause.components.seconds) s.")
            return false
        }
        let items =
            error.itemErrors.isEmpty
            ? batch.map { NotesError.ItemError(recordName: $0.record.recordName, code: error.code, message: error.message, serverRecord: error.serverRecord) }
            : error.itemErrors
        let byName = Dictionary(batch.map { ($0.record.recordName, $0) }, uniquingKeysWith: { a, _ in a })
        for item in items where item.code != .batchRequestFailed {
            guard let change = byName[item.recordName] else { continue }
            let record = change.record
            let key = record.key
            switch item.code {
            case .serverRecordChanged:
                try await resolveChanged(change, server: item.serverRecord)
            case .unknownItem where record.deleted:
                try replica.markDeleted(key, dirty: record.dirty)
            case .unknownItem where record.changeTag != nil:
                // Deleted elsewhere while edited here: the edit wins, the record comes back.
                logger.notice("\(record.name) was deleted elsewhere while it was edited here: saving it again")
                try replica.rebase(key, onto: nil)
            case .referenceViolation where try !record.deleted && replica.isQueuedCreate(parentOf: key):
                // Its folder is this mount's own, not on notesd yet: the next upload takes
                // the folder with it (`Replica.nextBatch`).
                logger.debug("\(record.name): its folder is not on notesd yet; uploaded again with it")
                _ = try replica.requeue(key, dirty: record.dirty)
                requestUpload()
            case .referenceViolation, .unknownItem:
                // Its folder is gone on the server: the note goes to the zone's root.
                logger.notice("the folder of \(record.name) was deleted elsewhere: moving it to the top of its zone")
                if let row = try replica.moveToRoot(key, dirty: record.dirty) { show([row]) }
            case .folderNotEmpty where record.deleted:
                // Someone added to the folder meanwhile: it stays, with what they added.
                logger.notice("\(record.name) holds notes added elsewhere meanwhile: it stays")
                try replica.discardLocal(key)
                refetch(zone)
            case .constraintViolation where !record.deleted:
                // The note that holds the name on notesd may be one of this mount's own,
                // renamed or deleted here with the change queued behind this one (edited
                // again since, or held while open): this one goes after it, once. Only
                // then is it another's note, and this one takes `name (2)` (the
                // exerciser, beside stress-ng: `x (2).bin` from a single mount).
                if try replica.hasOtherChanges(in: zone, than: key), deferredForName.withLock({ $0.insert(key).inserted }),
                    try replica.requeue(key, dirty: record.dirty)
                {
                    logger.debug("\(record.name): its name is still taken on notesd; uploaded again after the other queued changes")
                    requestUpload()
                } else {
                    try nameAside(change)
                }
            case .permissionFailure, .notAuthenticated:
                logger.error("notesd refused \(record.name): \(item.message)")
                if !record.deleted && record.recordType != .folder {
                    try await keepAsCopy(change, beside: nil)
                } else {
                    try replica.discardLocal(key)
                    tree.removeRecords([key])
                }
                refetch(zone)
            default:
                logger.error("notesd refused \(record.name): \(item.message) It stays queued (`notes status` lists it) and is retried when the mount restarts.")
                _ = stuck.withLock { $0.insert(key) }
                try? replica.refuse(key, reason: item.message)
            }
        }
        return true
    }

    /// Forgets where the zone's changes were read up to, so the next fetch brings back
    /// the server's state of everything in it.
    func refetch(_ zone: ZoneID) {
        _ = refetchZones.withLock { $0.insert(zone) }
        saveRefetches()
        requestFetch()
    }

    static let refetchKey = "refetch zones"

    /// Writes the zones still to be fetched from scratch into the replica.
    private func saveRefetches() {
        let zones = refetchZones.withLock { Array($0) }.sorted { $0.description < $1.description }
        let value = zones.isEmpty ? nil : (try? JSONEncoder().encode(zones)).map { String(decoding: $0, as: UTF8.self) }
        do { try replica.setMeta(Self.refetchKey, value) } catch { logger.error("\(error)") }
    }

    private func mustRefetch(_ zone: ZoneID) -> Bool {
        refetchZones.withLock { $0.contains(zone) }
    }

    // MARK: Fetch

    /// Brings the replica and the tree up to date with every zone the account sees.
    func fetchAll() async {
        do {
            // Zones first, then shares: every zone listed was accepted before the shares
            // were read, so each shared record finds the share that places it.
            // What the replica knew before asking: a zone created here meanwhile is
            // still pending in this snapshot, so it is not taken for one deleted elsewhere.
            let known = try replica.zones()
            var listings: [(DatabaseScope, [Zone])] = []
            for scope in DatabaseScope.allCases {
                listings.append((scope, try await client.zones(scope: scope)))
            }
            try await refreshShares()
            for (scope, zones) in listings {
                let listed = Set(zones.map(\.id))
                for zone in known where zone.scope == scope && zone.pending == nil && !listed.contains(zone.id) {
                    // Edits not uploaded yet outlive the zone: they become copies among
                    // the account's own notes.
                    for change in try replica.unsentEdits(in: zone.id) {
                        logger.warning("\(change.record.name) was edited here but \(zone.id) is no longer shared with you: keeping your version among your own notes")
                        try await keepAsCopy(change, beside: nil)
                    }
                    let removed = try replica.removeZone(zone.id)
                    tree.zoneRemoved(zone.id, records: removed)
                }
                for zone in zones {
                    let stored = known.first { $0.id == zone.id }
                    // Removed here and not yet on notesd: it stays gone from the mount.
                    if stored?.pending == .delete { continue }
                    tree.zoneSeen(zone.id, scope: scope)
                    if mustRefetch(zone.id) || stored?.changeToken != zone.changeToken {
                        try await fetchZone(zone.id, scope: scope, from: stored?.changeToken)
                    }
                }
            }
            setOnline(true)
        } catch let error as NotesError where error.code == .serviceUnavailable {
            setOnline(false)
        } catch {
            logger.error("fetching changes: \(error)")
        }
    }

    /// The shares the account owns or accepted, into the replica (for offline starts) and
    /// the tree (permissions, extended attributes, where shared records sit).
    private func refreshShares() async throws {
        let shares = try await client.shares()
        try replica.saveShares(shares)
        tree.setShares(shares)
    }

    /// Fetches the changes of one zone the account already knows; anything else (a new
    /// zone, a zone gone) takes a full fetch.
    func fetchOne(_ zone: ZoneID, scope: DatabaseScope) async {
        do {
            guard let known = try replica.zones().first(where: { $0.id == zone }), known.pending == nil else {
                await fetchAll()
                return
            }
            try await fetchZone(zone, scope: scope, from: known.changeToken)
            // Shares are named by the same notices (made, changed, stopped): refresh them too.
            try await refreshShares()
            setOnline(true)
        } catch let error as NotesError where error.code == .serviceUnavailable {
            setOnline(false)
        } catch {
            logger.warning("fetching \(zone): \(error); fetching everything")
            await fetchAll()
        }
    }

    private func changes(of zone: ZoneID, since token: String?) async -> Result<ZoneChanges, NotesError> {
        do {
            return .success(try await client.zoneChanges(zone, since: token, limit: Limits.maxChangesPage))
        } catch {
            return .failure(error)
        }
    }

    /// Fetches a zone's changes since `start`, or from scratch when `refetch` asked for it
    /// (asked again if this fetch fails).
    private func fetchZone(_ zone: ZoneID, scope: DatabaseScope, from start: String?) async throws {
        let scratch = refetchZones.withLock { $0.remove(zone) != nil }
        do {
            try await fetchPages(zone, scope: scope, from: scratch ? nil : start)
            if scratch { saveRefetches() }
        } catch {
            if scratch { _ = refetchZones.withLock { $0.insert(zone) } }
            throw error
        }
    }

    private func fetchPages(_ zone: ZoneID, scope: DatabaseScope, from start: String?) async throws {
        var token = start
        var fromScratch = start == nil
        var seen = Set<String>()
        // The next page is asked for as soon as this one's token is known, so notesd
        // reads it while this one is applied (a first mount of 100,000 notes is 50 pages).
        var next: Task<Result<ZoneChanges, NotesError>, Never>?
        defer { next?.cancel() }
        var pages = 0
        defer { if pages > 1 { ProcessMemory.giveBackFreePages() } }
        while true {
            let page: ZoneChanges
            let answer: Result<ZoneChanges, NotesError>
            if let asked = next {
                answer = await asked.value
                next = nil
            } else {
                answer = await changes(of: zone, since: token)
            }
            switch answer {
            case .success(let changes):
                page = changes
            case .failure(let error) where error.code == .changeTokenExpired:
                token = nil
                fromScratch = true
                seen = []
                continue
            case .failure(let error):
                throw error
            }
            pages += 1
            if page.moreComing {
                next = Task { [token = page.changeToken] in await self.changes(of: zone, since: token) }
            }
            let mark = tree.localMark()
            // What went, named while the mount still shows it (none on a first fetch).
            let gone =
                fromScratch || events == nil
                ? []
                : page.deleted.map { name in
                    EventLog.Event(change: "deleted", zone: zone, recordName: name, path: tree.path(of: RecordKey(zone: zone, recordName: name)))
                }
            tree.willApplyRemote(zone, records: page.records)
            tree.willDeleteRemote(zone, names: page.deleted)
            let effects = try replica.applyRemote(zone, records: page.records, deleted: page.deleted, token: page.changeToken, scope: scope)
            tree.applyRemote(effects, after: mark)
            if let events, !fromScratch {
                events.append(
                    gone
                        + page.records.map { record in
                            EventLog.Event(
                                change: "saved", zone: zone, recordName: record.recordName, path: tree.path(of: RecordKey(zone: zone, recordName: record.recordName)),
                                name: record.name, type: record.recordType, by: record.modifiedBy, at: record.modifiedAt, share: record.shareID)
                        })
            }
            if fromScratch { seen.formUnion(page.records.map(\.recordName)) }
            token = page.changeToken
            if !page.moreComing { break }
        }
        if fromScratch {
            let removed = try replica.prune(zone, keeping: seen)
            if !removed.isEmpty { tree.removeRecords(removed) }
        }
        tree.showOrphans()
    }
}
