#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
public import NotesFS
import NotesModel
import NotesReplica

/// The kernel's calls. Each runs under the tree's lock; changes to records are queued in
/// the replica's writer in the order they are made (see `GroupCommit`): `close` and
/// `fsync` wait for their commit after leaving the lock, the rest answer at once.
extension NoteTree: FileSystem {
    typealias Failure = FileSystemError

    func locked<T>(_ body: (inout State) throws(Failure) -> T) throws(Failure) -> T {
        try state.withLock { (state: inout State) throws(Failure) -> T in try body(&state) }
    }

    func attributes(_ state: State, _ inode: Inode) throws(Failure) -> FileAttributes {
        guard let node = state.nodes[inode] else { throw Failure(ENOENT) }
        // A folder's link count is 2 plus one for each folder in it (each one's `..`).
        let subfolders = node.isDirectory ? Int(node.children.folders) : 0
        return attributes(node, access: Self.access(state, node, account: account), contentCount: state.contents.count(inode), subfolders: subfolders)
    }

    // MARK: Names

    public func lookup(parent: Inode, name: String) throws(FileSystemError) -> FileAttributes {
        try locked { state throws(Failure) in
            guard let folder = state.nodes[parent] else { throw Failure(ENOENT) }
            guard folder.isDirectory else { throw Failure(ENOTDIR) }
            guard let inode = folder.children[name] else { throw Failure(ENOENT) }
            state.nodes[inode]!.lookups += 1
            return try attributes(state, inode)
        }
    }

    public func retain(_ inode: Inode) {
        state.withLock { state in state.nodes[inode]?.lookups += 1 }
    }

    public func forget(_ inode: Inode, count: UInt64) {
        state.withLock { state in
            guard var node = state.nodes[inode] else { return }
            node.lookups = node.lookups >= count ? node.lookups - count : 0
            state.nodes[inode] = node
            Self.dropIfUnused(&state, inode)
        }
    }

    public func attributes(of inode: Inode) throws(FileSystemError) -> FileAttributes {
        try locked { state throws(Failure) in try attributes(state, inode) }
    }

    public func list(_ inode: Inode) throws(FileSystemError) -> [DirectoryEntry] {
        var entries = try locked { state throws(Failure) in
            guard let folder = state.nodes[inode] else { throw Failure(ENOENT) }
            guard folder.isDirectory else { throw Failure(ENOTDIR) }
            return try folder.children.map { (name, child) throws(Failure) in
                DirectoryEntry(name: name, attributes: try attributes(state, child))
            }
        }
        // Sorted (so that listings repeat) after the lock is released: sorting a folder
        // of 100,000 notes takes tens of milliseconds that no other call should wait for.
        entries.sort { $0.name < $1.name }
        return entries
    }

    // MARK: Creating and removing

    public func create(parent: Inode, name: String, mode: OpenMode) throws(FileSystemError) -> (FileAttributes, UInt64) {
        let result = try locked { state throws(Failure) in
            let inode = try makeNode(&state, parent: parent, name: name, directory: false).inode
            state.nodes[inode]!.lookups += 1
            state.nodes[inode]!.openCount += 1
            let handle = state.handles.open(inode, appends: mode.appends, writes: true, now: clock())
            return (try attributes(state, inode), handle)
        }
        return result
    }

    public func makeDirectory(parent: Inode, name: String) throws(FileSystemError) -> FileAttributes {
        // The save is queued under the lock and waited for after it, as `close` does: no
        // other call waits on SQLite meanwhile.
        let (result, ticket, zoneMade) = try locked { state throws(Failure) in
            let (inode, zoneMade) = try makeNode(&state, parent: parent, name: name, directory: true)
            state.nodes[inode]!.lookups += 1
            let ticket = try persistOrFail(&state, inode, durable: false)
            return (try attributes(state, inode), ticket, zoneMade)
        }
        if let zoneMade { try waitForZone(zoneMade, undo: .made) }
        if let ticket { try waitForSave(ticket, of: result.inode) }
        onLocalChange()
        return result
    }

    /// A notebook folder made or removed in `private/`, its zone row queued under the lock.
    struct ZoneChange {
        let zone: ZoneID
        let ticket: WriteTicket
    }

    /// What to take back when a zone row could not be written.
    enum ZoneUndo { case made, removed }

    /// Waits, outside the lock, for a notebook's zone row; when the replica refused it,
    /// the tree takes the folder back (or puts it back) and the caller gets the errno.
    private func waitForZone(_ change: ZoneChange, undo: ZoneUndo) throws(FileSystemError) {
        do {
            try replica.wait(for: change.ticket)
        } catch {
            state.withLock { state in
                let inode = InodeNumbers.zoneFolder(change.zone)
                let listed = state.nodes[InodeNumbers.privateRoot]?.children[change.zone.name]
                switch undo {
                case .made:
                    guard listed == inode, state.nodes[inode]?.children.isEmpty == true else { return }
                    // The kernel gets an error, not the entry counted for it.
                    state.nodes[inode]!.lookups = max(0, state.nodes[inode]!.lookups - 1)
                    state.zones[change.zone] = nil
                    Self.detach(&state, inode)
                case .removed:
                    guard listed == nil else { return }
                    state.zones[change.zone] = .private
                    _ = Self.zoneContainer(&state, change.zone, scope: .private, announce: false)
                }
            }
            throw Errno.of(error)
        }
    }

    /// A new file or folder in `parent`: a scratch file for editor names, a zone for a
    /// folder made in `private/`, else a record (taking back a record that an editor
    /// renamed away from this very name a moment ago).
    private func makeNode(_ state: inout State, parent: Inode, name: String, directory: Bool) throws(Failure) -> (inode: Inode, zoneMade: ZoneChange?) {
        guard let folder = state.nodes[parent], folder.attached || parent == InodeNumbers.root else { throw Failure(ENOENT) }
        guard folder.isDirectory else { throw Failure(ENOTDIR) }
        guard Self.access(state, parent, account: account).mayWrite else { throw Failure(EACCES) }
        guard folder.children[name] == nil else { throw Failure(EEXIST) }
        do { try Names.validateNewName(name, what: "name") } catch { throw Failure(EINVAL) }
        let now = Date().timeIntervalSince1970
        var node = Node(inode: 0, parent: parent, name: name, kind: .scratch, isDirectory: directory, modified: now, changed: now, accessed: now)
        var inode: Inode
        if !directory && ScratchNames.isScratch(name) {
            inode = Self.newLocalInode(&state)
        } else if directory && parent == InodeNumbers.privateRoot {
            let zone = ZoneID(owner: account, name: name)
            let ticket = replica.saveZoneLater(ReplicaZone(id: zone, scope: .private, changeToken: nil, pending: .create))
            state.zones[zone] = .private
            return (Self.zoneContainer(&state, zone, scope: .private, announce: false), ZoneChange(zone: zone, ticket: ticket))
        } else {
            guard let (zone, parentRecord) = Self.container(state, parent) else { throw Failure(EACCES) }
            let key: RecordKey
            if !directory, let taken = state.editorSaves.takeBack(FolderName(parent: parent, name: name), now: clock()) {
                key = taken.record.key
                node.recordType = taken.record.recordType
                // Where the file is made now, which may differ from the record's folder
                // when the note was shown elsewhere while its folder was missing.
                node.recordParent = parentRecord
                node.shareID = taken.record.shareID
            } else {
                key = RecordKey(zone: zone, recordName: newRecordName())
                node.recordType = directory ? .folder : Self.recordType(forName: name)
                node.recordParent = parentRecord
                node.shareID = folder.shareID ?? state.shares.values.first { $0.zone == zone && $0.isZoneWide }?.id
            }
            node.kind = .record(key)
            node.contentDirty = !directory
            inode = InodeNumbers.record(key)
            if state.nodes[inode] != nil { inode = Self.newLocalInode(&state) }
            state.index[key] = inode
        }
        let dirty = node.contentDirty
        node = Node(
            inode: inode, parent: parent, name: name, kind: node.kind, isDirectory: directory, recordType: node.recordType,
            shareID: node.shareID, recordParent: node.recordParent, modified: now, changed: now, accessed: now)
        node.contentDirty = dirty
        state.nodes[inode] = node
        state.contents.set(inode, directory ? nil : [])
        state.nodes[parent]!.children.insert(name, inode, isFolder: directory)
        state.nodes[parent]!.modified = now
        return (inode, nil)
    }

    static func recordType(forName name: String) -> RecordType {
        name.lowercased().hasSuffix(".md") ? .note : .file
    }

    public func unlink(parent: Inode, name: String) throws(FileSystemError) {
        loadOpenContentUnlocked(parent: parent, name: name)
        try locked { state throws(Failure) in
            let inode = try removable(state, parent: parent, name: name)
            guard !state.nodes[inode]!.isDirectory else { throw Failure(EISDIR) }
            try remove(&state, inode)
            Self.reclaimNames(&state)
        }
        invalidatePendingLater()
        onLocalChange()
    }

    public func removeDirectory(parent: Inode, name: String) throws(FileSystemError) {
        let zoneRemoved = try locked { state throws(Failure) -> ZoneChange? in
            let inode = try removable(state, parent: parent, name: name)
            let node = state.nodes[inode]!
            guard node.isDirectory else { throw Failure(ENOTDIR) }
            guard node.children.isEmpty else { throw Failure(ENOTEMPTY) }
            if case .zoneFolder(let zone) = node.kind {
                let ticket = replica.saveZoneLater(ReplicaZone(id: zone, scope: .private, changeToken: nil, pending: .delete))
                state.zones[zone] = nil
                Self.detach(&state, inode)
                return ZoneChange(zone: zone, ticket: ticket)
            }
            try remove(&state, inode)
            Self.reclaimNames(&state)
            return nil
        }
        if let zoneRemoved { try waitForZone(zoneRemoved, undo: .removed) }
        invalidatePendingLater()
        onLocalChange()
    }

    /// Before a call that may remove the file `name` of `parent`: when a handle holds it
    /// open and its content is not in memory, the content is read from the replica now,
    /// with the tree unlocked, for the handle to keep reading once the record is gone
    /// (`remove` reads it under the lock only if it changed meanwhile).
    private func loadOpenContentUnlocked(parent: Inode, name: String) {
        let open: Inode? = state.withLock { state in
            guard let inode = state.nodes[parent]?.children[name], let node = state.nodes[inode], node.openCount > 0, !node.isDirectory,
                !state.contents.has(inode)
            else { return nil }
            return inode
        }
        if let open { try? loadContentUnlocked(open) }
    }

    /// The node `name` in `parent`, if the account may remove it from there.
    private func removable(_ state: State, parent: Inode, name: String) throws(Failure) -> Inode {
        guard let folder = state.nodes[parent] else { throw Failure(ENOENT) }
        guard folder.isDirectory else { throw Failure(ENOTDIR) }
        guard let inode = folder.children[name] else { throw Failure(ENOENT) }
        guard Self.access(state, parent, account: account).mayWrite, Self.access(state, inode, account: account).mayWrite,
            !Self.isShareRootForParticipant(state, inode, account: account)
        else { throw Failure(EACCES) }
        if case .ownerFolder = state.nodes[inode]!.kind { throw Failure(EACCES) }
        return inode
    }

    /// Deletes a node's record (queued for upload) and takes it out of its folder. A
    /// file's record waits `sameNoteWindow` for a new file under its name (see there).
    private func remove(_ state: inout State, _ inode: Inode) throws(Failure) {
        if try handOver(&state, deleting: inode) {
            state.nodes[inode]!.kind = .scratch
        } else if let key = state.nodes[inode]!.recordKey {
            let now = Date().timeIntervalSince1970
            // An open handle keeps reading what it had (read before the delete empties
            // the replica's row); the file is scratch from now on.
            if state.nodes[inode]!.openCount > 0 && !state.contents.has(inode) {
                state.contents.set(inode, (try? replica.contentAndTag(of: key))?.0 ?? [])
                fitBudget(&state)
            }
            deleteLater(&state, key)
            let node = state.nodes[inode]!
            if !node.isDirectory {
                let record = ReplicaRecord(
                    zone: key.zone, recordName: key.recordName, recordType: node.recordType ?? .note, name: node.name, parent: node.recordParent,
                    size: 0, shareID: node.shareID, changeTag: nil, createdAt: now, modifiedAt: now, modifiedBy: account)
                state.editorSaves.noteRemoved(
                    EditorSaves.Removed(record: record, since: clock(), staleBase: node.staleBase, deletedInReplica: true),
                    from: FolderName(parent: node.parent, name: node.name))
            }
            if state.index[key] == inode { state.index[key] = nil }
            state.nodes[inode]!.kind = .scratch
        }
        Self.detach(&state, inode)
    }

    // MARK: Rename

    public func rename(parent: Inode, name: String, newParent: Inode, newName: String, noReplace: Bool) throws(FileSystemError) {
        if !noReplace { loadOpenContentUnlocked(parent: newParent, name: newName) }
        try locked { state throws(Failure) in
            try rename(&state, parent: parent, name: name, newParent: newParent, newName: newName, noReplace: noReplace)
            Self.reclaimNames(&state)
        }
        invalidatePendingLater()
        onLocalChange()
    }

    private func rename(_ state: inout State, parent: Inode, name: String, newParent: Inode, newName: String, noReplace: Bool) throws(Failure) {
        let inode = try removable(state, parent: parent, name: name)
        guard let target = state.nodes[newParent], target.isDirectory else { throw Failure(ENOTDIR) }
        // Records never leave their zone (parents stay inside one zone): EXDEV, decided
        // before the destination's rights, makes `mv` copy instead.
        let source = Self.container(state, parent)
        let destination = Self.container(state, newParent)
        if state.nodes[inode]!.kind != .scratch && source?.zone != destination?.zone { throw Failure(EXDEV) }
        guard let destination, Self.access(state, newParent, account: account).mayWrite else { throw Failure(EACCES) }
        do { try Names.validateNewName(newName, what: "name") } catch { throw Failure(EINVAL) }
        if parent == newParent && name == newName { return }
        var node = state.nodes[inode]!
        if case .zoneFolder = node.kind { throw Failure(EXDEV) }
        let existing = target.children[newName]
        if let existing {
            if noReplace { throw Failure(EEXIST) }
            let other = state.nodes[existing]!
            if other.isDirectory != node.isDirectory { throw Failure(node.isDirectory ? ENOTDIR : EISDIR) }
            if other.isDirectory && !other.children.isEmpty { throw Failure(ENOTEMPTY) }
            guard Self.access(state, existing, account: account).mayWrite, !Self.isShareRootForParticipant(state, existing, account: account) else {
                throw Failure(EACCES)
            }
            if case .zoneFolder = other.kind { throw Failure(EXDEV) }
        }
        if node.isDirectory {
            var walk = newParent
            while walk > InodeNumbers.root {
                if walk == inode { throw Failure(EINVAL) }
                walk = state.nodes[walk]?.parent ?? 0
            }
        }

        let now = Date().timeIntervalSince1970
        let toScratch = !node.isDirectory && ScratchNames.isScratch(newName)
        var deleteAfter: RecordKey?
        if toScratch, let key = node.recordKey {
            // An editor moves the note aside (vim's backup): the record waits for a new
            // file under the old name, and the renamed file is a local backup.
            try loadContent(&state, inode)
            node = state.nodes[inode]!
            let record = ReplicaRecord(
                zone: key.zone, recordName: key.recordName, recordType: node.recordType ?? .note, name: name, parent: node.recordParent,
                size: state.contents.count(inode) ?? 0, shareID: node.shareID, changeTag: nil, createdAt: now, modifiedAt: node.modified, modifiedBy: account)
            state.editorSaves.noteRemoved(
                EditorSaves.Removed(record: record, since: clock(), staleBase: node.staleBase), from: FolderName(parent: parent, name: name))
            state.index[key] = nil
            Self.noteLocalChange(&state, key)
            node.kind = .scratch
        } else if !node.isDirectory && !toScratch {
            var identity: (key: RecordKey, type: RecordType?, share: String?, base: String?)?
            if let existing, let key = state.nodes[existing]!.recordKey {
                let other = state.nodes[existing]!
                identity = (key, other.recordType, other.shareID, other.staleBase)
            } else if let taken = state.editorSaves.takeBack(FolderName(parent: newParent, name: newName), now: clock()) {
                identity = (taken.record.key, taken.record.recordType, taken.record.shareID, taken.staleBase)
            }
            if let identity {
                // Write-then-rename over a note: the note keeps its record (and so its share,
                // participants and history) and takes the new content.
                try loadContent(&state, inode)
                node = state.nodes[inode]!
                if let own = node.recordKey, own != identity.key {
                    deleteAfter = own
                    if state.index[own] == inode { state.index[own] = nil }
                }
                if let existing { state.nodes[existing]!.kind = .scratch }
                node.kind = .record(identity.key)
                node.recordType = identity.type ?? Self.recordType(forName: newName)
                node.recordParent = destination.parent
                node.shareID = identity.share
                node.contentDirty = true
                node.inheritBase(identity.base)
                state.index[identity.key] = inode
            } else if node.kind == .scratch {
                try loadContent(&state, inode)
                node = state.nodes[inode]!
                let key = RecordKey(zone: destination.zone, recordName: newRecordName())
                node.kind = .record(key)
                node.recordType = Self.recordType(forName: newName)
                node.recordParent = destination.parent
                node.shareID = target.shareID
                node.contentDirty = true
                state.index[key] = inode
            } else if let key = node.recordKey {
                // Kept by the rename, unless deleted while a file fills the name it left.
                node.recordParent = destination.parent
                state.editorSaves.noteMovedAway(inode, key: key, from: FolderName(parent: parent, name: name), now: clock())
            } else {
                node.recordParent = destination.parent
            }
        } else {
            node.recordParent = destination.parent
        }
        if let existing {
            let replaced = state.nodes[existing]!
            if let key = replaced.recordKey {
                deleteLater(&state, key)
                state.index[key] = nil
                state.nodes[existing]!.kind = .scratch
            }
            Self.detach(&state, existing)
        }
        state.nodes[parent]!.children.remove(name)
        state.nodes[parent]!.modified = now
        node.parent = newParent
        node.name = newName
        state.displaced[inode] = nil
        node.changed = now
        state.nodes[inode] = node
        state.nodes[newParent]!.children.insert(newName, inode, isFolder: node.isDirectory)
        state.nodes[newParent]!.modified = now
        if node.recordKey != nil { _ = persistLater(&state, inode) }
        keepContent(&state, inode)
        if let deleteAfter { deleteLater(&state, deleteAfter) }
    }

    public func open(_ inode: Inode, mode: OpenMode) throws(FileSystemError) -> UInt64 {
        // A writer needs the content: read it from the replica before taking the lock
        // (the locked load below then finds it, or loads it again if a change came).
        if mode.writes || mode.truncates { try loadContentUnlocked(inode) }
        return try locked { state throws(Failure) in
            guard let node = state.nodes[inode] else { throw Failure(ENOENT) }
            guard !node.isDirectory else { throw Failure(EISDIR) }
            if mode.writes && !Self.access(state, inode, account: account).mayWrite { throw Failure(EACCES) }
            // What this handle may read first: the kernel's cached pages of an older
            // version while their invalidation is under way (they never reach the mount),
            // else the version held now. The handle is open before the content is loaded,
            // so that loading a newer version keeps the older one as a save's base.
            // A reader opens from memory: its READs load the content (unlocked), and
            // only those the kernel's page cache misses reach the mount at all. Until
            // then it may read what the kernel holds: the version it last got.
            let readsOnly = !mode.writes && !mode.truncates
            let loaded = state.contents.has(inode)
            let handle = state.handles.open(
                inode, appends: mode.appends, writes: mode.writes, now: clock(),
                mayRead: node.kernelMayHold ?? (loaded ? node.loadedTag : readsOnly ? node.seenTag : nil))
            if readsOnly && !loaded {
                state.nodes[inode]!.openCount += 1
                return handle
            }
            do throws(Failure) {
                try loadContent(&state, inode)
            } catch {
                _ = state.handles.close(handle)
                throw error
            }
            if state.handles.readTag(handle) == nil { state.handles.noteRead(handle, tag: state.nodes[inode]!.loadedTag, fromStart: true) }
            if mode.truncates && state.contents.count(inode) ?? 0 > 0 {
                state.contents.set(inode, [])
                state.nodes[inode]!.contentDirty = true
                state.nodes[inode]!.modified = Date().timeIntervalSince1970
            }
            state.nodes[inode]!.openCount += 1
            return handle
        }
    }

    public func read(_ inode: Inode, handle: UInt64, offset: Int, size: Int) throws(FileSystemError) -> [UInt8] {
        try loadContentUnlocked(inode)
        return try locked { state throws(Failure) in
            guard state.nodes[inode] != nil else { throw Failure(ENOENT) }
            try loadContent(&state, inode)
            state.handles.noteRead(handle, tag: state.nodes[inode]!.loadedTag, fromStart: offset == 0)
            return try state.contents.read(inode, offset: offset, size: size)
        }
    }

    public func write(_ inode: Inode, handle: UInt64, offset: Int, bytes: UnsafeRawBufferPointer) throws(FileSystemError) -> Int {
        try locked { state throws(Failure) in
            guard state.nodes[inode] != nil else { throw Failure(ENOENT) }
            guard Self.access(state, inode, account: account).mayWrite else { throw Failure(EACCES) }
            try loadContent(&state, inode)
            if state.handles.isOversized(handle) { throw Failure(EFBIG) }
            let count = state.contents.count(inode) ?? 0
            let offset = state.handles.appends(handle) ? count : offset
            let (end, overflow) = offset.addingReportingOverflow(bytes.count)
            if overflow || end > Limits.maxBodyBytes {
                discardUnsavedContent(&state, inode)
                state.handles.markOversized(handle)
                throw Failure(EFBIG)
            }
            if end > count && !hasRoom(for: end - count) { throw Failure(ENOSPC) }
            try state.contents.write(inode, offset: offset, bytes)
            state.nodes[inode]!.contentDirty = true
            if end > count { fitBudget(&state) }
            state.nodes[inode]!.modified = Date().timeIntervalSince1970
            return bytes.count
        }
    }

    /// `close`: returns once the file's writes are committed to the replica (they
    /// survive `kill -9` of the mount), waiting outside the tree's lock so that other
    /// calls go on meanwhile, and sharing one commit with whatever else is queued.
    public func flush(_ inode: Inode, handle: UInt64) throws(FileSystemError) {
        let ticket = try locked { state throws(Failure) in
            guard state.nodes[inode]?.contentDirty == true else { return WriteTicket?.none }
            return try persistOrFail(&state, inode, durable: false)
        }
        guard let ticket else { return }
        try waitForSave(ticket, of: inode)
        onLocalChange()
    }

    /// `fsync`: as `flush`, committed with `synchronous = FULL` (on disk, not only in
    /// the operating system's cache).
    public func fsync(_ inode: Inode, handle: UInt64) throws(FileSystemError) {
        let ticket = try locked { state throws(Failure) in
            guard state.nodes[inode]?.contentDirty == true else { return WriteTicket?.none }
            return try persistOrFail(&state, inode, durable: true)
        }
        if let ticket {
            try waitForSave(ticket, of: inode)
            onLocalChange()
        } else {
            do { try replica.makeDurable() } catch { throw Errno.of(error) }
        }
    }

    /// Queues the save that `close` or `fsync` waits for. A file whose content could
    /// not be read back from its spill file stays dirty and fails the call with EIO,
    /// rather than `close` returning as if it were saved.
    private func persistOrFail(_ state: inout State, _ inode: Inode, durable: Bool) throws(Failure) -> WriteTicket? {
        let ticket = persistLater(&state, inode, durable: durable, waited: true)
        if ticket == nil && state.nodes[inode]?.contentDirty == true { throw Failure(EIO) }
        return ticket
    }

    private func waitForSave(_ ticket: WriteTicket, of inode: Inode) throws(FileSystemError) {
        do {
            try replica.wait(for: ticket)
        } catch {
            // Still in memory (an open file's content is never dropped): saved again on
            // the next tick, or by the next close.
            state.withLock { state in
                if state.contents.has(inode) { state.nodes[inode]!.contentDirty = true }
                state.unsaved.insert(inode)
            }
            throw Errno.of(error)
        }
    }

    public func release(_ inode: Inode, handle: UInt64) {
        let uploadNow = state.withLock { state in
            let wrote = state.handles.writes(handle)
            // The last writer gone: a save held back while it was open may go now.
            let lastWriter = state.handles.close(handle)
            guard var node = state.nodes[inode] else { return false }
            node.openCount = max(0, node.openCount - 1)
            state.nodes[inode] = node
            var saved = false
            if node.openCount == 0 {
                if node.contentDirty {
                    saved = persistLater(&state, inode) != nil
                }
                if !wrote && mayDropContent(&state, inode) {
                    // What was only read stays in the kernel's page cache (`keep_cache`),
                    // which serves the next reads without asking: a second copy here
                    // would only grow the mount (a `grep -r` over 100,000 notes filled the
                    // whole budget).
                    state.contents.remove(inode)
                    state.kept.remove(inode)
                } else {
                    keepContent(&state, inode)
                }
                Self.dropIfUnused(&state, inode)
            }
            return saved || lastWriter
        }
        if uploadNow { onLocalChange() }
    }

    /// Whether the upload of a saved file waits: it has been open for writing for less
    /// than `sameNoteWindow`. A shell's `>` saves twice (the dup'd descriptor's close
    /// sends a FLUSH of the emptied file before anything is written): without the wait,
    /// others could see the note empty for a moment. A file kept open for longer (a log
    /// written line by line) goes up as it is saved; a held save holds its zone's queue
    /// behind it, so the wait must stay short.
    func holdsSave(_ key: RecordKey) -> Bool {
        let now = clock()
        return state.withLock { state in
            if state.editorSaves.holdsSave(of: key, now: now) { return true }
            guard let inode = state.index[key], let since = state.handles.writingSince(inode) else { return false }
            return now - since < Self.sameNoteWindow
        }
    }

    /// At unmount, once the kernel can send nothing more: saves every file whose writes
    /// are still only in memory, open or closed. A RELEASE still queued when the session
    /// ended never arrives, so without this a write whose `close` had returned would be
    /// lost (the race that SIGTERM right after `echo >> note` showed). Returns how many
    /// files could not be saved.
    public func saveAllBeforeUnmount() -> Int {
        let saved = state.withLock { state in
            var saved = 0
            let dirty = state.nodes.values.filter(\.contentDirty).map(\.inode)
            for inode in dirty {
                state.unsaved.remove(inode)
                if persistLater(&state, inode) != nil { saved += 1 }
            }
            // Notes moved aside or removed and not taken back: deleted for good now.
            for removed in state.editorSaves.endAll() where !removed.deletedInReplica {
                deleteLater(&state, removed.record.key)
            }
            return saved
        }
        // These saves and deletes, and those queued by earlier calls, are committed
        // before the mount ends; one that failed is back in `unsaved`.
        replica.waitForQueuedWrites()
        if saved > 0 { onLocalChange() }
        return state.withLock { $0.unsaved.count + $0.unsavedDeletes.count }
    }

    /// Saves again what could not be saved when it was closed (the replica's disk was
    /// full), and holds content to its budget again. Called every second. Returns how
    /// many files and deletes were waiting: each failed its last try.
    @discardableResult
    public func saveUnsaved() -> Int {
        let (saved, waiting) = state.withLock { state in
            var saved = 0
            let waiting = state.unsaved.count + state.unsavedDeletes.count
            // Queued in the replica's writer, not written here under the tree's lock: one
            // that fails again comes back to `unsaved` (or `unsavedDeletes`) for the next tick.
            for inode in state.unsaved {
                state.unsaved.remove(inode)
                // (A failed rename left no dirty content, only the name to save.)
                guard let node = state.nodes[inode], node.recordKey != nil, node.openCount == 0 else { continue }
                if persistLater(&state, inode, retrying: true) != nil { saved += 1 }
            }
            for key in state.unsavedDeletes {
                state.unsavedDeletes.remove(key)
                if state.index[key] == nil {
                    deleteLater(&state, key, retrying: true)
                    saved += 1
                }
            }
            // Content kept while its save was queued goes now that it is committed (under
            // load, closed files outlived the budget until something else was opened).
            fitBudget(&state)
            return (saved, waiting)
        }
        if saved > 0 { onLocalChange() }
        return waiting
    }

    public func setAttributes(of inode: Inode, _ changes: AttributeChanges) throws(FileSystemError) -> FileAttributes {
        var saving: WriteTicket?
        let result = try locked { state throws(Failure) in
            guard let node = state.nodes[inode] else { throw Failure(ENOENT) }
            let current = try attributes(state, inode)
            let mayWrite = Self.access(state, inode, account: account).mayWrite
            if let permissions = changes.permissions, permissions != current.permissions { throw Failure(EPERM) }
            if let uid = changes.uid, uid != current.uid { throw Failure(EPERM) }
            if let gid = changes.gid, gid != current.gid { throw Failure(EPERM) }
            if (changes.size != nil || changes.modified != nil || changes.accessed != nil) && !mayWrite { throw Failure(EACCES) }
            if let size = changes.size {
                guard !node.isDirectory else { throw Failure(EISDIR) }
                if size > UInt64(Limits.maxBodyBytes) { throw Failure(EFBIG) }
                try loadContent(&state, inode)
                let count = state.contents.count(inode) ?? 0
                if count != Int(size) {
                    if Int(size) > count && !hasRoom(for: Int(size) - count) { throw Failure(ENOSPC) }
                    try state.contents.truncate(inode, to: Int(size))
                    if Int(size) > count { fitBudget(&state) }
                    state.nodes[inode]!.contentDirty = true
                    state.nodes[inode]!.modified = Date().timeIntervalSince1970
                }
                // `truncate(1)` on a path may never open the file: saved now (queued here,
                // waited for once the lock is released).
                if state.nodes[inode]!.openCount == 0 && state.nodes[inode]!.contentDirty {
                    saving = try persistOrFail(&state, inode, durable: false)
                }
                keepContent(&state, inode)
            }
            if let modified = changes.modified { state.nodes[inode]!.modified = modified }
            if let accessed = changes.accessed { state.nodes[inode]!.accessed = accessed }
            if changes.size != nil || changes.modified != nil || changes.accessed != nil {
                state.nodes[inode]!.changed = Date().timeIntervalSince1970
            }
            return try attributes(state, inode)
        }
        if let saving {
            try waitForSave(saving, of: inode)
            onLocalChange()
        }
        return result
    }

    // MARK: Extended attributes, access, statistics

    static let attributePrefix = "user.notes."

    public func extendedAttributeNames(of inode: Inode) throws(FileSystemError) -> [String] {
        try locked { state throws(Failure) in Array(try extendedAttributes(state, inode).keys).sorted() }
    }

    public func extendedAttribute(of inode: Inode, name: String) throws(FileSystemError) -> [UInt8] {
        try locked { state throws(Failure) in
            guard let value = try extendedAttributes(state, inode)[name] else { throw Failure(ENODATA) }
            return Array(value.utf8)
        }
    }

    /// `user.notes.record`, `.zone`, `.share`, `.permission`, `.participants` (SPEC section 8).
    private func extendedAttributes(_ state: State, _ inode: Inode) throws(Failure) -> [String: String] {
        guard let node = state.nodes[inode] else { throw Failure(ENOENT) }
        var values: [String: String] = [:]
        let shareID: String?
        switch node.kind {
        case .record(let key):
            values["record"] = key.recordName
            values["zone"] = key.zone.description
            shareID = node.shareID
        case .zoneFolder(let zone):
            values["zone"] = zone.description
            shareID = state.shares.values.first { $0.zone == zone && $0.isZoneWide }?.id
        case .privateRoot:
            values["zone"] = ZoneID(owner: account, name: ZoneID.defaultZoneName).description
            shareID = nil
        default:
            return [:]
        }
        switch Self.access(state, inode, account: account) {
        case .owner: values["permission"] = "owner"
        case .readWrite: values["permission"] = "readWrite"
        case .readOnly, .fixed: values["permission"] = "readOnly"
        }
        if let shareID, let share = state.shares[shareID] {
            values["share"] = shareID
            if let json = try? NotesJSON.encoder().encode(share.participants) { values["participants"] = String(decoding: json, as: UTF8.self) }
        } else if let shareID {
            values["share"] = shareID
        }
        return Dictionary(uniqueKeysWithValues: values.map { (Self.attributePrefix + $0.key, $0.value) })
    }

    public func setExtendedAttribute(of inode: Inode, name: String, value: [UInt8]) throws(FileSystemError) {
        try refuseAttributeChange(inode, name: name)
    }

    public func removeExtendedAttribute(of inode: Inode, name: String) throws(FileSystemError) {
        try refuseAttributeChange(inode, name: name)
    }

    /// Extended attributes describe the record; nothing else is stored.
    private func refuseAttributeChange(_ inode: Inode, name: String) throws(Failure) {
        try locked { state throws(Failure) in
            guard state.nodes[inode] != nil else { throw Failure(ENOENT) }
            guard Self.access(state, inode, account: account).mayWrite else { throw Failure(EACCES) }
            if name.hasPrefix(Self.attributePrefix) { throw Failure(EPERM) }
            throw Failure(ENOTSUP)
        }
    }

    /// The tree holds no symbolic links (`.search/` in `VirtualFolders` does).
    public func readLink(_ inode: Inode) throws(FileSystemError) -> String {
        throw FileSystemError(EINVAL)
    }

    public func checkAccess(_ inode: Inode, mask: Int32) throws(FileSystemError) {
        try locked { state throws(Failure) in
            guard state.nodes[inode] != nil else { throw Failure(ENOENT) }
            if mask & W_OK != 0 && !Self.access(state, inode, account: account).mayWrite { throw Failure(EACCES) }
        }
    }

    /// Whether the replica's disk can take `bytes` more (with a margin for SQLite's own
    /// pages): writes are refused with ENOSPC before anything is lost, since the save to
    /// the replica happens after close(2) has returned.
    func hasRoom(for bytes: Int) -> Bool {
        var info = statvfs()
        guard statvfs(cacheDirectory, &info) == 0 else { return true }
        let free = UInt64(info.f_bavail) * UInt64(info.f_frsize)
        return free > UInt64(bytes) * 3 + 256 * 1024
    }

    public func statistics() -> FileSystemStatistics {
        var info = statvfs()
        let files = UInt64(state.withLock { $0.nodes.count })
        if statvfs(cacheDirectory, &info) == 0 {
            let scale = UInt64(info.f_frsize) / 4096
            return FileSystemStatistics(
                totalBlocks: UInt64(info.f_blocks) * max(scale, 1), freeBlocks: UInt64(info.f_bavail) * max(scale, 1),
                files: files + UInt64(info.f_ffree), freeFiles: UInt64(info.f_ffree))
        }
        return FileSystemStatistics(totalBlocks: 1 << 20, freeBlocks: 1 << 19, files: files, freeFiles: 1 << 20)
    }
}
