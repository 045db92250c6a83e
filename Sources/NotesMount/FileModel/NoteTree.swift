#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
public import NotesFS
import NotesModel
public import NotesReplica
import Synchronization
import Logging

/// The file model of a mount: the folder tree of `private/` and `shared/`, built from
/// the replica, changed by the kernel's calls (saved to the replica and queued for
/// upload) and by the server's changes (which invalidate the kernel's caches).
///
/// One lock guards the whole tree; calls are short and never wait on the network.
public final class NoteTree: Sendable {
    struct State {
        var account: String
        var nodes = NodeTable()
        var index = RecordIndex()
        var shares: [String: Share] = [:]
        var zones: [ZoneID: DatabaseScope] = [:]
        /// Counts the changes from notesd applied to each zone, so that what is made up
        /// from notesd's answers about a zone (`VirtualFolders`) knows when to ask again.
        var zoneGenerations: [ZoneID: UInt64] = [:]
        /// Which file is the same note after an editor's save (see `EditorSaves`).
        var editorSaves = EditorSaves()
        var nextLocalInode: Inode = InodeNumbers.localBit
        var handles = HandleTable()
        /// Names the kernel may have cached as missing that now exist (folders made on
        /// demand); drained after the lock by whoever changed the tree from outside.
        var pendingInvalidations: [Invalidation] = []
        /// The bytes of files the mount holds (see `ContentCache`, and `contentBudget`).
        var contents: ContentCache
        /// Closed files whose content stays in memory (within `contentBudget`): opening
        /// them again reads no SQLite.
        var kept: Set<Inode> = []
        /// Closed files whose save to the replica failed (its disk was full): their
        /// content waits in memory and is saved again on every tick.
        var unsaved: Set<Inode> = []
        /// Files whose last save is queued in the replica's writer: their content stays
        /// in memory until it is committed.
        var saving: [Inode: WriteTicket] = [:]
        /// Deletes the replica failed to record (its disk was full), tried again on
        /// every tick.
        var unsavedDeletes: Set<RecordKey> = []
        /// Counts local changes to records; `localChange` holds each record's last one,
        /// so that a page of the server's changes read before it does not undo it.
        var localSerial: UInt64 = 0
        var localChange: [RecordKey: UInt64] = [:]
        /// Counts changes to what the replica holds for the tree's notes (local saves and
        /// deletes, notesd's changes shown): content read from the replica unlocked is
        /// taken only if none came meanwhile (`loadContentUnlocked`).
        var contentEpoch: UInt64 = 0
        /// Records shown somewhere else than in their parent folder, which the tree does
        /// not hold (not yet, or no more): they move in when it arrives.
        var awaitingParent: Set<Inode> = []
        /// Nodes shown under `name (2)` because another node held their name when they
        /// came, with the name they want: they take it as soon as it is free.
        var displaced: [Inode: String] = [:]
    }

    /// Most bytes of file content held in memory, open files included: past it, closed
    /// files are dropped and open ones spilled to the cache directory (see `fitBudget`).
    /// 32 MiB holds thousands of notes; the kernel's page cache serves repeated reads
    /// anyway, and with 64 MiB four fsstress writers took the mount past 200 MB.
    let contentBudget: Int

    let state: Mutex<State>
    let replica: Replica
    /// The account the mount belongs to.
    public let account: String
    let uid: UInt32
    let gid: UInt32
    let cacheDirectory: String
    /// Called after every local change that the sync engine should upload.
    let onLocalChange: @Sendable () -> Void
    let kernel = Mutex<(any KernelCache)?>(nil)
    /// Seconds on the clock that times the same-note window and held saves: the wall
    /// clock, or a test's own (file times stay on the wall clock: users see them).
    let clock: @Sendable () -> Double
    /// Names for new records: random UUIDs, or a simulation's seeded ones (so that a
    /// seed replays the same way: the order of records in tables follows their names).
    let newRecordName: @Sendable () -> String
    let logger = Logger(label: "notes.mount.files")

    /// - Parameters:
    ///   - contentBudget: most bytes of file content held in memory (32 MiB unless a
    ///     test wants to see the bound at work with less).
    ///   - clock: seconds, for the same-note window and held saves (the wall clock
    ///     unless given).
    ///   - recordNames: names for new records (random UUIDs unless given).
    public init(
        account: String, replica: Replica, cacheDirectory: String, contentBudget: Int = 32 << 20,
        clock: (@Sendable () -> Double)? = nil, recordNames: (@Sendable () -> String)? = nil,
        onLocalChange: @escaping @Sendable () -> Void
    ) throws(ReplicaError) {
        self.account = account
        self.clock = clock ?? { Date().timeIntervalSince1970 }
        newRecordName = recordNames ?? { UUID().uuidString.lowercased() }
        self.contentBudget = contentBudget
        self.replica = replica
        self.cacheDirectory = cacheDirectory
        self.onLocalChange = onLocalChange
        uid = getuid()
        gid = getgid()
        state = Mutex(State(account: account, contents: ContentCache(spillDirectory: cacheDirectory)))
        let now = Date().timeIntervalSince1970
        // The rows are placed as they are read, a chunk at a time (each chunk under the
        // lock for a few milliseconds; nothing else asks for it before the mount is up).
        var invalidations: [Invalidation] = []
        try replica.load(inChunksOf: 8_192) { outline in
            state.withLock { state in
                for (inode, name, kind) in [
                    (InodeNumbers.root, "", NodeKind.root), (InodeNumbers.privateRoot, "private", .privateRoot), (InodeNumbers.sharedRoot, "shared", .sharedRoot),
                ] {
                    state.nodes[inode] = Node(inode: inode, parent: InodeNumbers.root, name: name, kind: kind, isDirectory: true, modified: now, changed: now, accessed: now)
                }
                state.nodes[InodeNumbers.root]!.lookups = 1
                state.nodes[InodeNumbers.root]!.children = FolderEntries(folders: ["private": InodeNumbers.privateRoot, "shared": InodeNumbers.sharedRoot])
                for share in outline.shares { state.shares[share.id] = share }
                for zone in outline.zones where zone.pending != .delete {
                    state.zones[zone.id] = zone.scope
                    _ = Self.zoneContainer(&state, zone.id, scope: zone.scope)
                }
                state.nodes.reserveCapacity(state.nodes.count + outline.recordCount)
            }
        } each: { records in
            state.withLock { state in Self.place(&state, records, invalidations: &invalidations) }
            invalidations.removeAll(keepingCapacity: true)
        }
        state.withLock { state in
            Self.showOrphans(&state, invalidations: &invalidations)
            // The kernel knows nothing yet: nothing to invalidate (and an entry
            // invalidated later, once looked up, would cut off whoever stands in it).
            state.pendingInvalidations = []
        }
    }

    /// Connects the kernel's caches once the mount exists.
    public func attach(_ cache: any KernelCache) {
        kernel.withLock { $0 = cache }
    }

    // MARK: Building blocks (all called with the lock held)

    /// Notes a local change to `key` (see `localMark`).
    static func noteLocalChange(_ state: inout State, _ key: RecordKey) {
        state.contentEpoch &+= 1
        state.localSerial += 1
        state.localChange[key] = state.localSerial
    }

    static func newLocalInode(_ state: inout State) -> Inode {
        state.nextLocalInode += 1
        return state.nextLocalInode
    }

    /// The folder node that shows the root of `zone`, made on first use: `private/`
    /// for the default zone, `private/<zone>/`, or `shared/<owner>/<zone>/`.
    /// - Parameter announce: queue invalidations for the kernel (not for a folder the
    ///   kernel itself is making with `mkdir`: it learns of it from the reply, and an
    ///   entry invalidated after that would unhash the folder under whoever is in it).
    static func zoneContainer(_ state: inout State, _ zone: ZoneID, scope: DatabaseScope, announce: Bool = true) -> Inode {
        if scope == .private && zone.isDefault { return InodeNumbers.privateRoot }
        let parent = scope == .private ? InodeNumbers.privateRoot : ownerFolder(&state, zone.owner)
        return folder(&state, inode: InodeNumbers.zoneFolder(zone), kind: .zoneFolder(zone), name: zone.name, parent: parent, announce: announce)
    }

    static func ownerFolder(_ state: inout State, _ owner: String) -> Inode {
        folder(&state, inode: InodeNumbers.ownerFolder(owner), kind: .ownerFolder(owner), name: owner, parent: InodeNumbers.sharedRoot)
    }

    private static func folder(_ state: inout State, inode: Inode, kind: NodeKind, name: String, parent: Inode, announce: Bool = true) -> Inode {
        if state.nodes[inode] == nil {
            let now = Date().timeIntervalSince1970
            state.nodes[inode] = Node(inode: inode, parent: parent, name: name, kind: kind, isDirectory: true, modified: now, changed: now, accessed: now)
        }
        if !state.nodes[inode]!.attached || state.nodes[parent]?.children[name] != inode {
            if announce {
                state.pendingInvalidations.append(.entry(parent, name))
                state.pendingInvalidations.append(.content(parent))
            }
            state.nodes[inode]!.attached = true
            state.nodes[inode]!.parent = parent
            state.nodes[parent]?.children.insert(name, inode, isFolder: true)
        }
        return inode
    }

    /// Where a record belongs: its parent's node, else (a shared hierarchy's root, whose
    /// parent the account cannot see) the owner's folder, else the zone's root.
    static func parentInode(_ state: inout State, of record: ReplicaRecord) -> Inode {
        parentInode(&state, key: record.key, parent: record.parent)
    }

    static func parentInode(_ state: inout State, key: RecordKey, parent: String?) -> Inode {
        let scope = state.zones[key.zone] ?? (key.zone.owner == state.account ? .private : .shared)
        if let parent, let inode = state.index[RecordKey(zone: key.zone, recordName: parent)] {
            return inode
        }
        if scope == .shared {
            let isHierarchyRoot = state.shares.values.contains { $0.zone == key.zone && $0.rootRecordName == key.recordName }
            if isHierarchyRoot || parent != nil { return ownerFolder(&state, key.zone.owner) }
        }
        return zoneContainer(&state, key.zone, scope: scope)
    }

    /// Moves records of shared zones to where the shares now say they belong (a share
    /// learned after its records arrived, a zone-wide share that became a hierarchy
    /// one) and drops shared folders left empty.
    static func replaceSharedRecords(_ state: inout State, invalidations: inout [Invalidation]) {
        let shared = state.nodes.values.filter { node in
            guard let key = node.recordKey, node.attached else { return false }
            return state.zones[key.zone] == .shared
        }
        for node in shared {
            guard let key = node.recordKey else { continue }
            let parent = parentInode(&state, key: key, parent: node.recordParent)
            if parent == node.parent { continue }
            invalidations.append(.entry(node.parent, node.name))
            invalidations.append(.content(node.parent))
            let name = state.displaced[node.inode] ?? node.name
            detach(&state, node.inode, dropping: false)
            attach(&state, node.inode, parent: parent, name: name, invalidations: &invalidations)
        }
        for node in state.nodes.values where node.attached && node.children.isEmpty {
            let emptyZoneFolder: Bool
            if case .zoneFolder(let zone) = node.kind {
                emptyZoneFolder = zone.owner != state.account && !state.shares.values.contains { $0.zone == zone && $0.isZoneWide }
            } else {
                emptyZoneFolder = false
            }
            if emptyZoneFolder {
                invalidations.append(.entry(node.parent, node.name))
                detach(&state, node.inode)
            }
        }
        for node in state.nodes.values where node.attached && node.children.isEmpty {
            if case .ownerFolder = node.kind {
                invalidations.append(.entry(node.parent, node.name))
                detach(&state, node.inode)
            }
        }
    }

    /// Brings nodes in line with records as the replica now holds them: new records get
    /// nodes, changed ones move and drop stale content. Parents are placed before
    /// children whatever the order of `records`.
    static func place(_ state: inout State, _ records: [ReplicaRecord], invalidations: inout [Invalidation]) {
        state.contentEpoch &+= 1
        let now = Date().timeIntervalSince1970
        var newFolders: Set<RecordKey> = []
        // A mount's first page or its whole replica: room made once, not by doubling
        // (each doubling moved every node; a remount of 100,000 notes spent a tenth of
        // its time there).
        if records.count > 1_000 {
            state.nodes.reserveCapacity(state.nodes.count + records.count)
        }
        // Each record's node, found or made here, goes on to be placed (looked up once).
        var places: [(key: RecordKey, parent: String?, name: String, inode: Inode)] = []
        places.reserveCapacity(records.count)
        for record in records {
            let key = record.key
            if let inode = state.index[key], var node = state.nodes[inode] {
                places.append((key, record.parent, record.name, inode))
                // Unsaved writes through a handle still open stay, and so do their size and
                // time: taking the record's instead made the version that replaces them
                // later (a conflict copy's note, as long as the other's text) look like
                // the one already shown, and the mount went on showing the writes.
                let keepsWrites = node.openCount > 0 && node.contentDirty
                if node.size != record.size || node.modified != record.modifiedAt {
                    invalidations.append(.content(inode))
                    if !keepsWrites { state.contents.remove(inode) }
                    if node.kernelMayHold == nil { node.kernelMayHold = node.loadedTag ?? node.seenTag }
                    node.remoteGeneration &+= 1
                    node.seenIsOutdated = true
                    // The next open looks the name up again, which gives the kernel the new
                    // size (it would otherwise put `>>` appends at the old end).
                    // (Files only: an unhashed folder would cut off processes standing in it.)
                    if node.attached && !node.isDirectory { invalidations.append(.entry(node.parent, node.name)) }
                } else if node.kernelMayHold != nil {
                    // Marked by `willApplyRemote`: telling the kernel again once the tree
                    // shows the record ends the note's volatile time.
                    invalidations.append(.content(inode))
                }
                if !keepsWrites {
                    node.size = record.size
                    node.modified = record.modifiedAt
                }
                node.changed = now
                node.shareID = record.shareID
                node.recordType = record.recordType
                node.recordParent = record.parent
                state.nodes[inode] = node
            } else {
                var inode = InodeNumbers.record(key)
                if state.nodes[inode] != nil { inode = newLocalInode(&state) }
                state.nodes[inode] = Node(
                    inode: inode, parent: 0, name: record.name, kind: .record(key), isDirectory: record.recordType == .folder,
                    recordType: record.recordType, shareID: record.shareID, recordParent: record.parent, size: record.size, modified: record.modifiedAt,
                    changed: record.modifiedAt, accessed: record.modifiedAt, attached: false)
                state.index[key] = inode
                places.append((key, record.parent, record.name, inode))
                if record.recordType == .folder { newFolders.insert(key) }
                // A note an editor had moved aside that shows again (changed elsewhere
                // meanwhile) is no longer waiting: it must not be deleted when the wait
                // ends (the simulation found such a delete held back for ever).
                state.editorSaves.forget(key)
            }
        }
        // Records shown elsewhere while their folder was missing move in as soon as the
        // tree holds it (it arrived, or came back after a refused delete: the simulation
        // found children left at the zone's root when the folder's node had outlived it).
        let placed = state.awaitingParent.isEmpty ? [] : Set(places.map(\.key))
        for inode in state.awaitingParent {
            guard let node = state.nodes[inode], case .record(let key) = node.kind, state.index[key] == inode, let parent = node.recordParent,
                state.index[RecordKey(zone: key.zone, recordName: parent)] != nil, !placed.contains(key)
            else { continue }
            places.append((key, parent, state.displaced[inode] ?? node.name, inode))
        }
        var lastTop: (zone: ZoneID, inode: Inode)?
        for record in places {
            let inode = record.inode
            guard let node = state.nodes[inode] else { continue }
            let waiting = waitsForParent(state, key: record.key, parent: record.parent)
            if waiting {
                state.awaitingParent.insert(inode)
                // Not shown yet and its folder not here yet (a page of changes brings a
                // child before its folder's later move): it waits, unseen, for the folder
                // or for the end of the fetch (`showOrphans`), instead of flashing at
                // the zone's root (a fresh mount showed 30 such strays for seconds).
                if !node.attached { continue }
            } else if !state.awaitingParent.isEmpty {
                state.awaitingParent.remove(inode)
            }
            // The notes at the top of one of the account's zones share their folder: found
            // once per run of them. (A shared zone's top notes may each be a share's root,
            // shown elsewhere.)
            let parent: Inode
            if record.parent == nil, let last = lastTop, last.zone == record.key.zone {
                parent = last.inode
            } else {
                parent = parentInode(&state, key: record.key, parent: record.parent)
                let own = record.parent == nil && state.zones[record.key.zone] == .private
                lastTop = own ? (record.key.zone, parent) : nil
            }
            // In place only if its folder lists it too: a folder removed by a delete from
            // elsewhere and brought back (a refused delete, a revived record) is a new
            // node with no children, while its children still point at its number (the
            // simulation, seed 62: two notes in a renamed folder missing from the mount).
            if node.attached && node.parent == parent && node.name == record.name && state.nodes[parent]?.children[record.name] == inode { continue }
            if node.attached {
                // Moving, not leaving: the node must survive even if the kernel never looked it up.
                detach(&state, inode, dropping: false)
                if node.isDirectory && node.lookups > 0 {
                    invalidations.append(.relink(inode, from: node.parent, name: node.name))
                } else {
                    invalidations.append(.entry(node.parent, node.name))
                }
            }
            attach(&state, inode, parent: parent, name: record.name, now: now, invalidations: &invalidations)
        }
    }

    /// Whether a record names a folder the tree does not hold (yet). A shared
    /// hierarchy's root names a folder the participant never sees: it does not wait.
    static func waitsForParent(_ state: State, key: RecordKey, parent: String?) -> Bool {
        guard let parent, state.index[RecordKey(zone: key.zone, recordName: parent)] == nil else { return false }
        let shared = (state.zones[key.zone] ?? (key.zone.owner == state.account ? .private : .shared)) == .shared
        return !(shared && state.shares.values.contains { $0.zone == key.zone && $0.rootRecordName == key.recordName })
    }

    /// Shows records whose folder never came, at the top of their zone (where
    /// `parentInode` puts them): called when a fetch has brought every page, and after
    /// loading the replica.
    static func showOrphans(_ state: inout State, invalidations: inout [Invalidation]) {
        for inode in state.awaitingParent {
            guard let node = state.nodes[inode], !node.attached, case .record(let key) = node.kind, state.index[key] == inode else { continue }
            let parent = parentInode(&state, key: key, parent: node.recordParent)
            attach(&state, inode, parent: parent, name: state.displaced[inode] ?? node.name, invalidations: &invalidations)
        }
    }

    /// Puts a node into a folder. A name already taken there by another node (a remote
    /// note arriving where a local file was) moves the newcomer aside with a suffix.
    ///
    /// A remount attaches every note in turn (100,000 in one call of `place`): each node
    /// and its folder are found once, and the folder's time is read from the clock once
    /// per call (`now`), not twice per note.
    static func attach(
        _ state: inout State, _ inode: Inode, parent: Inode, name: String, now: Double = Date().timeIntervalSince1970, invalidations: inout [Invalidation]
    ) {
        var shown = name
        let isFolder = state.nodes[inode]?.isDirectory ?? false
        state.nodes.update(parent) { folder in
            var attempt = 2
            while let other = folder.children[shown], other != inode {
                shown = "\(name) (\(attempt))"
                attempt += 1
            }
            folder.children.insert(shown, inode, isFolder: isFolder)
            if folder.modified != now { folder.modified = now }
        }
        state.nodes.update(inode) { node in
            node.parent = parent
            node.name = shown
            node.attached = true
        }
        if shown != name {
            state.displaced[inode] = name
        } else if !state.displaced.isEmpty {
            state.displaced[inode] = nil
        }
        invalidations.append(.entry(parent, shown))
        invalidations.append(.content(parent))
    }

    /// Takes a node out of its folder; it stays in the table while the kernel knows it.
    static func detach(_ state: inout State, _ inode: Inode, dropping: Bool = true) {
        guard let node = state.nodes[inode], node.attached else { return }
        state.displaced[inode] = nil
        if state.nodes[node.parent]?.children[node.name] == inode {
            state.nodes[node.parent]?.children.remove(node.name)
            state.nodes[node.parent]?.modified = Date().timeIntervalSince1970
        }
        state.nodes[inode]!.attached = false
        if dropping { dropIfUnused(&state, inode) }
    }

    /// Moves nodes shown as `name (2)` to the name they want once it is free again (the
    /// note that held it was deleted or renamed); the kernel hears of it through
    /// `pendingInvalidations`. Called at the end of every change that can free a name.
    /// Repeats until nothing moves: a node taking its name frees `name (2)`, which
    /// another may want (the simulation found `d (2) (2)` left behind so).
    static func reclaimNames(_ state: inout State) {
        var moved = true
        while moved {
            moved = false
            for (inode, wanted) in state.displaced {
                // A name an editor just moved a note away from stays free for the
                // editor's new file (the same-note window): taking it would make that
                // save land in this other note (the simulation, seed 1034).
                guard let node = state.nodes[inode], node.attached, let folder = state.nodes[node.parent],
                    folder.children[wanted] == nil, folder.children[node.name] == inode,
                    !state.editorSaves.keepsFree(FolderName(parent: node.parent, name: wanted))
                else { continue }
                state.nodes[node.parent]?.children.remove(node.name)
                var invalidations: [Invalidation] = [.entry(node.parent, node.name)]
                attach(&state, inode, parent: node.parent, name: wanted, invalidations: &invalidations)
                state.pendingInvalidations += invalidations
                moved = true
            }
        }
    }

    static func dropIfUnused(_ state: inout State, _ inode: Inode) {
        guard let node = state.nodes[inode], !node.attached, node.lookups == 0, node.openCount == 0, inode > InodeNumbers.sharedRoot else { return }
        state.nodes[inode] = nil
        state.awaitingParent.remove(inode)
        state.displaced[inode] = nil
        state.saving[inode] = nil
        state.contents.remove(inode)
        state.kept.remove(inode)
        if let key = node.recordKey, state.index[key] == inode { state.index[key] = nil }
    }

    // MARK: Questions about nodes

    /// The zone a node's records live in, and the record name of the folder that new
    /// children get as parent (`nil` at a zone's root). `nil` for folders that are no zone.
    static func container(_ state: State, _ inode: Inode) -> (zone: ZoneID, parent: String?)? {
        guard let node = state.nodes[inode] else { return nil }
        switch node.kind {
        case .privateRoot:
            return (ZoneID(owner: state.account, name: ZoneID.defaultZoneName), nil)
        case .zoneFolder(let zone):
            return (zone, nil)
        case .record(let key) where node.isDirectory:
            return (key.zone, key.recordName)
        case .scratch, .record:
            return container(state, node.parent)
        case .root, .sharedRoot, .ownerFolder:
            return nil
        }
    }

    func defaultZone() -> ZoneID { ZoneID(owner: account, name: ZoneID.defaultZoneName) }

    /// - Parameter contentCount: the size of the content the mount holds, if any (it
    ///   may differ from the record's while the file is written).
    func attributes(_ node: Node, access: Access, contentCount: Int?, subfolders: Int = 0) -> FileAttributes {
        let permissions: UInt32
        switch access {
        case .owner, .readWrite: permissions = node.isDirectory ? 0o755 : 0o644
        case .readOnly, .fixed: permissions = node.isDirectory ? 0o555 : 0o444
        }
        var attributes = FileAttributes(
            inode: node.inode, isDirectory: node.isDirectory, permissions: permissions, size: UInt64(contentCount ?? node.size),
            linkCount: node.isDirectory ? 2 + UInt32(subfolders) : (node.attached ? 1 : 0), uid: uid, gid: gid,
            modified: node.modified, changed: node.changed, accessed: node.accessed)
        // While a newer version is on its way in, the kernel keeps nothing of the note:
        // a size it kept could cut a read of the new version short (`willApplyRemote`).
        attributes.volatile = !node.isDirectory && node.kernelMayHold != nil
        return attributes
    }

    // MARK: Kernel cache invalidation

    enum Invalidation: Hashable {
        case content(Inode)
        case entry(Inode, String)
        /// A folder the kernel knows moved away from `name` in `from`: the kernel must
        /// join its folder object to the new name before it forgets the old one.
        case relink(Inode, from: Inode, name: String)
    }

    /// Sends what tree changes left in `pendingInvalidations` from another thread: a
    /// kernel request that changed a folder holds that folder's lock in the kernel until
    /// it is answered, and invalidating its entries before would wait for ever.
    func invalidatePendingLater() {
        let pending = state.withLock { state in
            defer { state.pendingInvalidations = [] }
            return state.pendingInvalidations
        }
        guard !pending.isEmpty else { return }
        DispatchQueue.global().async { [self] in invalidate(pending) }
    }

    /// Tells the kernel, outside the lock, what it must look up or read again.
    ///
    /// A folder that moved is handled apart: dropping its old name first would leave a
    /// process standing in it without a working directory until the new name is looked
    /// up, and dropping its new name after a lookup already found it there would do the
    /// same (`getcwd` failed with ENOENT once in ten runs under load). So both of its
    /// names are left to `KernelCache.relink`, which looks the new one up first.
    func invalidate(_ invalidations: [Invalidation]) {
        guard !invalidations.isEmpty, let cache = kernel.withLock({ $0 }) else { return }
        var moves: [(path: String, to: Inode, name: String, from: Inode, oldName: String)] = []
        for case .relink(let inode, let from, let oldName) in invalidations {
            guard let place = place(ofInode: inode), let path = path(ofInode: inode) else {
                cache.invalidateEntry(parent: from, name: oldName)
                continue
            }
            moves.append((path, place.parent, place.name, from, oldName))
        }
        let handledByMoves = Set(moves.flatMap { [Invalidation.entry($0.to, $0.name), .entry($0.from, $0.oldName)] })
        var seen = Set<Invalidation>()
        for item in invalidations where seen.insert(item).inserted {
            switch item {
            case .content(let inode): cache.invalidateContent(of: inode)
            case .entry(let parent, let name) where !handledByMoves.contains(item): cache.invalidateEntry(parent: parent, name: name)
            case .entry, .relink: continue
            }
        }
        for move in moves {
            cache.relink(move.path, newName: (move.to, move.name), oldName: (move.from, move.oldName))
        }
    }

    /// Where a node is shown: its folder and name, if it is attached.
    func place(ofInode inode: Inode) -> (parent: Inode, name: String)? {
        state.withLock { state in
            guard let node = state.nodes[inode], node.attached else { return nil }
            return (node.parent, node.name)
        }
    }
}
