import Foundation
import NotesFS
import NotesModel
import NotesReplica

/// Files' content: loaded from the replica when first needed, saved to it through the
/// replica's writer, and held in memory within `contentBudget` (see `fitBudget`).
extension NoteTree {
    /// Bytes of file content the mount holds in memory now (spilled content not
    /// counted): at most `contentBudget`, give or take files under `smallestSpill`.
    public var residentContentBytes: Int { state.withLock { $0.contents.residentBytes } }

    /// Files whose content the mount holds in spill files now.
    public var spilledContentFiles: Int { state.withLock { $0.contents.spilledCount } }

    func loadContent(_ state: inout State, _ inode: Inode) throws(Failure) {
        guard let node = state.nodes[inode], !state.contents.has(inode), !node.isDirectory else { return }
        var content: [UInt8] = []
        var tag: String?
        if let key = node.recordKey {
            do { (content, tag) = try replica.contentAndTag(of: key) ?? ([], nil) } catch { throw Errno.of(error) }
        }
        install(&state, inode, content: content, tag: tag)
    }

    /// Reads a file's content from the replica with the tree unlocked, so that a read
    /// that misses the cache (and may wait for the replica's queued commits) holds up
    /// no other call. The content is taken only if nothing changed the replica's notes
    /// or the node meanwhile (`contentEpoch`); otherwise the caller loads it locked.
    func loadContentUnlocked(_ inode: Inode) throws(Failure) {
        let wanted: (key: RecordKey, epoch: UInt64)? = try locked { state throws(Failure) in
            guard let node = state.nodes[inode] else { throw Failure(ENOENT) }
            guard !state.contents.has(inode), !node.isDirectory, let key = node.recordKey else { return nil }
            return (key, state.contentEpoch)
        }
        guard let wanted else { return }
        let loaded: ([UInt8], String?)
        do { loaded = try replica.contentAndTag(of: wanted.key) ?? ([], nil) } catch { throw Errno.of(error) }
        state.withLock { state in
            guard state.contentEpoch == wanted.epoch, !state.contents.has(inode), state.nodes[inode]?.recordKey == wanted.key else { return }
            install(&state, inode, content: loaded.0, tag: loaded.1)
        }
    }

    /// Makes `content`, the replica's version `tag`, what the tree holds for `inode`.
    private func install(_ state: inout State, _ inode: Inode, content: [UInt8], tag: String?) {
        guard let node = state.nodes[inode] else { return }
        state.contents.set(inode, content)
        state.nodes[inode]!.loadedTag = tag
        // A handle still open read an older version: a save made from what it read must
        // present that version, so the kernel's view stays outdated until a save uses it.
        if node.seenIsOutdated, let older = state.handles.olderRead(of: inode, than: tag) {
            state.nodes[inode]!.seenTag = older
        } else {
            state.nodes[inode]!.seenTag = tag
            state.nodes[inode]!.seenIsOutdated = false
        }
        fitBudget(&state, sparing: inode)
    }

    /// The record a node saves as, and the content to save with it (`nil` when only the
    /// name or place changed).
    private func recordToSave(_ state: State, _ inode: Inode, _ node: Node, _ key: RecordKey) throws(Failure) -> (ReplicaRecord, [UInt8]?) {
        let size = state.contents.count(inode) ?? node.size
        // A node shown as `name (2)` (another held its name when it came) keeps its own name.
        let record = ReplicaRecord(
            zone: key.zone, recordName: key.recordName, recordType: node.recordType ?? .note, name: state.displaced[inode] ?? node.name, parent: node.recordParent,
            size: size, shareID: node.shareID, changeTag: nil, createdAt: node.changed, modifiedAt: node.modified, modifiedBy: account)
        return (record, node.contentDirty ? try state.contents.bytes(inode) ?? [] : nil)
    }

    /// Saves a record node (content too when it changed) and queues it for upload,
    /// without waiting for SQLite, so that no replica write happens under the tree's
    /// lock: the save is queued in the replica's writer (in order with every other
    /// replica write) and the content stays in the cache until it is committed. Without `waited`, a failure marks the file unsaved (saved again
    /// on every tick); with it, the caller waits for the ticket and handles the failure.
    /// `nil` when there was nothing to save, or its content could not be read back from
    /// its spill file (then it stays dirty and is saved again). A save `retrying` one that
    /// failed logs its failure at debug level: the first failure said it at error level.
    func persistLater(_ state: inout State, _ inode: Inode, durable: Bool = false, waited: Bool = false, retrying: Bool = false) -> WriteTicket? {
        guard var node = state.nodes[inode], let key = node.recordKey else {
            state.nodes[inode]?.contentDirty = false
            return nil
        }
        guard let (record, content) = try? recordToSave(state, inode, node, key) else {
            logger.error("could not read back the content of \(node.name) from its spill file in \(cacheDirectory). It is saved again shortly.")
            state.unsaved.insert(inode)
            return nil
        }
        Self.noteLocalChange(&state, key)
        var onFailure: (@Sendable (ReplicaError) -> Void)?
        if !waited { onFailure = { @Sendable [weak self] (error: ReplicaError) -> Void in self?.saveFailed(inode, key: key, error, retrying: retrying) } }
        let ticket = replica.saveLocalLater(record, content: content, durable: durable, base: node.contentDirty ? node.staleBase : nil, onFailure: onFailure)
        node.size = record.size
        if node.contentDirty { node.seenIsOutdated = false }  // (the save carries the stale base now)
        node.contentDirty = false
        state.nodes[inode] = node
        state.saving[inode] = ticket
        return ticket
    }

    /// Queues a record's delete in the replica (unlink and rename answer at once); one
    /// the replica fails to record is tried again on every tick.
    func deleteLater(_ state: inout State, _ key: RecordKey, retrying: Bool = false) {
        Self.noteLocalChange(&state, key)
        replica.deleteLocalLater(key) { [weak self] error in
            guard let self else { return }
            logger.log(
                level: retrying ? .debug : .error, "could not record the delete of \(key.recordName) in the replica: \(error.message) It is tried again shortly.")
            _ = self.state.withLock { $0.unsavedDeletes.insert(key) }
        }
    }

    /// A queued save failed: the file is saved again on every tick (its content is
    /// still in the cache: see `saving`).
    func saveFailed(_ inode: Inode, key: RecordKey, _ error: ReplicaError, retrying: Bool = false) {
        logger.log(
            level: retrying ? .debug : .error, "could not save \(key.recordName) in the replica: \(error.message) It stays in memory and is saved again shortly.")
        state.withLock { state in
            guard let node = state.nodes[inode], node.recordKey == key else { return }
            if state.contents.has(inode) { state.nodes[inode]!.contentDirty = true }
            state.unsaved.insert(inode)
        }
    }

    /// Whether a node's content may leave the cache: nothing of it waits to be saved.
    func mayDropContent(_ state: inout State, _ inode: Inode) -> Bool {
        guard let node = state.nodes[inode], !node.contentDirty else { return false }
        guard let ticket = state.saving[inode] else { return true }
        guard replica.hasSettled(ticket) else { return false }
        state.saving[inode] = nil
        return true
    }

    /// Keeps a closed record's content for a quick reopen, within `contentBudget`: a
    /// spilled one, or one over a sixteenth of the budget, goes back to being read from
    /// the replica. Called whenever a closed file's content may have been loaded or
    /// changed (release, truncate, rename): content held outside the count is what left
    /// the mount at 513 MB resident after fsstress. Scratch files keep theirs (they have
    /// nowhere else); content whose save is still queued stays until it is committed.
    func keepContent(_ state: inout State, _ inode: Inode) {
        guard let node = state.nodes[inode], node.recordKey != nil, node.openCount == 0, let count = state.contents.count(inode) else { return }
        if count > contentBudget / 16 || state.contents.isSpilled(inode) {
            if mayDropContent(&state, inode) {
                state.contents.remove(inode)
                state.kept.remove(inode)
            } else {
                state.kept.insert(inode)
            }
            return
        }
        state.contents.trim(inode)
        state.kept.insert(inode)
        fitBudget(&state)
    }

    /// Holds the content in memory to `contentBudget`: first closed files that are saved
    /// go (they are read from the replica when opened again), then the largest of the
    /// rest (open files, scratch files, saves still queued) move to spill files, so that
    /// what runs in the mount cannot grow it past the budget whatever it writes.
    /// - Parameter sparing: a file whose content is being loaded for the caller.
    func fitBudget(_ state: inout State, sparing: Inode? = nil) {
        // Closed files kept in spill files only while their save was queued: once it is
        // committed they go back to being read from the replica (and the spill file goes).
        for old in state.contents.spilledCount > 0 ? Array(state.kept) : []
        where state.contents.isSpilled(old) && state.nodes[old]?.openCount == 0 && mayDropContent(&state, old) {
            state.contents.remove(old)
            state.kept.remove(old)
        }
        guard state.contents.residentBytes > contentBudget else { return }
        for old in Array(state.kept) where state.contents.residentBytes > contentBudget && old != sparing {
            guard let kept = state.nodes[old], state.contents.has(old) else {
                state.kept.remove(old)
                continue
            }
            if kept.openCount == 0 && kept.recordKey != nil && mayDropContent(&state, old) {
                state.contents.remove(old)
                state.kept.remove(old)
            }
        }
        guard state.contents.residentBytes > contentBudget else { return }
        // Small files stay: spilling them would save little and cost a file each.
        for (inode, _) in state.contents.resident.filter({ $0.count >= Self.smallestSpill }).sorted(by: { $0.count > $1.count }) {
            guard state.contents.residentBytes > contentBudget else { return }
            do {
                try state.contents.spill(inode)
            } catch {
                logger.warning("could not move a file's content out of memory into \(cacheDirectory): \(error). It stays in memory.")
                return
            }
        }
    }

    /// Content below this many bytes is never spilled.
    static let smallestSpill = 64 << 10

    /// Drops what writes left in memory since the last save (the file reads as the replica
    /// holds it again), and has the kernel drop its pages of it: they hold those writes.
    /// A file with no record behind it (a scratch file) has nothing to go back to and
    /// becomes empty.
    func discardUnsavedContent(_ state: inout State, _ inode: Inode) {
        guard let node = state.nodes[inode], node.contentDirty else { return }
        state.contents.set(inode, node.recordKey == nil ? [] : nil)
        state.nodes[inode]!.contentDirty = false
        // Not from inside this request: the kernel holds the pages of the write that is
        // being answered, and invalidating them before the answer would wait for ever.
        DispatchQueue.global().async { [self] in invalidate([.content(inode)]) }
    }
}
