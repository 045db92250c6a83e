import Foundation
import NotesFS
import NotesModel
public import NotesReplica

/// The tree's side of `EditorSaves`: it asks the rule and applies the answers.
extension NoteTree {
    /// Seconds during which a file made under the name of a note that was just renamed
    /// aside or removed in the same folder is that note again (see `EditorSaves`).
    public static let sameNoteWindow: Double = EditorSaves.window

    /// Records an editor moved aside and did not take back within `age` seconds: their
    /// notes were really renamed away (or deleted), so they are deleted. Notes moved away
    /// that were kept go up under their new name from now on (`uploadFreed`).
    public func expireDetached(olderThan age: Double) -> (deletes: [RecordKey], uploadFreed: Bool) {
        let now = clock()
        let (keys, freed) = state.withLock { state in
            let (expired, freed) = state.editorSaves.expire(olderThan: age, now: now)
            // Names the wait held free go to the notes that want them.
            Self.reclaimNames(&state)
            return (expired.filter { !$0.deletedInReplica && state.index[$0.record.key] == nil }.map(\.record.key), freed)
        }
        invalidate(
            state.withLock { state in
                defer { state.pendingInvalidations = [] }
                return state.pendingInvalidations
            })
        return (keys, freed)
    }

    /// Whether the queued delete of `key` must wait: the record was removed a moment ago
    /// and a new file may still take it back (see `sameNoteWindow`), or one already has
    /// and has not been saved yet.
    func holdsDelete(_ key: RecordKey) -> Bool {
        state.withLock { state in
            state.index[key] != nil || state.editorSaves.waits(key)
        }
    }

    /// The note `inode`, being deleted, was moved away from its name a moment ago and a
    /// file holds that name again: that file takes its record (IntelliJ's safe write:
    /// `plan.md` renamed to `plan.md___jb_old___`, the new text renamed to `plan.md`, the
    /// old file deleted). Returns whether it did; the note being deleted then leaves
    /// without deleting the record.
    func handOver(_ state: inout State, deleting inode: Inode) throws(Failure) -> Bool {
        guard let node = state.nodes[inode], !node.isDirectory, let key = node.recordKey else { return false }
        for name in state.editorSaves.handOver(deleting: inode, now: clock()) {
            guard let heir = state.nodes[name.parent]?.children[name.name], heir != inode, let target = state.nodes[heir], target.attached,
                !target.isDirectory
            else { continue }
            try loadContent(&state, heir)
            var taker = state.nodes[heir]!
            if let own = taker.recordKey, own != key {
                if state.index[own] == heir { state.index[own] = nil }
                deleteLater(&state, own)
            }
            taker.kind = .record(key)
            taker.recordType = node.recordType
            taker.shareID = node.shareID
            taker.contentDirty = true
            if !taker.seenIsOutdated { taker.inheritBase(node.staleBase) }
            state.nodes[heir] = taker
            state.index[key] = heir
            if taker.openCount == 0 { _ = persistLater(&state, heir) }
            return true
        }
        return false
    }
}
