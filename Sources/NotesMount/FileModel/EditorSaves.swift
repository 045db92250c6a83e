import NotesFS
import NotesReplica

/// A name in a folder of the mount.
struct FolderName: Hashable {
    var parent: Inode
    var name: String
}

/// The same-note rule for editors' saves: which file is "the same note" after an editor
/// or a tool replaced it, so that the note keeps its record, share and history.
///
/// One rule covers every save sequence: a note moved away from its name (or removed) and
/// then gone, while a file filled its old name again in the same folder within `window`
/// seconds, hands its record to that file.
/// - Removed (unlink, or a rename to a scratch name such as vim's `plan.md~`): the record
///   waits under the name, and the next file made or moved there takes it (`takeBack`):
///   GNU `mv` from another disk, `git checkout`, vim's backup-and-rename.
/// - Moved away to another note's name (IntelliJ's `plan.md___jb_old___`, log rotation's
///   `mv a.md b.md`): the moved file keeps its record for now, and its upload waits out
///   the window (`holdsSave`). Deleted within the window while a file holds its old name,
///   it hands the record over (`handOver`); kept, it stays that note under its new name.
///
/// Pure state: the tree asks and applies the answers (deletes, saves) itself.
struct EditorSaves {
    /// Seconds a name stays bound to the note that left it.
    static let window: Double = 2

    struct Removed {
        var record: ReplicaRecord
        var since: Double
        /// What the editor read, if older than the replica's version (see `Node.staleBase`).
        var staleBase: String?
        /// Removed with unlink: the replica has queued its delete already (held back for
        /// the window), and a new file under the name takes it back.
        var deletedInReplica = false
    }

    struct MovedAway {
        var inode: Inode
        var key: RecordKey
        var since: Double
    }

    /// Records waiting under the name they were removed from.
    private(set) var removed: [FolderName: Removed] = [:]
    /// Notes renamed away, by the name they left.
    private(set) var movedAway: [FolderName: MovedAway] = [:]

    /// A note was unlinked or renamed to a scratch name: its record waits under `name`.
    mutating func noteRemoved(_ record: Removed, from name: FolderName) {
        removed[name] = record
    }

    /// A file is being made (create) or moved (rename) under `name`: the record that
    /// waits there, which the file then is. One that waited past the window stays for
    /// `expire` to delete, however late the tick that collects it runs.
    mutating func takeBack(_ name: FolderName, now: Double) -> Removed? {
        guard let waiting = removed[name], now - waiting.since <= Self.window else { return nil }
        removed[name] = nil
        return waiting
    }

    /// A note kept its record while renamed away from `name` to another note's name.
    mutating func noteMovedAway(_ inode: Inode, key: RecordKey, from name: FolderName, now: Double) {
        movedAway[name] = MovedAway(inode: inode, key: key, since: now)
    }

    /// The note `inode` is being deleted: the names it was moved away from within the
    /// window, newest first, whose file (if any) takes its record. The entries go.
    mutating func handOver(deleting inode: Inode, now: Double) -> [FolderName] {
        let left = movedAway.filter { $0.value.inode == inode }
        for name in left.keys { movedAway[name] = nil }
        return left.filter { now - $0.value.since <= Self.window }.sorted { $0.value.since > $1.value.since }.map(\.key)
    }

    /// Whether `name` must stay free for a file an editor is about to put there: notes
    /// shown under another name because this one was taken wait until the window ends.
    func keepsFree(_ name: FolderName) -> Bool {
        removed[name] != nil || movedAway[name] != nil
    }

    /// Whether the upload of `key` waits: it was moved away a moment ago and may yet be
    /// deleted, handing its record to another file.
    func holdsSave(of key: RecordKey, now: Double) -> Bool {
        movedAway.values.contains { $0.key == key && now - $0.since < Self.window }
    }

    /// Whether `key` waits to be taken back (its queued delete must wait).
    func waits(_ key: RecordKey) -> Bool {
        removed.values.contains { $0.record.key == key }
    }

    /// The record shows again from notesd (changed elsewhere meanwhile): nothing waits
    /// for it any more.
    mutating func forget(_ key: RecordKey) {
        guard !removed.isEmpty || !movedAway.isEmpty else { return }
        removed = removed.filter { $0.value.record.key != key }
        movedAway = movedAway.filter { $0.value.key != key }
    }

    /// Ends the wait of what is older than `age` seconds: the removed records no file
    /// took back (to be deleted), and whether a moved-away note's upload was freed.
    mutating func expire(olderThan age: Double, now: Double) -> (removed: [Removed], freedMoves: Bool) {
        let gone = removed.filter { now - $0.value.since > age }
        for name in gone.keys { removed[name] = nil }
        let moves = movedAway.count
        movedAway = movedAway.filter { now - $0.value.since <= age }
        return (Array(gone.values), movedAway.count != moves)
    }

    /// At unmount: every wait ends; the removed records are deleted for good.
    mutating func endAll() -> [Removed] {
        defer {
            removed = [:]
            movedAway = [:]
        }
        return Array(removed.values)
    }
}
