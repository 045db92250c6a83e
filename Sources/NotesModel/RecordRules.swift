package import Foundation

/// The decisions of a modify operation that do not depend on how records are stored:
/// each store reads what a rule needs inside its transaction and asks here, so that
/// every backend answers the same request with the same error.
package enum RecordRules {
    // MARK: Change tags

    /// A change tag is the record's change sequence number in base 36: short, opaque
    /// to clients, and different after every modification.
    package static func changeTag(_ seq: Int64) -> String { String(seq, radix: 36) }

    /// The sequence number of a `before` tag of a history page (`nil`: the first page).
    package static func versionsBefore(_ before: String?, limit: Int) throws(NotesError) -> Int64? {
        guard (1...Limits.maxVersionsPage).contains(limit) else {
            throw NotesError(.invalidArguments, "limit must be 1 to \(Limits.maxVersionsPage); it was \(limit).")
        }
        guard let before else { return nil }
        let digits = before.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) }
        guard digits, before.utf8.count <= 12, let seq = Int64(before, radix: 36) else {
            throw NotesError(.invalidArguments, "before must be a change tag from the previous page; \"\(before)\" is not one.")
        }
        return seq
    }

    /// A record's history page is refused when the record is not the caller's to read
    /// (a deleted one only for the owner, who reads its last use's history).
    package static func unknownRecord(_ recordName: String) -> NotesError {
        NotesError(.unknownItem, "There is no record \(recordName) in this zone.")
    }

    // MARK: Order of a batch

    /// The saves in the order they are applied: saves of records that exist (they carry a
    /// change tag) before new ones, each group in the order sent, so that a rename in the
    /// batch frees its old name before a new record takes it (a mount that renamed `z.bin`
    /// away and made a new `z.bin` sent the new one first, and the unique name index,
    /// checked row by row, refused it); and a folder created in the same operation before
    /// what it holds. A cycle among the saves is refused.
    package static func ordered(_ saves: [RecordSave]) throws(NotesError) -> [RecordSave] {
        try parentsFirst(saves.filter { $0.changeTag != nil } + saves.filter { $0.changeTag == nil })
    }

    static func parentsFirst(_ saves: [RecordSave]) throws(NotesError) -> [RecordSave] {
        let byName = Dictionary(saves.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
        var done = Set<String>()
        var ordered: [RecordSave] = []
        ordered.reserveCapacity(saves.count)
        for save in saves where !done.contains(save.recordName) {
            var chain: [RecordSave] = []
            var onChain = Set<String>()
            var cursor: RecordSave? = save
            while let current = cursor, !done.contains(current.recordName) {
                guard onChain.insert(current.recordName).inserted else {
                    throw NotesError(.invalidArguments, "The saves make \(current.recordName) its own ancestor; folders cannot contain themselves.")
                }
                chain.append(current)
                cursor = current.parent.flatMap { byName[$0] }
            }
            for item in chain.reversed() {
                done.insert(item.recordName)
                ordered.append(item)
            }
        }
        return ordered
    }

    /// The error of a whole batch when the item `current` failed with `failure`: that
    /// item's own error, and `batchRequestFailed` for every other.
    package static func batchFailure(_ failure: NotesError, at current: String, deletes: [RecordDelete], saves: [RecordSave]) -> NotesError {
        var failure = failure
        if failure.code == .constraintViolation {
            let name = saves.first { $0.recordName == current }?.name ?? current
            failure.message = "A record named “\(name)” already exists in that folder; choose another name."
        }
        let names = deletes.map(\.recordName) + saves.map(\.recordName)
        failure.itemErrors = names.map { name in
            name == current
                ? NotesError.ItemError(recordName: name, code: failure.code, message: failure.message, serverRecord: failure.serverRecord)
                : NotesError.ItemError(recordName: name, code: .batchRequestFailed, message: "Not applied: \(current) failed in the same operation.")
        }
        return failure
    }

    /// Over the owner's quota, only what frees space goes through (deletes, smaller
    /// saves): a full account can always be cleaned up.
    package static func checkQuota(_ storage: StoragePolicy, owner: String, actor: String, usedBefore: Int64, usedAfter: Int64) throws(NotesError) {
        guard let quota = storage.quotaBytes, usedAfter > quota, usedAfter > usedBefore else { return }
        throw NotesError(.quotaExceeded, StoragePolicy.fullMessage(owner: owner, actor: actor, used: usedAfter, quota: quota))
    }

    // MARK: Deletes

    /// Decides a delete of `existing` (as read, `nil` if missing). Returns the share
    /// whose root it is (deleting it stops that share). A stale tag throws
    /// `serverRecordChanged` without the server's record: the store attaches it.
    package static func checkDelete(_ delete: RecordDelete, existing: Record?, access: ZoneAccess) throws(NotesError) -> String? {
        guard let existing, access.canRead(shareID: existing.shareID) else {
            throw NotesError(.unknownItem, "There is no record \(delete.recordName) in this zone; it may have been deleted already.")
        }
        let rootOf = access.rootShares[existing.recordName]
        try SharingRules.check(rootOf == nil ? .deleteRecord : .deleteRoot, standing: access.standing(forShare: existing.shareID), what: "“\(existing.name)”")
        if let tag = delete.changeTag, tag != existing.changeTag {
            throw NotesError(.serverRecordChanged, "“\(existing.name)” changed on the server since you last fetched it; fetch it again before deleting.")
        }
        return rootOf
    }

    /// When a folder delete can be applied: at once, or after the operation's saves.
    package enum FolderDelete { case now, afterSaves }

    /// A folder still holding records that the operation neither deletes nor moves
    /// elsewhere stays. One emptied only by the operation's saves (a mount that moved a
    /// note out and then removed the folder, in one upload) goes after them: deletes go
    /// first otherwise, and such a folder came back (fsstress, renames and rmdirs).
    /// - Parameter savedParents: the folder each save of the operation puts its record
    ///   in (`""` for the top of the zone).
    package static func checkEmptied(
        _ folder: Record, children: [String], deleting: Set<String>, savedParents: [String: String]
    ) throws(NotesError) -> FolderDelete {
        let staying = children.filter { !deleting.contains($0) }
        if staying.isEmpty { return .now }
        if staying.allSatisfy({ child in savedParents[child].map { $0 != folder.recordName } ?? false }) { return .afterSaves }
        throw NotesError(.folderNotEmpty, "The folder “\(folder.name)” is not empty; delete what it holds first.")
    }

    /// The folder each save puts its record in, for `checkEmptied`.
    package static func savedParents(_ saves: [RecordSave]) -> [String: String] {
        Dictionary(saves.map { ($0.recordName, $0.parent ?? "") }, uniquingKeysWith: { _, last in last })
    }

    // MARK: Saves

    /// A new name must be visible; one stored before that rule may stay as it is.
    package static func checkName(_ save: RecordSave, existing: Record?) throws(NotesError) {
        if existing?.name != save.name { try Names.validateNewName(save.name, what: "name") }
    }

    /// Decides the parent a save names (`parent` as read, `nil` if missing) and returns
    /// the share that covers it.
    package static func checkParent(_ save: RecordSave, _ parentName: String, parent: Record?, existing: Record?, access: ZoneAccess) throws(NotesError) -> String? {
        // A participant may not see the parent of a share's root; keeping the parent a
        // record already has needs no access to it, choosing a new one does.
        let keepsParent = existing?.parent == parentName
        guard let parent, keepsParent || access.canRead(shareID: parent.shareID) else {
            throw NotesError(.referenceViolation, "The parent folder \(parentName) of “\(save.name)” does not exist in this zone; it may have been deleted.")
        }
        guard parent.recordType == .folder else {
            throw NotesError(.invalidArguments, "“\(parent.name)” is a \(parent.recordType.rawValue), not a folder; only folders hold records.")
        }
        return parent.shareID
    }

    /// Decides a save of a record that does not exist.
    package static func checkCreate(_ save: RecordSave, newShare: String?, access: ZoneAccess) throws(NotesError) {
        if save.changeTag != nil {
            throw NotesError(.unknownItem, "“\(save.name)” no longer exists on the server; it was deleted. Save it again as a new record.")
        }
        try SharingRules.check(.createRecord, standing: access.standing(forShare: newShare), what: "that folder")
    }

    /// Decides a save over `existing` up to its move: rights, change tag, type. Returns
    /// whether the save moves the record (then `checkMove` and the store's walks follow).
    /// A stale tag throws `serverRecordChanged` without the server's record: the store
    /// attaches it.
    package static func checkUpdate(_ save: RecordSave, existing: Record, ownShare: String?, newShare: String?, access: ZoneAccess) throws(NotesError) -> Bool {
        let standing = access.standing(forShare: existing.shareID)
        guard access.canRead(shareID: existing.shareID) else {
            throw NotesError(.permissionFailure, "You have no access to the record \(save.recordName).")
        }
        let what = "“\(existing.name)”"
        let moved = existing.parent != save.parent
        if ownShare != nil {
            try SharingRules.check(.modifyRoot, standing: standing, what: what)
            if moved { try SharingRules.check(.moveRoot, standing: standing, what: what) }
        } else {
            try SharingRules.check(.modifyRecord, standing: standing, what: what)
        }
        if save.changeTag != existing.changeTag {
            let message =
                save.changeTag == nil
                ? "A record named \(save.recordName) already exists; fetch it and save with its change tag."
                : "\(what) changed on the server since you last fetched it; merge with the server's version and save again."
            throw NotesError(.serverRecordChanged, message)
        }
        guard existing.recordType == save.recordType else {
            throw NotesError(.invalidArguments, "\(what) is a \(existing.recordType.rawValue); a save cannot turn it into a \(save.recordType.rawValue).")
        }
        guard moved else { return false }
        if !access.isOwner && newShare != existing.shareID {
            throw NotesError(.permissionFailure, "You can move \(what) only within the share that holds it.")
        }
        return true
    }

    /// One step of the walk up from a moved record's new parent (`ancestor`): meeting
    /// the record itself means a cycle; a walk too long means the tree is corrupt.
    package static func checkAncestor(_ ancestor: String, of save: RecordSave, existing: Record, steps: Int) throws(NotesError) {
        if ancestor == save.recordName {
            throw NotesError(.invalidArguments, "Cannot move the folder “\(existing.name)” into itself or one of its own subfolders.")
        }
        if steps > 10_000 { throw NotesError(.internalError, "The folder tree of this zone is corrupt (a cycle).") }
    }

    /// Whether a move must look below the record for shares of its own (a folder moving
    /// into another share); throws when a share root would move into a shared folder.
    package static func checkMove(existing: Record, ownShare: String?, parentShare: String?, newShare: String?) throws(NotesError) -> Bool {
        if ownShare != nil, parentShare != nil {
            throw NotesError(.alreadyShared, "“\(existing.name)” is the root of a share and cannot move into another shared folder.")
        }
        return newShare != nil && newShare != existing.shareID && existing.recordType == .folder
    }

    /// Shares cannot nest: a folder holding a share root stays out of other shares.
    package static func checkNoNestedShare(_ existing: Record, below: [String], access: ZoneAccess) throws(NotesError) {
        if let nested = below.first(where: { access.rootShares[$0] != nil }) {
            throw NotesError(.alreadyShared, "“\(existing.name)” holds \(nested), which has a share of its own; shares cannot nest.")
        }
    }

    /// What a save returns: the record without its content (the client sent it and has it).
    package static func saved(_ save: RecordSave, zone: ZoneID, existing: Record?, now: Date, actor: String, seq: Int64, share: String?) -> Record {
        Record(
            recordName: save.recordName, zone: zone, recordType: save.recordType, name: save.name, parent: save.parent,
            body: nil, bytes: nil, createdAt: existing?.createdAt ?? now, modifiedAt: now,
            modifiedBy: actor, changeTag: changeTag(seq), shareID: share)
    }
}

/// A page of a record's history as it is read, newest first: the record itself heads
/// the first page; a page ends at `limit` versions or past `Limits.maxChangesPageBytes`
/// of text (after its first), and one more that would not fit says more are coming.
package struct VersionPage {
    private var versions: [RecordVersion] = []
    private var count = 0
    private var bytes = 0
    private let limit: Int
    private let beforeSeq: Int64?
    private(set) var moreComing = false

    package init(record: Record?, beforeSeq: Int64?, limit: Int) {
        self.limit = limit
        self.beforeSeq = beforeSeq
        if let record, beforeSeq == nil {
            append(
                RecordVersion(
                    changeTag: record.changeTag, name: record.name, parent: record.parent, body: record.body,
                    size: record.contentSize, modifiedBy: record.modifiedBy, modifiedAt: record.modifiedAt))
        }
    }

    /// Whether the next version read still fits; if not, the page says more are coming.
    package mutating func fitsAnother() -> Bool {
        if count >= limit || (count > 0 && bytes >= Limits.maxChangesPageBytes) {
            moreComing = true
            return false
        }
        return true
    }

    package mutating func append(_ version: RecordVersion) {
        add(bodyBytes: version.body?.utf8.count ?? 0)
        versions.append(version)
    }

    private mutating func add(bodyBytes: Int) {
        bytes += bodyBytes
        count += 1
    }

    /// How many of the next versions, whose texts have these sizes, the page takes: for
    /// a store that reads the sizes before the texts.
    package func fitting(bodySizes: [Int]) -> Int {
        var page = self
        var taken = 0
        for size in bodySizes {
            guard page.fitsAnother() else { break }
            page.add(bodyBytes: size)
            taken += 1
        }
        return taken
    }

    /// The page; a first page with nothing in it is a record the caller cannot read.
    package func finish(_ recordName: String) throws(NotesError) -> API.Versions {
        guard !versions.isEmpty || beforeSeq != nil else { throw RecordRules.unknownRecord(recordName) }
        return API.Versions(versions: versions, moreComing: moreComing)
    }
}
