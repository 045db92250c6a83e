public import NotesModel
import Foundation
import GRDB
import Synchronization

/// A write queued with `Replica`'s `…Later` methods.
public struct WriteTicket: Sendable, Hashable {
    let value: UInt64
}

/// Carries a write's result out of the transaction that ran it.
final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// A failure of the local replica file.
public struct ReplicaError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// The disk holding the replica is full (the writer gets ENOSPC).
    public var diskFull: Bool
    public var description: String { message }
}

/// The mount's local copy of everything the account sees, in one SQLite file: served
/// to every read, written by every save, and the durable upload queue.
///
/// Local changes are committed with `synchronous = NORMAL` (they survive a crash of
/// the mount, which is what `close` promises); `fsync` asks for `FULL`, which survives
/// power loss too.
public final class Replica: Sendable {
    let pool: DatabasePool
    let writer: GroupCommit
    /// The replica's file.
    public let path: String
    private let lastDirty: Mutex<Int64>

    /// - Parameter commitsInBackground: commit writes nobody waits for on a utility
    ///   queue (a mount); without it they wait for the next read or waited write, which
    ///   keeps a simulation deterministic.
    public init(path: String, commitsInBackground: Bool = true) throws(ReplicaError) {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // A burst of large saves grows the WAL; after each checkpoint it goes back
            // to at most this size instead of keeping its largest size for good.
            try db.execute(sql: "PRAGMA journal_size_limit = 16777216")
        }
        do {
            // Every note the account can read is in here: the owner's only (see `ReplicaLocation`).
            try ReplicaLocation.ownerOnly(path)
            pool = try DatabasePool(path: path, configuration: configuration)
            try ReplicaMigrations.migrator.migrate(pool)
            writer = GroupCommit(pool: pool, commitsInBackground: commitsInBackground)
            // Through the partial index of queued records: without `dirty > 0` SQLite read
            // every row, content and all (40 ms of each start at 100,000 notes).
            let maxDirty = try pool.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(dirty) FROM records WHERE dirty > 0") ?? 0 }
            lastDirty = Mutex(maxDirty)
        } catch {
            throw Self.convert(error, "open the replica at \(path)")
        }
    }

    static func convert(_ error: any Error, _ doing: String) -> ReplicaError {
        if let error = error as? ReplicaError { return error }
        if let error = error as? DatabaseError {
            return ReplicaError(message: "Could not \(doing): \(error.message ?? "\(error)")", diskFull: error.resultCode == .SQLITE_FULL)
        }
        return ReplicaError(message: "Could not \(doing): \(error)", diskFull: false)
    }

    func nextDirty() -> Int64 {
        lastDirty.withLock { value in
            value += 1
            return value
        }
    }

    /// Runs `body` in a write transaction, after every write queued before it, and
    /// returns once it is committed (see `GroupCommit`).
    func write<T>(_ doing: String, durable: Bool = false, _ body: @escaping @Sendable (Database) throws -> T) throws(ReplicaError) -> T {
        let result = ResultBox<T>()
        let ticket = writer.enqueue(doing, durable: durable) { db in result.value = try body(db) }
        try writer.wait(ticket)
        return result.value!
    }

    /// Queues a write and returns at once; it runs after every write queued before it,
    /// and before every write and read after it. Either `onFailure` hears of a failure,
    /// or (without it) whoever calls `wait(for:)` does.
    func writeLater(_ doing: String, durable: Bool = false, onFailure: (@Sendable (ReplicaError) -> Void)?, _ body: @escaping @Sendable (Database) throws -> Void) -> WriteTicket {
        WriteTicket(value: writer.enqueue(doing, durable: durable, onFailure: onFailure, body))
    }

    /// Waits until a write queued with a `…Later` method is committed; throws its failure
    /// if it was queued without `onFailure`.
    public func wait(for ticket: WriteTicket) throws(ReplicaError) {
        try writer.wait(ticket.value)
    }

    /// Whether a write queued with a `…Later` method is settled: committed, or failed
    /// and its `onFailure` has run.
    public func hasSettled(_ ticket: WriteTicket) -> Bool {
        writer.hasSettled(ticket.value)
    }

    /// Drops the writes not committed yet, and every later one: a test's `kill -9`.
    public func abandonQueuedWrites() {
        writer.abandon()
    }

    /// Waits for every write queued so far.
    public func waitForQueuedWrites() {
        writer.waitForAll()
    }

    /// Reads after every write queued so far has run.
    func read<T>(_ doing: String, _ body: (Database) throws -> T) throws(ReplicaError) -> T {
        writer.waitForAll()
        do {
            return try pool.read(body)
        } catch {
            throw Self.convert(error, doing)
        }
    }

    // MARK: Loading

    static let metadataColumns = "owner, zone, record_name, record_type, name, parent, size, share_id, change_tag, created_at, modified_at, modified_by, dirty, deleted"

    static func record(_ row: Row) -> ReplicaRecord {
        ReplicaRecord(
            zone: ZoneID(owner: row[0], name: row[1]), recordName: row[2], recordType: RecordType(rawValue: row[3]) ?? .file,
            name: row[4], parent: row[5], size: row[6], shareID: row[7], changeTag: row[8], createdAt: row[9],
            modifiedAt: row[10], modifiedBy: row[11], dirty: row[12], deleted: row[13])
    }

    /// A row read with `metadataColumns, content`.
    static func pendingChange(_ row: Row) -> PendingChange {
        let data: Data? = row[14]
        return PendingChange(record: record(row), content: data.map { [UInt8]($0) })
    }

    /// The content of a record with the change tag it builds on, or `nil` if the replica
    /// has no such record.
    public func contentAndTag(of key: RecordKey) throws(ReplicaError) -> ([UInt8], String?)? {
        try read("read \(key)") { db in
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT content, change_tag FROM records WHERE owner = ? AND zone = ? AND record_name = ?"),
                arguments: [key.zone.owner, key.zone.name, key.recordName])
            guard let row else { return nil }
            let data: Data? = row[0]
            return (data.map { [UInt8]($0) } ?? [], row[1])
        }
    }

    // MARK: Local changes

    /// Records a local create or change (metadata, and content when given) and queues
    /// it for upload. Returns the record as stored, with its queue position.
    @discardableResult
    /// - Parameter base: the change tag the edit was made on, when older than the one the
    ///   row holds (the writer read a version that the server's has since replaced).
    public func saveLocal(_ record: ReplicaRecord, content: [UInt8]?, durable: Bool = false, base: String? = nil) throws(ReplicaError) -> ReplicaRecord {
        var stored = record
        stored.dirty = nextDirty()
        stored.deleted = false
        if let base { stored.changeTag = base }
        let row = stored
        try write("save \(record.name) in the replica", durable: durable) { db in
            try Self.upsert(db, row, content: content, keepTag: base == nil)
        }
        return stored
    }

    /// Queues the delete of a record. The row stays (marked) even if it was never
    /// uploaded: an upload of its creation may be under way, and its answer must find
    /// the row to learn that the record now exists on the server and needs deleting.
    /// A later `saveLocal` of the same record takes the delete back.
    public func deleteLocal(_ key: RecordKey, durable: Bool = false) throws(ReplicaError) {
        let dirty = nextDirty()
        try write("delete \(key) in the replica", durable: durable) { db in
            let arguments: StatementArguments = [key.zone.owner, key.zone.name, key.recordName]
            try db.cachedStatement(sql: "UPDATE records SET deleted = 1, dirty = ?, content = NULL WHERE owner = ? AND zone = ? AND record_name = ?")
                .execute(arguments: [dirty] + arguments)
        }
    }

    /// `saveLocal` without waiting: the file model answers the kernel at once, and
    /// whoever must know it is on disk (`close`, `fsync`) waits for the ticket.
    public func saveLocalLater(
        _ record: ReplicaRecord, content: [UInt8]?, durable: Bool = false, base: String? = nil,
        onFailure: (@Sendable (ReplicaError) -> Void)?
    ) -> WriteTicket {
        var stored = record
        stored.dirty = nextDirty()
        stored.deleted = false
        if let base { stored.changeTag = base }
        let row = stored
        return writeLater("save \(record.name) in the replica", durable: durable, onFailure: onFailure) { db in
            try Self.upsert(db, row, content: content, keepTag: base == nil)
        }
    }

    /// `deleteLocal` without waiting (unlink and rename answer the kernel at once).
    @discardableResult
    public func deleteLocalLater(_ key: RecordKey, onFailure: @escaping @Sendable (ReplicaError) -> Void) -> WriteTicket {
        let dirty = nextDirty()
        return writeLater("delete \(key) in the replica", onFailure: onFailure) { db in
            let arguments: StatementArguments = [key.zone.owner, key.zone.name, key.recordName]
            try db.cachedStatement(sql: "UPDATE records SET deleted = 1, dirty = ?, content = NULL WHERE owner = ? AND zone = ? AND record_name = ?")
                .execute(arguments: [dirty] + arguments)
        }
    }

    /// Makes what earlier non-durable saves wrote survive power loss too.
    public func makeDurable() throws(ReplicaError) {
        try write("sync the replica", durable: true) { db in
            try db.execute(sql: "UPDATE meta SET value = value WHERE key = 'account'")
        }
    }

    /// Inserts or updates a row. `keepTag`: a local save keeps the base tag the row has
    /// (only the server's answers move it).
    static func upsert(_ db: Database, _ record: ReplicaRecord, content: [UInt8]?, keepTag: Bool = false) throws {
        let data = content.map { Data($0) }
        try db.cachedStatement(
            sql: """
                INSERT INTO records (owner, zone, record_name, record_type, name, parent, content, size, share_id, change_tag,
                                     created_at, modified_at, modified_by, dirty, deleted)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (owner, zone, record_name) DO UPDATE SET
                    record_type = excluded.record_type, name = excluded.name, parent = excluded.parent,
                    content = CASE WHEN ?16 THEN excluded.content ELSE records.content END,
                    size = excluded.size, share_id = COALESCE(excluded.share_id, records.share_id),
                    change_tag = CASE WHEN ?17 THEN records.change_tag ELSE excluded.change_tag END,
                    modified_at = excluded.modified_at, modified_by = excluded.modified_by,
                    dirty = excluded.dirty, deleted = excluded.deleted, refusal = NULL
                """
        ).execute(
            arguments: [
                record.zone.owner, record.zone.name, record.recordName, record.recordType.rawValue, record.name, record.parent,
                data, record.size, record.shareID, record.changeTag, record.createdAt, record.modifiedAt, record.modifiedBy,
                record.dirty, record.deleted, content != nil, keepTag,
            ])
    }

    // MARK: Upload queue

    /// The next upload: the oldest queued changes of one zone (the zone of the oldest
    /// change not in `skipping`), in queue order, at most `limit` of them, and no more
    /// content than `byteBudget` as `cost` counts it, except that the first always goes
    /// (alone, if it is that large). Rows are read one at a time, so a queue of large
    /// files never sits in memory whole.
    ///
    /// A change that `holding` (key, is a delete) says to keep back stops its zone:
    /// nothing of that zone behind it goes either, so that queue order (children before
    /// their folder, a freed name before its next owner) holds on the server. Other
    /// zones go on. (A file removed a moment ago may be made again under its name as the
    /// same note, and then its delete must never reach notesd; a file still open for
    /// writing may be in the middle of being rewritten.)
    public func nextBatch(
        limit: Int, byteBudget: Int, skipping: Set<RecordKey>, holding: (RecordKey, Bool) -> Bool,
        cost: @escaping ([UInt8]?, RecordType) -> Int
    ) throws(ReplicaError) -> [PendingChange] {
        try read("read the upload queue") { db in
            var batch: [PendingChange] = []
            var spent = 0
            var held: Set<ZoneID> = []
            let rows = try Row.fetchCursor(db, sql: "SELECT \(Self.metadataColumns), content FROM records WHERE dirty > 0 ORDER BY dirty")
            while let row = try rows.next() {
                let change = Self.pendingChange(row)
                guard !skipping.contains(change.record.key), !held.contains(change.record.zone) else { continue }
                if let zone = batch.first?.record.zone, change.record.zone != zone { continue }
                if holding(change.record.key, change.record.deleted) {
                    guard batch.isEmpty else { break }
                    held.insert(change.record.zone)
                    continue
                }
                let price = change.record.deleted ? 0 : cost(change.content, change.record.recordType)
                if !batch.isEmpty && spent + price > byteBudget { break }
                batch.append(change)
                spent += price
                if batch.count == limit { break }
            }
            return try Self.withQueuedFolders(batch, db, limit: limit, skipping: skipping, holding: holding)
        }
    }

    /// Adds to a batch the queued saves of the folders its saves go into, and of their
    /// folders up to the top of the zone: notesd must see the path a save names as this
    /// mount does.
    ///
    /// Queue order is not folder-first: a folder made here, a note moved into it, then
    /// the folder renamed, queues the folder's row behind the note's. A batch cut between
    /// them (a held row, the budget, the limit) sent the note into a folder notesd did not
    /// know, and the refusal moved the note to the top of its zone; and a folder moved
    /// into one that was moved out of it here went up before that move, which notesd
    /// refused as a folder moved into itself (fsstress, renames and rmdirs). notesd
    /// applies a batch's folders before what they hold. A folder that cannot go now
    /// (held, skipped, past the limit) cuts the batch before the first save into it.
    static func withQueuedFolders(
        _ batch: [PendingChange], _ db: Database, limit: Int, skipping: Set<RecordKey>, holding: (RecordKey, Bool) -> Bool
    ) throws -> [PendingChange] {
        var batch = batch
        var names = Set(batch.map(\.record.recordName))
        // Folders added at the end, each with the position of the save that needed it.
        let queued = batch.count
        var neededBy: [Int] = []
        // Folders whose path up to the top has been walked already: a batch of notes in
        // one folder reads that path once, not once per note.
        var walked = Set<String>()
        var index = 0
        while index < batch.count {
            let record = batch[index].record
            var cursor = record.deleted ? nil : record.parent
            var depth = 0
            while let folder = cursor, depth < 256, walked.insert(folder).inserted {
                depth += 1
                let key = RecordKey(zone: record.zone, recordName: folder)
                guard
                    let row = try Row.fetchOne(
                        db,
                        sql: """
                            SELECT \(metadataColumns), content FROM records WHERE owner = ? AND zone = ? AND record_name = ?
                            """, arguments: [key.zone.owner, key.zone.name, key.recordName])
                else { break }
                let change = pendingChange(row)
                cursor = change.record.parent
                guard change.record.dirty > 0, !change.record.deleted, !names.contains(folder) else { continue }
                guard batch.count < limit, !skipping.contains(key), !holding(key, false) else {
                    // This save and the queue behind it wait; what earlier saves need stays.
                    let added = zip(batch[queued...], neededBy).filter { $0.1 < index }.map(\.0)
                    return Array(batch[..<min(index, queued)]) + added
                }
                batch.append(change)
                neededBy.append(index)
                names.insert(folder)
            }
            index += 1
        }
        return batch
    }

    /// Whether the folder a record is in was made here and is still queued, not yet on
    /// notesd (a save into it that notesd refused must wait for it, not move away).
    public func isQueuedCreate(parentOf key: RecordKey) throws(ReplicaError) -> Bool {
        try read("read the folder of \(key)") { db in
            guard let parent = try Self.row(db, key)?.parent else { return false }
            return try Bool.fetchOne(
                db,
                sql: """
                    SELECT 1 FROM records WHERE owner = ? AND zone = ? AND record_name = ? AND dirty > 0 AND change_tag IS NULL AND deleted = 0
                    """, arguments: [key.zone.owner, key.zone.name, parent]) ?? false
        }
    }

    /// Notes why notesd refused a queued change that stays queued.
    public func refuse(_ key: RecordKey, reason: String) throws(ReplicaError) {
        try write("note why \(key) was refused") { db in
            try db.execute(
                sql: "UPDATE records SET refusal = ? WHERE owner = ? AND zone = ? AND record_name = ? AND dirty > 0",
                arguments: [reason, key.zone.owner, key.zone.name, key.recordName])
        }
    }

    /// A queued change as `notes status` lists it.
    public struct Waiting: Sendable, Encodable {
        public var zone: String
        public var name: String
        public var change: String
        /// notesd's reason, when it refused the change; nil while it only waits.
        public var refusal: String?
    }

    /// Every queued change, oldest first.
    public func waiting() throws(ReplicaError) -> [Waiting] {
        try read("read the upload queue") { db in
            try Row.fetchAll(db, sql: "SELECT owner, zone, name, deleted, change_tag, refusal FROM records WHERE dirty > 0 ORDER BY dirty").map { row in
                let owner: String = row[0]
                let zone: String = row[1]
                let deleted: Bool = row[3]
                let tag: String? = row[4]
                return Waiting(zone: "\(owner)/\(zone)", name: row[2], change: deleted ? "delete" : (tag == nil ? "create" : "save"), refusal: row[5])
            }
        }
    }

    /// The number of local changes not uploaded yet.
    public func pendingCount() throws(ReplicaError) -> Int {
        try read("count the upload queue") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE dirty > 0") ?? 0 }
    }

    /// The server accepted a save: the row is in sync unless it changed again meanwhile
    /// (then only its base tag moves on).
    public func markSaved(_ key: RecordKey, dirty: Int64, as saved: NotesModel.Record) throws(ReplicaError) {
        try markUploaded(in: key.zone, saved: [(saved, dirty)], deleted: [])
    }

    /// A whole upload's answer in one transaction: each saved row is in sync unless it
    /// changed again meanwhile (then only its base tag moves on), each deleted row is
    /// forgotten unless it was made again. `dirty` is the row's mark when it was sent.
    public func markUploaded(
        in zone: ZoneID, saved: [(record: NotesModel.Record, dirty: Int64)], deleted: [(recordName: String, dirty: Int64)]
    ) throws(ReplicaError) {
        guard !saved.isEmpty || !deleted.isEmpty else { return }
        try write("mark an upload to \(zone) done") { db in
            let save = try db.cachedStatement(
                sql: """
                    UPDATE records SET change_tag = ?, share_id = ?, modified_by = ?, refusal = NULL, sent_digest = NULL,
                        dirty = CASE WHEN dirty = ? THEN 0 ELSE dirty END
                    WHERE owner = ? AND zone = ? AND record_name = ?
                    """)
            for (record, dirty) in saved {
                try save.execute(arguments: [record.changeTag, record.shareID, record.modifiedBy, dirty, zone.owner, zone.name, record.recordName])
            }
            let delete = try db.cachedStatement(
                sql: "DELETE FROM records WHERE owner = ? AND zone = ? AND record_name = ? AND deleted = 1 AND dirty = ?")
            for (name, dirty) in deleted {
                try delete.execute(arguments: [zone.owner, zone.name, name, dirty])
            }
        }
    }

    /// Notes what an upload is about to send (`digest` of each save's content), before
    /// it goes, beside the digests of earlier uploads of the record whose answers never
    /// came (the last eight): see `sentDigests`.
    public func noteSending(_ digests: [(key: RecordKey, digest: [UInt8])]) throws(ReplicaError) {
        guard !digests.isEmpty else { return }
        try write("note what an upload sends") { db in
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE records SET sent_digest = substr(COALESCE(sent_digest, x'') || ?, -256)
                    WHERE owner = ? AND zone = ? AND record_name = ?
                    """)
            for (key, digest) in digests {
                try statement.execute(arguments: [Data(digest), key.zone.owner, key.zone.name, key.recordName])
            }
        }
    }

    /// The digests of what uploads of a record sent since its last answer: a version on
    /// notesd with one of these contents, by this account, is this mount's own. (Only the
    /// last would not do: an upload whose answer was lost at a stop is followed, after
    /// the next edit, by one of the new content, and notesd holds the first.)
    public func sentDigests(of key: RecordKey) throws(ReplicaError) -> [[UInt8]] {
        try read("read what was sent of \(key)") { db in
            let bytes =
                try Data.fetchOne(
                    db, sql: "SELECT sent_digest FROM records WHERE owner = ? AND zone = ? AND record_name = ?",
                    arguments: [key.zone.owner, key.zone.name, key.recordName]
                ).map { Array($0) } ?? []
            return stride(from: 0, to: bytes.count - bytes.count % 32, by: 32).map { Array(bytes[$0..<$0 + 32]) }
        }
    }

    /// The server applied a delete: forget the row unless it was re-created meanwhile.
    public func markDeleted(_ key: RecordKey, dirty: Int64) throws(ReplicaError) {
        try markUploaded(in: key.zone, saved: [], deleted: [(key.recordName, dirty)])
    }

    /// Moves the base of a queued change to `changeTag` (`nil`: create it anew), so the
    /// next upload carries the local state over the server's.
    public func rebase(_ key: RecordKey, onto changeTag: String?) throws(ReplicaError) {
        try write("rebase \(key)") { db in
            try db.execute(
                sql: "UPDATE records SET change_tag = ? WHERE owner = ? AND zone = ? AND record_name = ?",
                arguments: [changeTag, key.zone.owner, key.zone.name, key.recordName])
        }
    }

    /// Drops a queued change the server refused for good; the next fetch of the zone from
    /// scratch brings back the server's state.
    public func discardLocal(_ key: RecordKey) throws(ReplicaError) {
        try write("discard the local change of \(key)") { db in
            try db.execute(
                sql: "DELETE FROM records WHERE owner = ? AND zone = ? AND record_name = ?",
                arguments: [key.zone.owner, key.zone.name, key.recordName])
        }
    }

    // MARK: Remote changes

    /// What `applyRemote` would write over now: of `records`, the clean rows whose tag
    /// differs (a row with local changes keeps them; our own upload coming back changes
    /// nothing), by name, with the tag each holds and whether the text itself changes
    /// (not only its name, place or share).
    public func replacing(_ zone: ZoneID, _ records: [NotesModel.Record]) throws(ReplicaError) -> [String: (tag: String?, newText: Bool)] {
        try read("read the rows a page of changes replaces") { db in
            var replaced: [String: (tag: String?, newText: Bool)] = [:]
            for record in records {
                let local = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT dirty, change_tag, content FROM records WHERE owner = ? AND zone = ? AND record_name = ?"),
                    arguments: [zone.owner, zone.name, record.recordName])
                guard let local, (local[0] as Int64) == 0, (local[1] as String?) != record.changeTag else { continue }
                let held = (local[2] as Data?) ?? Data()
                let incoming: Data? = record.recordType == .file ? record.bytes : record.body.map { Data($0.utf8) }
                replaced[record.recordName] = (local[1] as String?, incoming.map { $0 != held } ?? true)
            }
            return replaced
        }
    }

    /// Applies a page of the server's changes to a zone. Rows with local changes keep
    /// them (their upload settles the difference); a record the server deleted while it
    /// was edited here is kept and will be created again.
    /// - Parameter replacing: the page is the start of a fetch from scratch: clean rows of
    ///   the zone that the fetch does not bring are dropped when `complete` comes.
    public func applyRemote(_ zone: ZoneID, records: [NotesModel.Record], deleted: [String], token: String, scope: DatabaseScope) throws(ReplicaError) -> RemoteEffects {
        try write("apply changes of \(zone)") { db in
            var effects = RemoteEffects()
            for record in records {
                let local = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT dirty, change_tag FROM records WHERE owner = ? AND zone = ? AND record_name = ?"),
                    arguments: [zone.owner, zone.name, record.recordName])
                // Local changes win until uploaded; our own upload coming back changes nothing.
                if let local, (local[0] as Int64) > 0 || (local[1] as String?) == record.changeTag { continue }
                let (row, content) = Self.row(record, in: zone)
                try Self.upsert(db, row, content: content)
                effects.updated.append(row)
            }
            for name in deleted {
                let arguments: StatementArguments = [zone.owner, zone.name, name]
                let dirty = try Int64.fetchOne(db, sql: "SELECT dirty FROM records WHERE owner = ? AND zone = ? AND record_name = ?", arguments: arguments)
                guard let dirty else { continue }
                if dirty > 0 {
                    try db.execute(sql: "UPDATE records SET change_tag = NULL WHERE owner = ? AND zone = ? AND record_name = ? AND deleted = 0", arguments: arguments)
                    try db.execute(sql: "DELETE FROM records WHERE owner = ? AND zone = ? AND record_name = ? AND deleted = 1", arguments: arguments)
                } else {
                    try db.execute(sql: "DELETE FROM records WHERE owner = ? AND zone = ? AND record_name = ?", arguments: arguments)
                    effects.removed.append(RecordKey(zone: zone, recordName: name))
                }
            }
            try db.execute(
                sql: """
                    INSERT INTO zones (owner, name, scope, change_token) VALUES (?, ?, ?, ?)
                    ON CONFLICT (owner, name) DO UPDATE SET change_token = excluded.change_token, scope = excluded.scope
                    """,
                arguments: [zone.owner, zone.name, scope.rawValue, token])
            return effects
        }
    }

    /// A server record as a clean row, with its content (`nil` for folders).
    static func row(_ record: NotesModel.Record, in zone: ZoneID) -> (ReplicaRecord, [UInt8]?) {
        let content: [UInt8] = record.recordType == .file ? [UInt8](record.bytes ?? Data()) : Array((record.body ?? "").utf8)
        let row = ReplicaRecord(
            zone: zone, recordName: record.recordName, recordType: record.recordType, name: record.name, parent: record.parent,
            size: content.count, shareID: record.shareID, changeTag: record.changeTag,
            createdAt: record.createdAt.timeIntervalSince1970, modifiedAt: record.modifiedAt.timeIntervalSince1970,
            modifiedBy: record.modifiedBy)
        return (row, record.recordType == .folder ? nil : content)
    }

    /// Drops the clean rows of a zone that are not in `keep` (after a fetch from scratch).
    public func prune(_ zone: ZoneID, keeping keep: Set<String>) throws(ReplicaError) -> [RecordKey] {
        try write("prune \(zone)") { db in
            let names = try String.fetchAll(
                db, sql: "SELECT record_name FROM records WHERE owner = ? AND zone = ? AND dirty = 0", arguments: [zone.owner, zone.name])
            var removed: [RecordKey] = []
            for name in names where !keep.contains(name) {
                try db.execute(sql: "DELETE FROM records WHERE owner = ? AND zone = ? AND record_name = ?", arguments: [zone.owner, zone.name, name])
                removed.append(RecordKey(zone: zone, recordName: name))
            }
            return removed
        }
    }

    /// Forgets a zone the account no longer sees (left, removed, share stopped, deleted),
    /// with all its records. Returns the records dropped.
    public func removeZone(_ zone: ZoneID) throws(ReplicaError) -> [RecordKey] {
        try write("remove \(zone)") { db in
            let names = try String.fetchAll(db, sql: "SELECT record_name FROM records WHERE owner = ? AND zone = ?", arguments: [zone.owner, zone.name])
            try db.execute(sql: "DELETE FROM records WHERE owner = ? AND zone = ?", arguments: [zone.owner, zone.name])
            try db.execute(sql: "DELETE FROM zones WHERE owner = ? AND name = ?", arguments: [zone.owner, zone.name])
            return names.map { RecordKey(zone: zone, recordName: $0) }
        }
    }

    /// Records a zone (seen on the server, or created or deleted locally).
    /// `saveZone` without waiting: the file model queues it under its lock and waits for
    /// the ticket after (a failure goes to whoever waits).
    public func saveZoneLater(_ zone: ReplicaZone) -> WriteTicket {
        writeLater("save zone \(zone.id)", onFailure: nil) { db in try Self.upsertZone(db, zone) }
    }

    static func upsertZone(_ db: Database, _ zone: ReplicaZone) throws {
        try db.execute(
            sql: """
                INSERT INTO zones (owner, name, scope, change_token, pending) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (owner, name) DO UPDATE SET scope = excluded.scope, change_token = excluded.change_token, pending = excluded.pending
                """,
            arguments: [zone.id.owner, zone.id.name, zone.scope.rawValue, zone.changeToken, zone.pending?.rawValue])
    }

    public func saveZone(_ zone: ReplicaZone) throws(ReplicaError) {
        try write("save zone \(zone.id)") { db in
            try db.execute(
                sql: """
                    INSERT INTO zones (owner, name, scope, change_token, pending) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (owner, name) DO UPDATE SET scope = excluded.scope, change_token = excluded.change_token, pending = excluded.pending
                    """,
                arguments: [zone.id.owner, zone.id.name, zone.scope.rawValue, zone.changeToken, zone.pending?.rawValue])
        }
    }

    /// The zones, without the records (the sync engine asks on every notice and upload).
    public func zones() throws(ReplicaError) -> [ReplicaZone] {
        try read("read zones") { db in try Self.zones(db) }
    }

    static func zones(_ db: Database) throws -> [ReplicaZone] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT owner, name, scope, change_token, pending FROM zones")).map { row in
            ReplicaZone(
                id: ZoneID(owner: row[0], name: row[1]), scope: DatabaseScope(rawValue: row[2]) ?? .private,
                changeToken: row[3], pending: (row[4] as String?).flatMap(ReplicaZone.Pending.init(rawValue:)))
        }
    }

    /// Replaces the shares the account owns or accepted.
    public func saveShares(_ shares: [Share]) throws(ReplicaError) {
        let encoder = NotesJSON.encoder()
        try write("save shares") { db in
            try db.execute(sql: "DELETE FROM shares")
            for share in shares {
                try db.execute(sql: "INSERT INTO shares (id, json) VALUES (?, ?)", arguments: [share.id, try encoder.encode(share)])
            }
        }
    }

    public func meta(_ key: String) throws(ReplicaError) -> String? {
        try read("read \(key)") { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key]) }
    }

    public func setMeta(_ key: String, _ value: String?) throws(ReplicaError) {
        try write("save \(key)") { db in
            if let value {
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
            }
        }
    }
}
