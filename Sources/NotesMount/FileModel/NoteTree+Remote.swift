import Foundation
import NotesFS
public import NotesModel
public import NotesReplica

/// Changes that come from the server (through the sync engine), shown in the tree with
/// the kernel's caches invalidated so that `cat`, editors and watchers see them.
extension NoteTree {
    /// The point in local changes the next `applyRemote(_:after:)` is measured from:
    /// take it before the replica applies a page of the server's changes.
    public func localMark() -> UInt64 {
        state.withLock { $0.localSerial }
    }

    /// Marks the notes whose rows the replica is about to replace with `records` (the
    /// server's newer versions) as read in an older version, before the replica takes
    /// them: a save made between the replica taking a version and `applyRemote` showing
    /// it must be based on the version its writer read, not keep the row's tag, which is
    /// the newer one by then (`sed -i` renaming its file over the note in that moment had
    /// notesd take its save over the other side's line). Rows with local changes, and our
    /// own uploads coming back, are left alone, as the replica leaves them.
    ///
    /// And the kernel is told to drop what it holds of those notes before the replica
    /// takes them: it keeps a file's size for minutes, and a read it sized by the old
    /// length, answered from the new version, gave `sed -i` the new text cut short (the
    /// soak lost the other side's last line). Until `applyRemote` has shown the new
    /// version and told the kernel again, the notes' attributes are volatile
    /// (`kernelMayHold`): the kernel asks their size at each read past the end it knows,
    /// and gets the size of the version it is then served.
    public func willApplyRemote(_ zone: ZoneID, records: [Record]) {
        guard let replaced = try? replica.replacing(zone, records), !replaced.isEmpty else { return }
        let known = state.withLock { state in
            state.contentEpoch &+= 1
            var known: [Invalidation] = []
            // Only a new text: after a change of name, place or share what was read is
            // still the note's text, and taking it for an older version had the next save
            // present an older base (`EditorSaveTests`, beside stress-ng: a conflict copy
            // of a note just shared).
            for (name, (replacedTag, newText)) in replaced where newText {
                guard let inode = state.index[RecordKey(zone: zone, recordName: name)], var node = state.nodes[inode], !node.isDirectory else { continue }
                // Text written here and never read back holds no tag of its own: it builds
                // on the version the replica holds until now (this mount's own upload),
                // and a save of writes still open must present that version, or it would
                // go up over the newer one and lose it (two machines of one account,
                // both appending, lost one line).
                if node.seenTag == nil, node.contentDirty || state.contents.has(inode) { node.seenTag = replacedTag }
                if node.seenTag != nil { node.seenIsOutdated = true }
                if node.lookups > 0 {
                    if node.kernelMayHold == nil { node.kernelMayHold = node.loadedTag ?? node.seenTag ?? "" }
                    known.append(.content(inode))
                }
                state.nodes[inode] = node
            }
            return known
        }
        invalidate(known)
    }

    /// Before the replica gives a note with local changes the server's version (the
    /// local text kept as a conflict copy, `keepConflictCopy`): what the tree holds of
    /// the note, and what a handle still open writes into it, was built on `base`, the
    /// version the row had until now. A save of it must present `base`, so that notesd
    /// refuses it and the mount merges; presenting the adopted version instead put the
    /// local text over the other side's (the soak lost the other side's lines so). The
    /// kernel drops the note's pages and size, as before any new text.
    public func willAdopt(_ key: RecordKey, base: String?) {
        let known: [Invalidation] = state.withLock { state in
            state.contentEpoch &+= 1
            guard let inode = state.index[key], var node = state.nodes[inode], !node.isDirectory else { return [] }
            // Only writes not in the replica yet (unsaved, or through a handle still open)
            // are at stake: the rest is the local change being settled, whose text the
            // merge or the conflict copy already holds. Marking a clean, closed note too
            // would have its next save present the older version for nothing (refused,
            // and merged again).
            // (A base older still, which a reader open across an earlier version keeps, stays.)
            if node.contentDirty || node.openCount > 0, !node.seenIsOutdated || node.seenTag == nil {
                node.seenTag = base
                node.seenIsOutdated = base != nil
            }
            var known: [Invalidation] = []
            if node.lookups > 0 {
                if node.kernelMayHold == nil { node.kernelMayHold = node.loadedTag ?? node.seenTag ?? "" }
                known.append(.content(inode))
            }
            state.nodes[inode] = node
            return known
        }
        invalidate(known)
    }

    /// Before the replica deletes records notesd deleted: files open here whose content
    /// was never loaded (readers open from memory) take it now, so that an open handle
    /// keeps reading what it had, as after a local unlink.
    public func willDeleteRemote(_ zone: ZoneID, names: [String]) {
        guard !names.isEmpty else { return }
        let open: [Inode] = state.withLock { state in
            names.compactMap { name in
                guard let inode = state.index[RecordKey(zone: zone, recordName: name)], let node = state.nodes[inode], node.openCount > 0, !node.isDirectory,
                    !state.contents.has(inode)
                else { return nil }
                return inode
            }
        }
        // Read with the tree unlocked (the replica still holds the rows: the sync engine
        // deletes them after this returns); one whose node changed meanwhile is read
        // locked (`loadContent` does nothing for one that is in memory now).
        for inode in open {
            try? loadContentUnlocked(inode)
            state.withLock { state in try? loadContent(&state, inode) }
        }
    }

    /// Shows what the replica took from a page of the server's changes. Records changed
    /// here after `mark` (a rename or save made while the page was applied) are shown
    /// as the replica holds them now, not as the page left them: otherwise a note
    /// renamed a moment ago would go back to its old name (the exerciser under load:
    /// `rename y.bin over x.bin` found no y.bin).
    public func applyRemote(_ effects: RemoteEffects, after mark: UInt64? = nil) {
        var invalidations: [Invalidation] = []
        state.withLock { state in
            state.contentEpoch &+= 1
            for zone in Set(effects.updated.map(\.key.zone) + effects.removed.map(\.zone)) {
                state.zoneGenerations[zone, default: 0] &+= 1
            }
            var effects = effects
            if let mark {
                let local = Set((effects.updated.map(\.key) + effects.removed).filter { state.localChange[$0, default: 0] > mark })
                if !local.isEmpty {
                    // (One the tree does not show — deleted or moved aside here — is left
                    // as the tree has it: a new file may take its record back any moment.)
                    let shown = local.filter { state.index[$0] != nil }
                    effects.updated = effects.updated.filter { !local.contains($0.key) } + ((try? replica.liveRecords(Array(shown))) ?? [])
                    effects.removed = effects.removed.filter { !local.contains($0) }
                }
                state.localChange = state.localChange.filter { $0.value > mark }
            }
            Self.place(&state, effects.updated, invalidations: &invalidations)
            for key in effects.removed { Self.removeRecordNode(&state, key, invalidations: &invalidations) }
            Self.reclaimNames(&state)
        }
        let generations = state.withLock { state in
            invalidations.compactMap { item -> (Inode, UInt64)? in
                guard case .content(let inode) = item, let node = state.nodes[inode] else { return nil }
                return (inode, node.remoteGeneration)
            }
        }
        invalidate(
            invalidations
                + state.withLock { state in
                    defer { state.pendingInvalidations = [] }
                    return state.pendingInvalidations
                })
        // The kernel has dropped those pages: what it serves from now on, it reads here.
        state.withLock { state in
            for (inode, generation) in generations where state.nodes[inode]?.remoteGeneration == generation {
                state.nodes[inode]!.kernelMayHold = nil
            }
        }
    }

    /// A fetch brought every page: records whose folder never came show at the top of
    /// their zone.
    public func showOrphans() {
        var invalidations: [Invalidation] = []
        state.withLock { state in
            Self.showOrphans(&state, invalidations: &invalidations)
            Self.reclaimNames(&state)
        }
        invalidate(
            invalidations
                + state.withLock { state in
                    defer { state.pendingInvalidations = [] }
                    return state.pendingInvalidations
                })
    }

    /// Takes records out of the tree (deleted elsewhere, or a local change the server refused).
    public func removeRecords(_ keys: [RecordKey]) {
        applyRemote(
            {
                var effects = RemoteEffects()
                effects.removed = keys
                return effects
            }())
    }

    static func removeRecordNode(_ state: inout State, _ key: RecordKey, invalidations: inout [Invalidation]) {
        guard let inode = state.index[key], let node = state.nodes[inode] else { return }
        invalidations.append(.entry(node.parent, node.name))
        invalidations.append(.content(node.parent))
        state.index[key] = nil
        if node.openCount > 0 && !state.contents.has(inode) { state.contents.set(inode, []) }
        state.nodes[inode]!.kind = .scratch
        // What the folder still holds (changed here, or not yet removed by this page)
        // waits for it to come back, or shows at the top of the zone when the fetch
        // ends: left in a folder node that is gone, it stayed invisible even after the
        // folder came back as a new node (the simulation, seed 62).
        for (name, child) in node.children {
            guard state.nodes[child]?.attached == true else { continue }
            invalidations.append(.entry(inode, name))
            detach(&state, child, dropping: false)
            state.awaitingParent.insert(child)
        }
        detach(&state, inode)
    }

    /// The zones the account sees now; a zone that went away (deleted, share left or
    /// stopped, participant removed) takes its folder with it.
    public func zoneRemoved(_ zone: ZoneID, records: [RecordKey]) {
        var invalidations: [Invalidation] = []
        state.withLock { state in
            for key in records { Self.removeRecordNode(&state, key, invalidations: &invalidations) }
            state.zones[zone] = nil
            let folder = InodeNumbers.zoneFolder(zone)
            if let node = state.nodes[folder], node.attached {
                invalidations.append(.entry(node.parent, node.name))
                Self.detach(&state, folder)
            }
            // An owner folder with nothing left in it goes too.
            let owner = InodeNumbers.ownerFolder(zone.owner)
            if let node = state.nodes[owner], node.attached, node.children.isEmpty {
                invalidations.append(.entry(InodeNumbers.sharedRoot, node.name))
                Self.detach(&state, owner)
            }
            Self.reclaimNames(&state)
        }
        invalidate(
            invalidations
                + state.withLock { state in
                    defer { state.pendingInvalidations = [] }
                    return state.pendingInvalidations
                })
    }

    /// Records a zone the server lists, so its records find their folder.
    public func zoneSeen(_ zone: ZoneID, scope: DatabaseScope) {
        state.withLock { state in
            guard state.zones[zone] == nil else { return }
            state.zones[zone] = scope
            // Zone-wide shares show as folders at once; hierarchy shares show their roots.
            // (`zoneContainer` tells the kernel about a folder it adds. A folder that was
            // there already is left alone: invalidating its entry would unhash it, and a
            // shell standing in `private/` would find its working directory gone; the
            // simulation cannot see that, a test did: `getcwd() failed`.)
            if scope == .private || state.shares.values.contains(where: { $0.zone == zone && $0.isZoneWide }) {
                _ = Self.zoneContainer(&state, zone, scope: scope)
            }
            Self.reclaimNames(&state)
        }
        invalidate(
            state.withLock { state in
                defer { state.pendingInvalidations = [] }
                return state.pendingInvalidations
            })
    }

    /// The shares the account owns or accepted; permissions and extended attributes
    /// follow them, so changed ones drop the kernel's cached attributes.
    public func setShares(_ shares: [Share]) {
        var invalidations: [Invalidation] = []
        state.withLock { state in
            let old = state.shares
            state.shares = Dictionary(shares.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            let changed = Set(old.keys).union(state.shares.keys).filter { old[$0] != state.shares[$0] }
            guard !changed.isEmpty else { return }
            Self.replaceSharedRecords(&state, invalidations: &invalidations)
            for (inode, node) in state.nodes {
                let zoneWide: Bool
                if case .zoneFolder = node.kind { zoneWide = true } else { zoneWide = false }
                if zoneWide || node.shareID.map(changed.contains) == true { invalidations.append(.content(inode)) }
            }
            Self.reclaimNames(&state)
        }
        invalidate(
            invalidations
                + state.withLock { state in
                    defer { state.pendingInvalidations = [] }
                    return state.pendingInvalidations
                })
    }

    /// Where a record shows in the mount, relative to the mount's root (`private/plan.md`).
    public func path(of key: RecordKey) -> String? {
        guard let inode = state.withLock({ $0.index[key] }) else { return nil }
        return path(ofInode: inode)
    }

    func path(ofInode start: Inode) -> String? {
        state.withLock { state in
            var inode = start
            var names: [String] = []
            while inode != InodeNumbers.root {
                guard let node = state.nodes[inode], node.attached else { return nil }
                names.append(node.name)
                inode = node.parent
            }
            return names.reversed().joined(separator: "/")
        }
    }

    /// Whether a record is the root of a share that the account takes part in (not owns):
    /// nothing may be created beside it.
    public func isForeignShareRoot(_ key: RecordKey) -> Bool {
        key.zone.owner != account
            && state.withLock { state in
                state.shares.values.contains { $0.zone == key.zone && $0.rootRecordName == key.recordName }
            }
    }

    /// How many nodes the tree holds (for logs and tests).
    public var nodeCount: Int { state.withLock { $0.nodes.count } }
}
