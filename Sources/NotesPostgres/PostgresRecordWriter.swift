import Foundation
import NotesModel
import PostgresNIO

/// Applies the saves and deletes of one modify operation inside its transaction, each
/// decided by `RecordRules` against the caller's `ZoneAccess` (as `RecordWriter` does
/// for SQLite).
final class PostgresRecordWriter {
    let context: PostgresWrite
    let access: ZoneAccess
    let actor: String
    /// Folders already read in this operation (a batch usually fills one folder).
    private var folders: [String: Record] = [:]
    /// Records read ahead in one statement (`readAhead`), each handed out once: a batch
    /// would otherwise pay a round trip per record before its write.
    private var readAhead: [String: Record] = [:]
    /// The names `readAhead` answers for; a name here and not in `readAhead` does not exist.
    private var readAheadNames: Set<String> = []
    /// Saves decided and not yet written: written before the records table is read or
    /// changed otherwise, and by `finish()`.
    private var pending = PostgresPendingSaves()
    /// Deletes decided and not yet written (record name, change number): written together
    /// before anything else reads or writes records.
    private var pendingDeletes: [(recordName: String, seq: Int64)] = []
    /// The children of the folders this operation deletes, read in one statement at its
    /// first delete; good until a save is written.
    private var childrenAhead: [String: [String]]?

    /// Each save written as soon as it is decided (for an error that must name its save).
    let oneAtATime: Bool

    init(context: PostgresWrite, access: ZoneAccess, actor: String, oneAtATime: Bool = false) {
        self.context = context
        self.access = access
        self.actor = actor
        self.oneAtATime = oneAtATime
    }
    var zone: ZoneID { access.zone }
    var sql: SQL { context.sql }

    /// Takes the records that `names` name, read ahead in one statement, for the saves
    /// and deletes that follow; each answer is used once, and none after a record
    /// changed share.
    func readAhead(_ names: Set<String>, found records: [Record]) {
        for record in records where names.contains(record.recordName) { readAhead[record.recordName] = record }
        readAheadNames = names
    }

    /// A record's metadata: read ahead, or read now.
    private func metadata(_ recordName: String) async throws -> Record? {
        if readAheadNames.remove(recordName) != nil {
            return readAhead.removeValue(forKey: recordName)
        }
        try await flush()
        return try await PostgresRecords.fetchMetadata(sql, recordName, in: zone)
    }

    /// Writes the deletes and saves decided so far.
    private func flush() async throws {
        try await flushDeletes()
        guard !pending.isEmpty else { return }
        childrenAhead = nil
        try await pending.write(sql, zone: zone, actor: actor, now: context.now.storedValue)
    }

    /// Writes the deletes decided so far, in one statement.
    private func flushDeletes() async throws {
        guard !pendingDeletes.isEmpty else { return }
        defer { pendingDeletes.removeAll() }
        _ = try await sql.rows(
            DeleteRecords(
                owner: zone.owner, zone: zone.name, recordNames: pendingDeletes.map(\.recordName), seqs: pendingDeletes.map(\.seq), actor: actor,
                now: context.now.storedValue))
    }

    /// The records in `folder`, from the read ahead of every folder the operation deletes.
    private func children(of folder: String, deleting: Set<String>) async throws -> [String] {
        if let childrenAhead { return childrenAhead[folder] ?? [] }
        try await flush()
        var ahead: [String: [String]] = [:]
        for row in try await sql.rows(
            "SELECT parent, record_name FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND parent = ANY(\(Array(deleting)))")
        {
            let (parent, name) = try row.decode((String, String).self)
            ahead[parent, default: []].append(name)
        }
        childrenAhead = ahead
        return ahead[folder] ?? []
    }

    /// Writes what the operation's saves left pending; call it once they are all decided.
    func finish() async throws {
        try await flush()
    }

    /// Forgets what was read ahead: records moved share, so their rows changed.
    private func forgetReadAhead() {
        readAhead.removeAll()
        readAheadNames.removeAll()
    }

    /// Deletes one record. Children must be gone already or be deleted in the same
    /// operation (`deleting`); the owner deleting a share's root stops the share.
    @discardableResult
    func delete(_ delete: RecordDelete, deleting: Set<String>, savedParents: [String: String] = [:]) async throws -> Bool {
        let existing = try await metadata(delete.recordName)
        let rootOf: String?
        do {
            rootOf = try RecordRules.checkDelete(delete, existing: existing, access: access)
        } catch {
            throw try await withServerRecord(error, delete.recordName)
        }
        guard let existing else { return true }
        let children = existing.recordType == .folder ? try await children(of: existing.recordName, deleting: deleting) : []
        guard try RecordRules.checkEmptied(existing, children: children, deleting: deleting, savedParents: savedParents) == .now else { return false }
        pendingDeletes.append((existing.recordName, try context.nextSeq()))
        folders[existing.recordName] = nil
        if let rootOf {
            try await flush()
            folders.removeAll()
            forgetReadAhead()
            childrenAhead = nil
            try await PostgresShareWriter(context: context).stop(shareID: rootOf, zone: zone)
        }
        return true
    }

    /// Creates or updates one record; an update first keeps the previous state as a version.
    /// - Parameter contentID: the row of `contents` holding the save's content, written
    ///   apart before this transaction (`SeparateContents`); `nil`: the content is inline.
    func save(_ save: RecordSave, contentID: Int64? = nil) async throws -> Record {
        // (A save reads and changes records as the deletes before it left them.)
        try await flushDeletes()
        childrenAhead = nil
        let existing = try await metadata(save.recordName)
        try RecordRules.checkName(save, existing: existing)
        var parentShare = access.zoneWideShare
        if let parentName = save.parent {
            parentShare = try RecordRules.checkParent(save, parentName, parent: try await folder(parentName), existing: existing, access: access)
        }
        let ownShare = access.rootShares[save.recordName]
        let newShare = ownShare ?? parentShare
        let seq = try context.nextSeq()
        let row = PostgresPendingSaves.Row(
            recordName: save.recordName, recordType: save.recordType.rawValue, name: save.name, parent: save.parent ?? "",
            body: contentID == nil ? PostgresRecords.storedText(save.body) : nil, bytes: contentID == nil ? save.bytes : nil,
            seq: seq, shareID: newShare, contentID: contentID)

        if let existing {
            try await checkUpdate(save, existing: existing, ownShare: ownShare, parentShare: parentShare, newShare: newShare)
            pending.update(row)
            if existing.shareID != newShare {
                try await flush()
                try await moveSubtree(of: existing, from: existing.shareID, to: newShare, recordSeq: seq)
            }
        } else {
            try RecordRules.checkCreate(save, newShare: newShare, access: access)
            pending.insert(row)
        }
        if oneAtATime { try await flush() }
        let saved = RecordRules.saved(save, zone: zone, existing: existing, now: context.now, actor: actor, seq: seq, share: newShare)
        if save.recordType == .folder { folders[save.recordName] = saved }
        return saved
    }

    /// A folder of the zone, read once per operation.
    private func folder(_ recordName: String) async throws -> Record? {
        if let known = folders[recordName] { return known }
        let record = try await metadata(recordName)
        if let record, record.recordType == .folder { folders[recordName] = record }
        return record
    }

    /// A rule's error; a `serverRecordChanged` gets the server's record attached.
    private func withServerRecord(_ error: NotesError, _ recordName: String) async throws -> NotesError {
        guard error.code == .serverRecordChanged else { return error }
        var error = error
        error.serverRecord = try await PostgresRecords.fetch(sql, recordName, in: zone)
        return error
    }

    private func checkUpdate(_ save: RecordSave, existing: Record, ownShare: String?, parentShare: String?, newShare: String?) async throws {
        let moved: Bool
        do {
            moved = try RecordRules.checkUpdate(save, existing: existing, ownShare: ownShare, newShare: newShare, access: access)
        } catch {
            throw try await withServerRecord(error, existing.recordName)
        }
        guard moved else { return }
        try await flush()
        // Walk up from the new parent: meeting the record itself means a cycle.
        var cursor = save.parent
        var steps = 0
        while let current = cursor {
            try RecordRules.checkAncestor(current, of: save, existing: existing, steps: steps)
            cursor = try await sql.value(
                "SELECT parent FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(current)", as: String.self
            )
            .flatMap { $0.isEmpty ? nil : $0 }
            steps += 1
        }
        if try RecordRules.checkMove(existing: existing, ownShare: ownShare, parentShare: parentShare, newShare: newShare) {
            try RecordRules.checkNoNestedShare(existing, below: try await PostgresRecords.descendants(sql, of: existing.recordName, in: zone), access: access)
        }
    }

    /// A record changed share: its participants' views must drop or gain it and every
    /// record below it.
    private func moveSubtree(of record: Record, from oldShare: String?, to newShare: String?, recordSeq: Int64) async throws {
        if let oldShare {
            try await sql.execute(
                """
                INSERT INTO tombstones (owner, zone, record_name, seq, share_id, kind, deleted_at)
                VALUES (\(zone.owner), \(zone.name), \(record.recordName), \(recordSeq), \(oldShare), 'left', \(context.now.storedValue))
                """)
        }
        guard record.recordType == .folder else { return }
        folders.removeAll()
        forgetReadAhead()
        let writer = PostgresShareWriter(context: context)
        for name in try await PostgresRecords.descendants(sql, of: record.recordName, in: zone) {
            try await writer.setShare(of: name, in: zone, from: oldShare, to: newShare)
        }
    }
}

/// Share bookkeeping that several operations need inside their transaction (what
/// `ShareWriter` does for SQLite).
struct PostgresShareWriter {
    let context: PostgresWrite
    var sql: SQL { context.sql }

    /// Moves one record from one share to another (either may be `nil`), with a new
    /// change seq so that owners and the new share's participants fetch it, and a
    /// 'left' tombstone so that the old share's participants drop it.
    func setShare(of recordName: String, in zone: ZoneID, from oldShare: String?, to newShare: String?) async throws {
        let seq = try context.nextSeq(in: zone)
        try await sql.execute("UPDATE records SET share_id = \(newShare), seq = \(seq) WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(recordName)")
        if let oldShare, oldShare != newShare {
            try await sql.execute(
                """
                INSERT INTO tombstones (owner, zone, record_name, seq, share_id, kind, deleted_at)
                VALUES (\(zone.owner), \(zone.name), \(recordName), \(seq), \(oldShare), 'left', \(context.now.storedValue))
                """)
        }
    }

    /// Stops a share: every participant is removed (and told), and its records become
    /// private again. The row stays, marked stopped, so participants' database changes
    /// can report the zone gone.
    func stop(shareID: String, zone: ZoneID) async throws {
        let seq = try context.nextSeq(in: zone)
        let accounts = try await sql.column(
            """
            SELECT account FROM participants WHERE share_id = \(shareID) AND account IS NOT NULL AND role != 'owner' AND status != 'removed'
            """, as: String.self)
        try await sql.execute("UPDATE participants SET status = 'removed', changed_seq = \(seq) WHERE share_id = \(shareID) AND role != 'owner'")
        try await sql.execute("UPDATE shares SET stopped = TRUE WHERE id = \(shareID)")
        for name in try await sql.column("SELECT record_name FROM records WHERE share_id = \(shareID)", as: String.self) {
            try await setShare(of: name, in: zone, from: shareID, to: nil)
        }
        for account in accounts {
            context.notices.insert(ChangeNotice(account: account, scope: .shared, zone: nil))
        }
        context.notices.insert(ChangeNotice(account: zone.owner, scope: .private, zone: zone))
    }
}
