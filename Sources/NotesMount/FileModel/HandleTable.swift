import NotesFS

/// The kernel's open file handles: what each was opened for, and, per file, how many
/// handles may write to it and since when (a save is held while a file is being
/// written: see `NoteTree.holdsSave`).
///
/// Not thread-safe: it lives in the tree's state, under the tree's lock.
struct HandleTable {
    struct Handle {
        let inode: Inode
        /// O_APPEND: every write goes to the end of the file as the mount holds it.
        let appends: Bool
        let writes: Bool
        /// A write through it went past the size limit: the file went back to what the
        /// replica holds, and every later write through it fails too, so that a `cp`
        /// that is too large leaves the note as it was rather than cut at 16 MiB.
        var oversized = false
        /// The version it read from the start of the file (`nil`: not read yet, or a file
        /// never uploaded). A reader that read one version, and then past a newer one
        /// that came meanwhile, still holds what it read first (`sed -i` does this).
        var readTag: String?
    }

    private var last: UInt64 = 1
    private var handles: [UInt64: Handle] = [:]
    private var writers: [Inode: (count: Int, since: Double)] = [:]

    /// A new handle on `inode`; `now` on the tree's clock. `mayRead`: the version it
    /// may read before it reads through the mount (the kernel's cached pages).
    mutating func open(_ inode: Inode, appends: Bool, writes: Bool, now: Double, mayRead: String? = nil) -> UInt64 {
        last += 1
        handles[last] = Handle(inode: inode, appends: appends, writes: writes, readTag: mayRead)
        if writes {
            let current = writers[inode] ?? (0, now)
            writers[inode] = (current.count + 1, current.since)
        }
        return last
    }

    /// Forgets a handle. Returns whether it was the last one writing to its file.
    mutating func close(_ handle: UInt64) -> Bool {
        guard let closed = handles.removeValue(forKey: handle), closed.writes, let current = writers[closed.inode] else { return false }
        let last = current.count <= 1
        writers[closed.inode] = last ? nil : (current.count - 1, current.since)
        return last
    }

    /// Notes a read through `handle` of the version `tag`: a read from the start takes
    /// the version it reads; a read further on keeps the one read before.
    mutating func noteRead(_ handle: UInt64, tag: String?, fromStart: Bool) {
        guard handles[handle] != nil else { return }
        if fromStart || handles[handle]!.readTag == nil { handles[handle]!.readTag = tag }
    }

    /// A version older than `current` that a handle open on `inode` read, if any (the
    /// oldest, when change tags are numbers).
    func olderRead(of inode: Inode, than current: String?) -> String? {
        let older = handles.values.compactMap { $0.inode == inode ? $0.readTag : nil }.filter { $0 != current }
        return older.min { (Int64($0) ?? .max, $0) < (Int64($1) ?? .max, $1) }
    }

    func readTag(_ handle: UInt64) -> String? { handles[handle]?.readTag }

    /// Whether `handle` was opened for writing.
    func writes(_ handle: UInt64) -> Bool { handles[handle]?.writes ?? false }

    func appends(_ handle: UInt64) -> Bool { handles[handle]?.appends ?? false }

    func isOversized(_ handle: UInt64) -> Bool { handles[handle]?.oversized ?? false }

    mutating func markOversized(_ handle: UInt64) { handles[handle]?.oversized = true }

    /// When the first of the handles now writing to `inode` was opened; `nil` when none is.
    func writingSince(_ inode: Inode) -> Double? { writers[inode]?.since }

    var openCount: Int { handles.count }
}
