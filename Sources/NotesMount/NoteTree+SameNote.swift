import Foundation
import NotesFS
import NotesModel
public import NotesReplica

/// The editor-save recogniser: a note renamed aside (vim's backup) or removed (GNU `mv`
/// from another disk, editors that delete and rewrite) waits `sameNoteWindow` seconds
/// for a new file under its name in the same folder, which then is that note again,
/// with its record, share and history. While it waits, its name stays free for that
/// file (`reclaimNames` leaves it alone).
extension NoteTree {
    struct DetachedName: Hashable {
        var parent: Inode
        var name: String
    }

    struct DetachedRecord {
        var record: ReplicaRecord
        var since: Double
        /// What the editor read, if older than the replica's version (see `Node.staleBase`).
        var staleBase: String?
        /// Removed with unlink: the replica has queued its delete already (held back
        /// for `sameNoteWindow`), and a new file under the name takes it back.
        var deletedInReplica = false
    }

    /// Seconds during which a file made under the name of a note that was just renamed
    /// aside or removed in the same folder is that note again, with its record, share and
    /// history: vim's backup-and-rename, GNU `mv` from another file system (unlink, then
    /// create), and editors that save by deleting and rewriting.
    public static let sameNoteWindow: Double = 2

    /// Records an editor moved aside and did not take back within `age` seconds: their
    /// notes were really renamed away (or deleted), so they are deleted.
    public func expireDetached(olderThan age: Double) -> [RecordKey] {
        let now = clock()
        let keys = state.withLock { state in
            let expired = state.detached.filter { now - $0.value.since > age }
            for name in expired.keys { state.detached[name] = nil }
            // Names the wait held free go to the notes that want them.
            Self.reclaimNames(&state)
            return expired.values.filter { !$0.deletedInReplica && state.index[$0.record.key] == nil }.map(\.record.key)
        }
        invalidate(
            state.withLock { state in
                defer { state.pendingInvalidations = [] }
                return state.pendingInvalidations
            })
        return keys
    }

    /// Whether the queued delete of `key` must wait: the record was removed a moment ago
    /// and a new file may still take it back (see `sameNoteWindow`), or one already has
    /// and has not been saved yet.
    func holdsDelete(_ key: RecordKey) -> Bool {
        state.withLock { state in
            state.index[key] != nil || state.detached.values.contains { $0.record.key == key }
        }
    }
}
