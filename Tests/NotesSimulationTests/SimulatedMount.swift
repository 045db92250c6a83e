#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import Logging
import NotesFS
import NotesModel
@testable import NotesMount
import NotesReplica
import Synchronization

/// One mount of one account, without the kernel: its real replica file, file model and
/// sync engine, driven through the same `FileSystem` calls libfuse makes. Killing it
/// drops everything in memory; what the replica committed stays.
final class SimulatedMount {
    let label: String
    let account: String
    let folder: String
    let service: StoreService
    /// The simulation's clock, in seconds: the mount's same-note window and held saves
    /// run on it, so that a seed replays the same way on a fast or a busy machine.
    let clock: @Sendable () -> Double
    /// Counts the records this mount made: their names are `<label>-<n>`, the same on
    /// every run of a seed, and never the same as another mount's.
    private let names = RecordNames()
    private(set) var replica: Replica!
    private(set) var tree: NoteTree!
    private(set) var engine: SyncEngine!

    init(label: String, account: String, store: any RecordStore, folder: String, clock: @escaping @Sendable () -> Double) throws {
        self.label = label
        self.clock = clock
        self.account = account
        self.folder = folder
        service = StoreService(store: store, actor: account)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try start()
    }

    func start() throws {
        // Queued writes commit at the next read or waited write, as the steps go.
        replica = try Replica(path: ReplicaLocation.path(in: folder, account: account), commitsInBackground: false)
        // Uploads run when the simulation says so, not when a change asks.
        tree = try NoteTree(account: account, replica: replica, cacheDirectory: folder, clock: clock, recordNames: { [names, label] in names.next(label) }) {}
        var logger = Logger(label: "sim.\(label)")
        logger.logLevel = ProcessInfo.processInfo.environment["NOTES_SIM_LOG"] != nil ? .debug : .critical
        engine = SyncEngine(client: service, replica: replica, tree: tree, logger: logger)
    }

    /// `kill -9` and a new mount on the same replica: writes still queued (a rename or
    /// delete answered a moment ago) are lost, as they would be.
    func restart() throws {
        // The processes that held files open died with it (no release comes).
        holds = []
        replica.abandonQueuedWrites()
        engine = nil
        tree = nil
        replica = nil
        try start()
    }

    // MARK: What a process does through the kernel

    /// Files held open across steps, as fsstress's four processes and editors do while
    /// other calls rename, replace or remove them: written through, closed later.
    private(set) var holds: [(inode: Inode, handle: UInt64)] = []

    /// open(O_RDWR|O_APPEND|O_CREAT), kept open.
    @discardableResult
    func hold(_ folder: [String], _ name: String) -> Int32? {
        guard let parent = inode(folder) else { return ENOENT }
        do throws(FileSystemError) {
            let flags = O_RDWR | O_APPEND
            if let existing = try? tree.lookup(parent: parent, name: name) {
                guard !existing.isDirectory else {
                    tree.forget(existing.inode, count: 1)
                    return EISDIR
                }
                do {
                    holds.append((existing.inode, try tree.open(existing.inode, mode: OpenMode(flags: flags))))
                } catch {
                    tree.forget(existing.inode, count: 1)
                    throw error
                }
            } else {
                let (attributes, handle) = try tree.create(parent: parent, name: name, mode: OpenMode(flags: flags | O_CREAT))
                holds.append((attributes.inode, handle))
            }
            return nil
        } catch {
            return error.errno
        }
    }

    /// A write through a held file (at its end: it was opened with O_APPEND).
    @discardableResult
    func writeHeld(_ index: Int, _ bytes: [UInt8]) -> Int32? {
        let held = holds[index]
        var failure: FileSystemError?
        bytes.withUnsafeBytes { buffer in
            do throws(FileSystemError) { _ = try tree.write(held.inode, handle: held.handle, offset: 0, bytes: buffer) } catch { failure = error }
        }
        return failure?.errno
    }

    /// close(2) of a held file: FLUSH, RELEASE, and the kernel forgets it.
    @discardableResult
    func closeHeld(_ index: Int) -> Int32? {
        let held = holds.remove(at: index)
        defer {
            tree.release(held.inode, handle: held.handle)
            tree.forget(held.inode, count: 1)
        }
        do throws(FileSystemError) {
            try tree.flush(held.inode, handle: held.handle)
            return nil
        } catch {
            return error.errno
        }
    }

    /// The inode at `path` (components from the mount's root), or nil.
    /// The record of the file at `path`, if it is one.
    func recordName(_ path: [String]) -> String? {
        guard let inode = inode(path) else { return nil }
        return tree.state.withLock { $0.nodes[inode]?.recordKey?.recordName }
    }

    func inode(_ path: [String]) -> Inode? {
        var inode = InodeNumbers.root
        for component in path {
            guard let attributes = try? tree.lookup(parent: inode, name: component) else { return nil }
            tree.forget(attributes.inode, count: 1)
            inode = attributes.inode
        }
        return inode
    }

    /// open(O_WRONLY|O_CREAT|…), write, close: `>` (truncate), `>>` (append).
    @discardableResult
    func write(_ folder: [String], _ name: String, _ bytes: [UInt8], append: Bool = false) -> Int32? {
        guard let parent = inode(folder) else { return ENOENT }
        do throws(FileSystemError) {
            let inode: Inode
            let handle: UInt64
            let flags = O_WRONLY | (append ? O_APPEND : O_TRUNC)
            if let existing = try? tree.lookup(parent: parent, name: name) {
                inode = existing.inode
                handle = try tree.open(inode, mode: OpenMode(flags: flags))
            } else {
                let (attributes, created) = try tree.create(parent: parent, name: name, mode: OpenMode(flags: flags | O_CREAT))
                inode = attributes.inode
                handle = created
            }
            defer {
                tree.release(inode, handle: handle)
                tree.forget(inode, count: 1)
            }
            var failure: FileSystemError?
            bytes.withUnsafeBytes { buffer in
                do throws(FileSystemError) { _ = try tree.write(inode, handle: handle, offset: 0, bytes: buffer) } catch { failure = error }
            }
            if let failure { throw failure }
            try tree.flush(inode, handle: handle)
            return nil
        } catch {
            return error.errno
        }
    }

    /// The whole content of a file, or nil.
    func read(_ path: [String]) -> [UInt8]? {
        guard let inode = inode(path), let attributes = try? tree.attributes(of: inode), !attributes.isDirectory,
            let handle = try? tree.open(inode, mode: OpenMode(flags: O_RDONLY))
        else { return nil }
        defer { tree.release(inode, handle: handle) }
        return try? tree.read(inode, handle: handle, offset: 0, size: Int(attributes.size) + 1)
    }

    @discardableResult
    func rename(_ from: [String], _ to: [String]) -> Int32? {
        guard let source = inode(Array(from.dropLast())), let target = inode(Array(to.dropLast())) else { return ENOENT }
        do throws(FileSystemError) {
            try tree.rename(parent: source, name: from.last!, newParent: target, newName: to.last!, noReplace: false)
            return nil
        } catch {
            return error.errno
        }
    }

    @discardableResult
    func unlink(_ path: [String]) -> Int32? {
        guard let parent = inode(Array(path.dropLast())) else { return ENOENT }
        do throws(FileSystemError) {
            try tree.unlink(parent: parent, name: path.last!)
            return nil
        } catch {
            return error.errno
        }
    }

    @discardableResult
    func mkdir(_ path: [String]) -> Int32? {
        guard let parent = inode(Array(path.dropLast())) else { return ENOENT }
        do throws(FileSystemError) {
            let attributes = try tree.makeDirectory(parent: parent, name: path.last!)
            tree.forget(attributes.inode, count: 1)
            return nil
        } catch {
            return error.errno
        }
    }

    /// `rm -r`: files first, then folders, deepest first.
    @discardableResult
    func removeTree(_ path: [String]) -> Int32? {
        guard let inode = inode(path), let entries = try? tree.list(inode) else { return ENOENT }
        for entry in entries {
            if entry.attributes.isDirectory {
                if let failure = removeTree(path + [entry.name]) { return failure }
            } else if let failure = unlink(path + [entry.name]) {
                return failure
            }
        }
        guard let parent = self.inode(Array(path.dropLast())) else { return ENOENT }
        do throws(FileSystemError) {
            try tree.removeDirectory(parent: parent, name: path.last!)
            return nil
        } catch {
            return error.errno
        }
    }

    /// Every file and folder under `path` (relative paths; folders end in `/`) with the
    /// content of each file; editors' scratch files are left out (they never leave a mount).
    func snapshot(_ path: [String]) -> [String: [UInt8]] {
        guard let inode = inode(path), let entries = try? tree.list(inode) else { return [:] }
        var result: [String: [UInt8]] = [:]
        for entry in entries where !ScratchNames.isScratch(entry.name) {
            if entry.attributes.isDirectory {
                result[entry.name + "/"] = []
                for (below, content) in snapshot(path + [entry.name]) { result[entry.name + "/" + below] = content }
            } else {
                result[entry.name] = read(path + [entry.name]) ?? Array("<unreadable>".utf8)
            }
        }
        return result
    }

    /// Changes waiting in the replica's queue.
    var queued: Int { (try? replica.pendingCount()) ?? -1 }
}

/// Seconds that pass only when the simulation says so.
final class SimulatedClock: Sendable {
    private let seconds = Mutex<Double>(1_000_000)

    func now() -> Double { seconds.withLock { $0 } }

    func advance(by interval: Double) { seconds.withLock { $0 += interval } }
}

/// Record names `<mount>-<n>`, counted across a mount's restarts.
final class RecordNames: Sendable {
    private let count = Mutex(0)

    func next(_ prefix: String) -> String {
        count.withLock { count in
            count += 1
            return "\(prefix)-\(count)"
        }
    }
}
