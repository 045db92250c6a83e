#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
public import NotesFS
import NotesModel
import NotesReplica
import NotesSearch
import Synchronization

/// `.history/`, `.trash/` and `.notes/`: read-only folders the mount makes up from
/// notesd's answers, beside the tree the replica holds.
///
/// - `FOLDER/.history/NOTE/` holds one file per version of a note of that folder, named
///   `2026-11-24T12-30-05Z_alice_3f.md` (time, author, change tag) so that `ls` sorts
///   them by time; `cp` one out to bring its text back as a new version.
/// - `.trash/` at a zone's root (`private/`, a notebook, a zone-wide share) holds what
///   was deleted there and is kept by notesd (`--trash-days`); `mv` an entry out of it
///   to bring the same note back (a folder comes back with what was trashed in it).
///
/// - `FOLDER/.search/QUERY/` holds the notes of that folder (at any depth) that match
///   QUERY (`notes search`'s syntax), as symbolic links to where they are, named
///   `01 plan.md`, `02 …` so that `ls` shows them best first. It is answered from the
///   mount's own index of its replica (`ReplicaSearch`), never from notesd: it works
///   offline and never waits for the network.
/// - `.notes/events` at the mount's root: one JSON line per change that came from
///   notesd (`EventLog`), for `tail -f`.
///
/// None is listed in its folder (as ZFS's `.zfs`): `grep -r`, backups and indexers
/// would otherwise read every note's whole history from notesd. Both are there for a
/// name: `ls FOLDER/.history`, `cd private/.trash`. They are volatile: the kernel keeps
/// nothing of them; the mount keeps notesd's last answer about a zone until a change to
/// that zone comes from notesd, or for 30 s.
///
/// A look into `.history/` or `.trash/` never holds a kernel thread on notesd for long:
/// the mount asks notesd in a task of its own and waits at most `patience` for it; past
/// that it answers with notesd's last answer about the same thing, even from before a
/// change, or fails with `ETIMEDOUT`. The task goes on and keeps its answer for the next
/// look; while it runs, the same question is not asked again. Offline, nothing is asked:
/// the last answer, or `EAGAIN` at once.
public final class VirtualFolders: FileSystem, Sendable {
    public static let historyName = ".history"
    public static let trashName = ".trash"
    public static let notesName = ".notes"
    public static let searchName = ".search"
    /// Matches a `.search/QUERY/` folder shows, best first.
    static let mostSearchHits = 100
    /// Virtual inodes have this bit; the tree's never do (`InodeNumbers`).
    static let virtualBit: Inode = 1 << 63

    let tree: NoteTree
    let service: any NotesService
    /// Asked for the zone after a restore, so the note shows up soon.
    let requestFetch: @Sendable () -> Void
    /// What `.notes/events` reads.
    let events: EventLog?
    /// What `.search/` asks; nil until the mount opened its index (in the background).
    let search = Mutex<ReplicaSearch?>(nil)
    let table = Mutex(Table())

    enum Kind: Hashable {
        case historyRoot(folder: Inode)
        case history(RecordKey, name: String)
        case version(RecordKey, tag: String)
        case trashRoot(ZoneID)
        case trashed(ZoneID, recordName: String)
        /// `.notes/` at the mount's root, and its `events`.
        case notesFolder
        case events
        /// `FOLDER/.search/`, and one query's results in it, and one result.
        case searchRoot(folder: Inode)
        case searchResults(folder: Inode, query: String)
        case searchHit(folder: Inode, query: String, RecordKey)
    }

    struct Entry {
        var kind: Kind
        var isDirectory: Bool
        var size: Int = 0
        var modified: Double = 0
        /// A folder's entries by name, as last read, and when.
        var children: [String: Inode] = [:]
        var loadedAt: Double = 0
        /// The answer of notesd the children were made from (its time): the same answer
        /// again gives the same children, without making them anew.
        var madeFrom: Double?
        /// The folder's listing as made from that answer (`list`).
        var listing: [DirectoryEntry]?
        /// A symbolic link's target.
        var linkTarget: String?

        /// Takes what notesd says now.
        mutating func refresh(size: Int, modified: Double) {
            self.size = size
            self.modified = modified
        }
    }

    struct Table {
        var trash: [ZoneID: Answer<[TrashedRecord]>] = [:]
        var versions: [RecordKey: Answer<[RecordVersion]>] = [:]
        var asking: [Question: Asking] = [:]
        var entries: [Inode: Entry] = [:]
        var inodes: [Kind: Inode] = [:]
        /// The inodes of trashed records, by zone and record name: a trash of 10,000 is
        /// made with one look-up of its zone, not one per entry.
        var trashed: [ZoneID: [String: Inode]] = [:]
        var next: Inode = 1
        /// The text each open version or trashed note reads, by handle, until it is
        /// closed: nothing of a note's history stays in memory once it is read.
        var open: [UInt64: [UInt8]] = [:]
        var nextHandle: UInt64 = 1

        /// Forgets notesd's answers older than `answerLifetime` (they would be asked
        /// again anyway), so that versions and trashes looked at once do not stay.
        mutating func forgetOldAnswers(now: Double) {
            trash = trash.filter { now - $0.value.at < VirtualFolders.answerLifetime }
            versions = versions.filter { now - $0.value.at < VirtualFolders.answerLifetime }
        }

        mutating func inode(_ kind: Kind, isDirectory: Bool, size: Int, modified: Double) -> Inode {
            let inode: Inode
            if let known = inodes[kind] {
                inode = known
            } else {
                inode = newInode(kind, isDirectory: isDirectory)
                inodes[kind] = inode
            }
            entries[inode]?.refresh(size: size, modified: modified)
            return inode
        }

        mutating func newInode(_ kind: Kind, isDirectory: Bool) -> Inode {
            let inode = VirtualFolders.virtualBit | next
            next += 1
            entries[inode] = Entry(kind: kind, isDirectory: isDirectory)
            return inode
        }
    }

    /// Whether the mount is in touch with notesd (`SyncEngine.isOnline`).
    let isOnline: @Sendable () -> Bool

    public init(
        tree: NoteTree, service: any NotesService, events: EventLog? = nil, isOnline: @escaping @Sendable () -> Bool = { true },
        requestFetch: @escaping @Sendable () -> Void
    ) {
        self.events = events
        self.tree = tree
        self.service = service
        self.isOnline = isOnline
        self.requestFetch = requestFetch
    }

    static func isVirtual(_ inode: Inode) -> Bool { inode & virtualBit != 0 }

    // MARK: Making entries

    /// The inode of an entry, the same for the same thing while the mount runs.
    func inode(_ kind: Kind, isDirectory: Bool, size: Int = 0, modified: Double = 0) -> Inode {
        table.withLock { table in table.inode(kind, isDirectory: isDirectory, size: size, modified: modified) }
    }

    func entry(_ inode: Inode) throws(FileSystemError) -> Entry {
        guard let entry = table.withLock({ $0.entries[inode] }) else { throw FileSystemError(ENOENT) }
        return entry
    }

    func attributes(_ inode: Inode, _ entry: Entry) -> FileAttributes {
        var size = entry.size
        var modified = entry.modified
        switch entry.kind {
        case .events, .notesFolder:
            // As a log grows: its size now, changed now.
            if case .events = entry.kind { size = events?.size ?? 0 }
            modified = Date().timeIntervalSince1970
        default:
            break
        }
        var attributes = FileAttributes(
            inode: inode, isDirectory: entry.isDirectory, permissions: entry.isDirectory ? 0o555 : 0o444, size: UInt64(size),
            linkCount: entry.isDirectory ? 2 : 1, uid: tree.owner.uid, gid: tree.owner.gid,
            modified: modified, changed: modified, accessed: modified)
        attributes.volatile = true
        if let target = entry.linkTarget {
            attributes.linkTarget = target
            attributes.permissions = 0o777
            attributes.size = UInt64(target.utf8.count)
        }
        return attributes
    }

    /// Reads a folder's entries from notesd again (every look at a virtual folder does).
    func load(_ inode: Inode) throws(FileSystemError) -> [String: Inode] {
        let folder = try entry(inode)
        var children: [String: Inode] = [:]
        var madeFrom: Double?
        switch folder.kind {
        case .historyRoot(let folderInode):
            for (name, key) in tree.notes(in: folderInode) {
                children[name] = self.inode(.history(key, name: name), isDirectory: true, modified: folder.modified)
            }
        case .history(let key, let name):
            let versions = try versions(of: key)
            let suffix = (name as NSString).pathExtension.isEmpty ? "" : "." + (name as NSString).pathExtension
            for version in versions {
                let fileName = "\(Self.stamp(version.modifiedAt))_\(version.modifiedBy)_\(version.changeTag)\(suffix)"
                children[fileName] = self.inode(
                    .version(key, tag: version.changeTag), isDirectory: false, size: version.body?.utf8.count ?? 0,
                    modified: version.modifiedAt.timeIntervalSince1970)
            }
        case .trashRoot(let zone):
            let answer = try trash(of: zone)
            if folder.madeFrom == answer.at { return folder.children }
            children = names(for: answer.value, in: zone, under: nil)
            madeFrom = answer.at
        case .trashed(let zone, let recordName):
            let answer = try trash(of: zone)
            if folder.madeFrom == answer.at { return folder.children }
            children = names(for: answer.value, in: zone, under: recordName)
            madeFrom = answer.at
        case .notesFolder:
            if events != nil { children["events"] = self.inode(.events, isDirectory: false) }
        case .searchRoot:
            // Reachable by name only: the queries asked are no listing.
            break
        case .searchResults(let folderInode, let query):
            children = try searchResults(query, from: folderInode)
        case .version, .events, .searchHit:
            throw FileSystemError(ENOTDIR)
        }
        table.withLock { table in
            table.entries[inode]?.children = children
            table.entries[inode]?.loadedAt = Date().timeIntervalSince1970
            table.entries[inode]?.madeFrom = madeFrom
            table.entries[inode]?.listing = nil
        }
        return children
    }

    /// A folder's entries for a lookup: as listed in the last second (`ls -l`, `cat`
    /// after `ls` look up what the listing just read), else read again.
    func recent(_ inode: Inode) throws(FileSystemError) -> [String: Inode] {
        let folder = try entry(inode)
        if Date().timeIntervalSince1970 - folder.loadedAt < 1 { return folder.children }
        return try load(inode)
    }

    // MARK: Names

    public func lookup(parent: Inode, name: String) throws(FileSystemError) -> FileAttributes {
        if Self.isVirtual(parent) {
            if case .searchRoot(let folder) = try entry(parent).kind {
                // Any name is a query; it is run when its folder is read.
                let inode = inode(.searchResults(folder: folder, query: name), isDirectory: true, modified: Date().timeIntervalSince1970)
                return attributes(inode, try entry(inode))
            }
            guard let child = try recent(parent)[name] else { throw FileSystemError(ENOENT) }
            return attributes(child, try entry(child))
        }
        if name == Self.historyName, tree.folderPlace(parent) != nil {
            let inode = inode(.historyRoot(folder: parent), isDirectory: true, modified: Date().timeIntervalSince1970)
            return attributes(inode, try entry(inode))
        }
        if name == Self.notesName, parent == InodeNumbers.root, events != nil {
            let inode = inode(.notesFolder, isDirectory: true)
            return attributes(inode, try entry(inode))
        }
        if name == Self.searchName, tree.searchScope(parent) != nil {
            let inode = inode(.searchRoot(folder: parent), isDirectory: true, modified: Date().timeIntervalSince1970)
            return attributes(inode, try entry(inode))
        }
        if name == Self.trashName, let zone = tree.zoneRoot(parent) {
            let inode = inode(.trashRoot(zone), isDirectory: true, modified: Date().timeIntervalSince1970)
            return attributes(inode, try entry(inode))
        }
        return try tree.lookup(parent: parent, name: name)
    }

    public func retain(_ inode: Inode) {
        if !Self.isVirtual(inode) { tree.retain(inode) }
    }

    public func forget(_ inode: Inode, count: UInt64) {
        if !Self.isVirtual(inode) { tree.forget(inode, count: count) }
    }

    public func attributes(of inode: Inode) throws(FileSystemError) -> FileAttributes {
        guard Self.isVirtual(inode) else { return try tree.attributes(of: inode) }
        return attributes(inode, try entry(inode))
    }

    public func list(_ inode: Inode) throws(FileSystemError) -> [DirectoryEntry] {
        guard Self.isVirtual(inode) else { return try tree.list(inode) }
        guard try entry(inode).isDirectory else { throw FileSystemError(ENOTDIR) }
        // Unsorted (`ls` sorts; sorting 10,000 names cost more than listing them), and
        // the entries read under one lock.
        let children = try load(inode)
        return table.withLock { table in
            // A trash listed again from the same answer: the same listing.
            let folder = table.entries[inode]
            if let listing = folder?.listing, folder?.madeFrom != nil { return listing }
            let listing = children.compactMap { name, child in
                table.entries[child].map { DirectoryEntry(name: name, attributes: attributes(child, $0)) }
            }
            if folder?.madeFrom != nil { table.entries[inode]?.listing = listing }
            return listing
        }
    }

    // MARK: Changes: none inside, but a trashed entry may move out

    public func rename(parent: Inode, name: String, newParent: Inode, newName: String, noReplace: Bool) throws(FileSystemError) {
        switch (Self.isVirtual(parent), Self.isVirtual(newParent)) {
        case (false, false):
            try tree.rename(parent: parent, name: name, newParent: newParent, newName: newName, noReplace: noReplace)
        case (true, false):
            try restore(parent: parent, name: name, into: newParent, as: newName)
        default:
            throw FileSystemError(EACCES)
        }
    }

    public func makeDirectory(parent: Inode, name: String) throws(FileSystemError) -> FileAttributes {
        if Self.isVirtual(parent) || Self.reserved(name) { throw FileSystemError(EACCES) }
        return try tree.makeDirectory(parent: parent, name: name)
    }

    public func create(parent: Inode, name: String, mode: OpenMode) throws(FileSystemError) -> (FileAttributes, UInt64) {
        if Self.isVirtual(parent) || Self.reserved(name) { throw FileSystemError(EACCES) }
        return try tree.create(parent: parent, name: name, mode: mode)
    }

    /// Names the mount keeps for its own folders.
    static func reserved(_ name: String) -> Bool { name == historyName || name == trashName || name == notesName || name == searchName }

    public func unlink(parent: Inode, name: String) throws(FileSystemError) {
        if Self.isVirtual(parent) { throw FileSystemError(EACCES) }
        try tree.unlink(parent: parent, name: name)
    }

    public func removeDirectory(parent: Inode, name: String) throws(FileSystemError) {
        if Self.isVirtual(parent) { throw FileSystemError(EACCES) }
        try tree.removeDirectory(parent: parent, name: name)
    }

    public func setAttributes(of inode: Inode, _ changes: AttributeChanges) throws(FileSystemError) -> FileAttributes {
        if Self.isVirtual(inode) { throw FileSystemError(EACCES) }
        return try tree.setAttributes(of: inode, changes)
    }

    // MARK: Content

    public func open(_ inode: Inode, mode: OpenMode) throws(FileSystemError) -> UInt64 {
        guard Self.isVirtual(inode) else { return try tree.open(inode, mode: mode) }
        if mode.writes { throw FileSystemError(EACCES) }
        let entry = try entry(inode)
        if entry.isDirectory { throw FileSystemError(EISDIR) }
        let text: [UInt8]
        switch entry.kind {
        case .events:
            return 0
        case .version(let key, let tag):
            guard let version = try versions(of: key).first(where: { $0.changeTag == tag }) else { throw FileSystemError(ENOENT) }
            text = Array((version.body ?? "").utf8)
        case .trashed(let zone, let recordName):
            // A trashed note's text is its last version.
            text = Array((try versions(of: RecordKey(zone: zone, recordName: recordName)).first?.body ?? "").utf8)
        default:
            text = []
        }
        return table.withLock { table in
            let handle = table.nextHandle
            table.nextHandle += 1
            table.open[handle] = text
            return handle
        }
    }

    public func read(_ inode: Inode, handle: UInt64, offset: Int, size: Int) throws(FileSystemError) -> [UInt8] {
        guard Self.isVirtual(inode) else { return try tree.read(inode, handle: handle, offset: offset, size: size) }
        if case .events = try entry(inode).kind { return events?.read(offset: offset, size: size) ?? [] }
        return table.withLock { table in
            guard let content = table.open[handle], offset < content.count else { return [] }
            return Array(content[offset..<min(content.count, offset + size)])
        }
    }

    public func write(_ inode: Inode, handle: UInt64, offset: Int, bytes: UnsafeRawBufferPointer) throws(FileSystemError) -> Int {
        if Self.isVirtual(inode) { throw FileSystemError(EACCES) }
        return try tree.write(inode, handle: handle, offset: offset, bytes: bytes)
    }

    public func flush(_ inode: Inode, handle: UInt64) throws(FileSystemError) {
        if !Self.isVirtual(inode) { try tree.flush(inode, handle: handle) }
    }

    public func release(_ inode: Inode, handle: UInt64) {
        if Self.isVirtual(inode) {
            _ = table.withLock { $0.open.removeValue(forKey: handle) }
        } else {
            tree.release(inode, handle: handle)
        }
    }

    public func fsync(_ inode: Inode, handle: UInt64) throws(FileSystemError) {
        if !Self.isVirtual(inode) { try tree.fsync(inode, handle: handle) }
    }

    public func statistics() -> FileSystemStatistics { tree.statistics() }

    public func extendedAttribute(of inode: Inode, name: String) throws(FileSystemError) -> [UInt8] {
        if Self.isVirtual(inode) { throw FileSystemError(ENODATA) }
        return try tree.extendedAttribute(of: inode, name: name)
    }

    public func extendedAttributeNames(of inode: Inode) throws(FileSystemError) -> [String] {
        Self.isVirtual(inode) ? [] : try tree.extendedAttributeNames(of: inode)
    }

    public func setExtendedAttribute(of inode: Inode, name: String, value: [UInt8]) throws(FileSystemError) {
        if Self.isVirtual(inode) { throw FileSystemError(EACCES) }
        try tree.setExtendedAttribute(of: inode, name: name, value: value)
    }

    public func removeExtendedAttribute(of inode: Inode, name: String) throws(FileSystemError) {
        if Self.isVirtual(inode) { throw FileSystemError(EACCES) }
        try tree.removeExtendedAttribute(of: inode, name: name)
    }

    public func readLink(_ inode: Inode) throws(FileSystemError) -> String {
        guard Self.isVirtual(inode) else { return try tree.readLink(inode) }
        guard let target = try entry(inode).linkTarget else { throw FileSystemError(EINVAL) }
        return target
    }

    public func checkAccess(_ inode: Inode, mask: Int32) throws(FileSystemError) {
        guard Self.isVirtual(inode) else { return try tree.checkAccess(inode, mask: mask) }
        if mask & W_OK != 0 { throw FileSystemError(EACCES) }
        _ = try entry(inode)
    }
}
