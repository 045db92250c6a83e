/// The file model the kernel adapter drives: one method per file-system operation,
/// in POSIX terms (inode numbers, errno), knowing nothing of FUSE.
///
/// Methods are called on libfuse's worker threads, several at once, and must not block
/// on the network: implementations serve them from local state.

public typealias Inode = UInt64

/// A failed operation, as the errno the caller's system call returns.
public struct FileSystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public var errno: Int32
    public init(_ errno: Int32) { self.errno = errno }
    public var description: String { "errno \(errno)" }
}

/// What `stat` shows of a node.
public struct FileAttributes: Sendable, Equatable {
    public var inode: Inode
    public var isDirectory: Bool
    /// Permission bits only (e.g. 0o644); the adapter adds the file type.
    public var permissions: UInt32
    public var size: UInt64
    public var linkCount: UInt32
    public var uid: UInt32
    public var gid: UInt32
    /// Seconds since 1970.
    public var modified: Double
    public var changed: Double
    public var accessed: Double
    /// Made up from answers that change without the file system hearing of it (the
    /// mount's `.history/`, `.trash/`, `.notes/events`), or about to change (a note whose
    /// newer version is coming in): the kernel keeps none of it, neither names,
    /// attributes, listings nor pages.
    public var volatile = false
    /// A symbolic link: the path it points to (`readlink`), and no file or folder.
    public var linkTarget: String?

    public init(
        inode: Inode, isDirectory: Bool, permissions: UInt32, size: UInt64, linkCount: UInt32,
        uid: UInt32, gid: UInt32, modified: Double, changed: Double, accessed: Double
    ) {
        self.inode = inode
        self.isDirectory = isDirectory
        self.permissions = permissions
        self.size = size
        self.linkCount = linkCount
        self.uid = uid
        self.gid = gid
        self.modified = modified
        self.changed = changed
        self.accessed = accessed
    }
}

/// The parts of a `setattr` call that were set.
public struct AttributeChanges: Sendable, Equatable {
    public var permissions: UInt32?
    public var uid: UInt32?
    public var gid: UInt32?
    public var size: UInt64?
    /// New modification time; `.now` when the caller asked for the current time.
    public var modified: Double?
    public var accessed: Double?

    public init(permissions: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: UInt64? = nil, modified: Double? = nil, accessed: Double? = nil) {
        self.permissions = permissions
        self.uid = uid
        self.gid = gid
        self.size = size
        self.modified = modified
        self.accessed = accessed
    }
}

/// How a file was opened, from `open(2)`'s flags.
public struct OpenMode: Sendable, Equatable {
    public var flags: Int32
    public init(flags: Int32) { self.flags = flags }
    /// The caller means to write (O_WRONLY, O_RDWR) or to truncate.
    public var writes: Bool { flags & 3 != 0 || flags & 0o1000 != 0 }
    public var truncates: Bool { flags & 0o1000 != 0 }
    /// O_APPEND: every write goes to the end of the file as the file system knows it
    /// (the kernel's idea of the size may be older than a change that just arrived).
    public var appends: Bool { flags & 0o2000 != 0 }
}

/// One line of a directory listing, with the attributes `readdirplus` hands the kernel.
public struct DirectoryEntry: Sendable {
    public var name: String
    public var attributes: FileAttributes
    public init(name: String, attributes: FileAttributes) {
        self.name = name
        self.attributes = attributes
    }
}

/// What `statfs` reports.
public struct FileSystemStatistics: Sendable {
    public var blockSize: UInt64 = 4096
    public var totalBlocks: UInt64
    public var freeBlocks: UInt64
    public var files: UInt64
    public var freeFiles: UInt64
    public var maxNameLength: UInt64 = 255
    public init(totalBlocks: UInt64, freeBlocks: UInt64, files: UInt64, freeFiles: UInt64) {
        self.totalBlocks = totalBlocks
        self.freeBlocks = freeBlocks
        self.files = files
        self.freeFiles = freeFiles
    }
}

/// The file model behind a mount. Names are single path components, already checked
/// to be valid UTF-8 by the adapter.
public protocol FileSystem: AnyObject, Sendable {
    /// Finds `name` in `parent`; the kernel then holds one more reference (see `forget`).
    func lookup(parent: Inode, name: String) throws(FileSystemError) -> FileAttributes
    /// The kernel took one more reference to `inode` (an entry of `readdirplus`).
    func retain(_ inode: Inode)
    /// The kernel dropped `count` references taken by lookups, creates and listings.
    func forget(_ inode: Inode, count: UInt64)
    func attributes(of inode: Inode) throws(FileSystemError) -> FileAttributes
    func setAttributes(of inode: Inode, _ changes: AttributeChanges) throws(FileSystemError) -> FileAttributes
    func makeDirectory(parent: Inode, name: String) throws(FileSystemError) -> FileAttributes
    /// Creates and opens a file; returns its attributes and a handle for later calls.
    func create(parent: Inode, name: String, mode: OpenMode) throws(FileSystemError) -> (FileAttributes, UInt64)
    func unlink(parent: Inode, name: String) throws(FileSystemError)
    func removeDirectory(parent: Inode, name: String) throws(FileSystemError)
    /// `rename(2)`; `noReplace` is RENAME_NOREPLACE.
    func rename(parent: Inode, name: String, newParent: Inode, newName: String, noReplace: Bool) throws(FileSystemError)
    func open(_ inode: Inode, mode: OpenMode) throws(FileSystemError) -> UInt64
    func read(_ inode: Inode, handle: UInt64, offset: Int, size: Int) throws(FileSystemError) -> [UInt8]
    func write(_ inode: Inode, handle: UInt64, offset: Int, bytes: UnsafeRawBufferPointer) throws(FileSystemError) -> Int
    /// `close(2)` of one descriptor that may have written (read-only opens skip it): what
    /// was written is saved locally before close returns, so it survives a crash of the
    /// mount; an error here is close's error.
    func flush(_ inode: Inode, handle: UInt64) throws(FileSystemError)
    /// The last descriptor of an open is gone: what was written is saved locally. The
    /// kernel sends this after close(2) has returned, so errors cannot reach the writer;
    /// `write` refuses with ENOSPC up front when the replica's disk is full.
    func release(_ inode: Inode, handle: UInt64)
    /// Returns once what was written is durable on this machine.
    func fsync(_ inode: Inode, handle: UInt64) throws(FileSystemError)
    /// Lists a directory as it is now; the adapter pages through the answer.
    func list(_ inode: Inode) throws(FileSystemError) -> [DirectoryEntry]
    func statistics() -> FileSystemStatistics
    func extendedAttribute(of inode: Inode, name: String) throws(FileSystemError) -> [UInt8]
    func extendedAttributeNames(of inode: Inode) throws(FileSystemError) -> [String]
    func setExtendedAttribute(of inode: Inode, name: String, value: [UInt8]) throws(FileSystemError)
    func removeExtendedAttribute(of inode: Inode, name: String) throws(FileSystemError)
    /// `access(2)` with R_OK/W_OK/X_OK bits.
    func checkAccess(_ inode: Inode, mask: Int32) throws(FileSystemError)
    /// Where a symbolic link points (`readlink(2)`).
    func readLink(_ inode: Inode) throws(FileSystemError) -> String
}

/// Lets the file model tell the kernel that cached names, attributes or pages are stale
/// because someone else changed a note. Calls must come from outside a file-system
/// callback (the sync engine's threads), never while the model holds its lock.
public protocol KernelCache: Sendable {
    /// Drops cached attributes and pages of `inode`.
    func invalidateContent(of inode: Inode)
    /// Drops the cached lookup of `name` in `parent` (a name that appeared, moved or went away).
    func invalidateEntry(parent: Inode, name: String)
    /// A folder moved: looks it up by the path it moved to (relative to the mount), so
    /// the kernel joins its folder object to the new name, and only then drops the old
    /// name. Processes standing in a folder renamed elsewhere keep a working directory
    /// (`getcwd`) throughout. The new name is expired rather than dropped, so that a
    /// lookup that already found the folder there is not undone.
    func relink(_ relativePath: String, newName: (parent: Inode, name: String), oldName: (parent: Inode, name: String))
}
