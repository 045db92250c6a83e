import CFuse
#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Dispatch
import Synchronization

/// A mounted libfuse3 session that hands every kernel request to a `FileSystem`.
///
/// The adapter is deliberately thin: it copies names and buffers out of libfuse's
/// memory, calls the file model, and sends exactly one reply. Timeouts are long because
/// the model invalidates the kernel's caches itself (`KernelCache`) when others change
/// a note.
public final class FuseMount: KernelCache, @unchecked Sendable {
    // @unchecked: `session` is set once in `mount()` before the loop thread starts and
    // never changes; its end (unmount, destroy) and the notifications that use it are
    // serialized by `teardown`; `listings` is behind its own Mutex.

    public struct Options: Sendable {
        /// Seconds the kernel may keep names and attributes without asking again.
        public var entryTimeout: Double = 300
        public var attributeTimeout: Double = 300
        /// Seconds the kernel may remember that a name does not exist. Short, because a
        /// lookup that races with a name arriving from the server can leave a stale
        /// "missing" behind that no invalidation reaches.
        public var negativeTimeout: Double = 1
        /// libfuse worker threads kept waiting for requests once started. Above libfuse's
        /// own limit of workers (10), so that none is ever stopped: with 4, a burst of
        /// requests (a `grep -r`) started and stopped threads all the time, and each
        /// start costs more than the request it serves. libfuse advises -1, which its
        /// 3.14 loop does not read as "never" in every version; a number this large
        /// means the same in all of them.
        public var threads: UInt32 = 10_000
        public init() {}
    }

    let fileSystem: any FileSystem
    let options: Options
    public let mountpoint: String
    private var session: OpaquePointer?
    /// Open directories: the folder, and its listing once the kernel first reads it.
    private let listings = Mutex<[UInt64: (inode: Inode, listing: Listing?)]>([:])
    private let nextListing = Atomic<UInt64>(1)
    /// Set once unmounting starts: late invalidations from the sync engine are dropped.
    private let stopping = Atomic<Bool>(false)
    /// Where the session's end has got to. A signal's unmount, the runner's close and the
    /// sync engine's notifications come from different threads: none may use the session
    /// while another frees it.
    private let teardown = Mutex<(unmounted: Bool, destroyed: Bool)>((false, false))

    public init(mountpoint: String, fileSystem: any FileSystem, options: Options = Options()) {
        self.mountpoint = mountpoint
        self.fileSystem = fileSystem
        self.options = options
    }

    /// Mounts at `mountpoint`; throws with the system's reason when it cannot.
    public func mount() throws(FileSystemError) {
        var arguments = ["notes", "-o", "fsname=notes,subtype=notes"]
        // NOTES_FUSE_DEBUG=1 has libfuse print every request and reply to standard error.
        if getenv("NOTES_FUSE_DEBUG") != nil { arguments.append("-d") }
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: arguments.count + 1)
        for (index, argument) in arguments.enumerated() { argv[index] = strdup(argument) }
        argv[arguments.count] = nil
        var args = fuse_args(argc: Int32(arguments.count), argv: argv, allocated: 0)
        var operations = makeOperations()
        // The session keeps this pointer as its userdata; balanced in `destroy`.
        let userdata = Unmanaged.passRetained(self).toOpaque()
        let created = fuse_session_new(&args, &operations, MemoryLayout<fuse_lowlevel_ops>.size, userdata)
        for index in 0..<arguments.count { free(argv[index]) }
        argv.deallocate()
        arguments.removeAll()
        guard let created else {
            Unmanaged<FuseMount>.fromOpaque(userdata).release()
            throw FileSystemError(EINVAL)
        }
        guard fuse_session_mount(created, mountpoint) == 0 else {
            fuse_session_destroy(created)
            throw FileSystemError(errno == 0 ? EIO : errno)
        }
        session = created
    }

    /// Serves requests until `unmount()` or an external `fusermount3 -u`; blocks the caller.
    public func run() -> Int32 {
        guard let session else { return -1 }
        return notes_fuse_session_loop_mt(session, options.threads)
    }

    /// Ends the loop and detaches the mount. Safe to call from any thread, more than once.
    public func unmount() {
        guard let session, !stopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        fuse_session_exit(session)
        teardown.withLock { state in
            guard !state.unmounted && !state.destroyed else { return }
            fuse_session_unmount(session)
            state.unmounted = true
        }
    }

    /// Frees the session after `run()` returned (unmounting first if no one did).
    public func close() {
        guard let session else { return }
        stopping.store(true, ordering: .sequentiallyConsistent)
        teardown.withLock { state in
            guard !state.destroyed else { return }
            if !state.unmounted { fuse_session_unmount(session) }
            fuse_session_destroy(session)
            state = (true, true)
        }
    }

    /// Runs `body` with the session while it is alive and not stopping.
    private func withLiveSession(_ body: (OpaquePointer) -> Void) {
        guard let session, !stopping.load(ordering: .sequentiallyConsistent) else { return }
        teardown.withLock { state in
            guard !state.destroyed && !state.unmounted else { return }
            body(session)
        }
    }

    // MARK: KernelCache

    public func invalidateContent(of inode: Inode) {
        withLiveSession { session in
            let result = fuse_lowlevel_notify_inval_inode(session, inode, 0, 0)
            if !Self.harmless(result) { fputs("notes: invalidating inode \(inode) failed: \(result)\n", stderr) }
        }
    }

    public func invalidateEntry(parent: Inode, name: String) {
        notifyEntry(parent: parent, name: name, expireOnly: false)
    }

    public func relink(_ relativePath: String, newName: (parent: Inode, name: String), oldName: (parent: Inode, name: String)) {
        guard !stopping.load(ordering: .sequentiallyConsistent) else { return }
        let path = "\(mountpoint)/\(relativePath)"
        // Off the caller's thread: the lookup is a request this very process answers.
        DispatchQueue.global().async { [self] in
            notifyEntry(parent: newName.parent, name: newName.name, expireOnly: true)
            var info = stat()
            _ = stat(path, &info)
            notifyEntry(parent: oldName.parent, name: oldName.name, expireOnly: false)
        }
    }

    /// Whether a notification's result leaves nothing stale: done, the kernel held no
    /// such entry (`ENOENT`), or the kernel has not started the session yet (libfuse
    /// answers `ENOSYS` until INIT has come, and before it the kernel caches nothing;
    /// changes fetched while a mount starts run into that).
    static func harmless(_ result: Int32) -> Bool {
        result == 0 || result == -ENOENT || result == -ENOSYS
    }

    /// Drops (or, with `expireOnly`, only times out) the kernel's entry for `name`. An
    /// expired entry is checked by a lookup on its next use and kept if it still names
    /// the same inode; kernels before 6.2 cannot expire, and drop it instead.
    private func notifyEntry(parent: Inode, name: String, expireOnly: Bool) {
        var bytes = Array(name.utf8)
        withLiveSession { session in
            bytes.withUnsafeMutableBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    var result =
                        expireOnly
                        ? fuse_lowlevel_notify_expire_entry(session, parent, chars.baseAddress, chars.count, FUSE_LL_EXPIRE_ONLY)
                        : fuse_lowlevel_notify_inval_entry(session, parent, chars.baseAddress, chars.count)
                    if result == -ENOSYS && expireOnly {
                        result = fuse_lowlevel_notify_inval_entry(session, parent, chars.baseAddress, chars.count)
                    }
                    if !Self.harmless(result) { fputs("notes: invalidating \(name) in \(parent) failed: \(result)\n", stderr) }
                }
            }
        }
    }

    // MARK: Listings kept per open directory, so offsets stay stable while paging

    func openListing(_ inode: Inode) -> UInt64 {
        let handle = nextListing.wrappingAdd(1, ordering: .relaxed).oldValue
        listings.withLock { $0[handle] = (inode, nil) }
        return handle
    }

    /// The listing of an open directory, made on the first read: with `cache_readdir`
    /// the kernel usually answers from its own copy and never asks.
    func listing(_ handle: UInt64) throws(FileSystemError) -> Listing {
        guard let open = listings.withLock({ $0[handle] }) else { throw FileSystemError(EBADF) }
        if let listing = open.listing { return listing }
        let listing = Listing(own: try fileSystem.attributes(of: open.inode), entries: try fileSystem.list(open.inode))
        listings.withLock { $0[handle]?.listing = listing }
        return listing
    }

    func closeListing(_ handle: UInt64) {
        _ = listings.withLock { $0.removeValue(forKey: handle) }
    }
}

/// An open directory's entries as the kernel pages through them: `.` and `..` first,
/// then the folder's own (kept apart: putting the dots in front copied every entry of
/// a folder of 100,000 notes).
struct Listing {
    let own: FileAttributes
    let entries: [DirectoryEntry]

    var count: Int { entries.count + 2 }

    subscript(index: Int) -> DirectoryEntry {
        switch index {
        case 0: DirectoryEntry(name: ".", attributes: own)
        case 1: DirectoryEntry(name: "..", attributes: own)
        default: entries[index - 2]
        }
    }
}
