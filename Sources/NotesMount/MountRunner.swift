#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Foundation
public import Logging
public import NotesClient
import NotesFS
import NotesModel
import NotesReplica
import Synchronization

/// Runs one mount in the foreground: replica, file tree, sync engine and the libfuse
/// session, until SIGTERM/SIGINT or an external unmount.
public enum MountRunner {
    public static func run(mountpoint: String, client: NotesClient, cacheDirectory: String, conflictMarkers: Bool = false, logger: Logger) async throws {
        ProcessMemory.returnLargeBuffersToTheSystem()
        try ReplicaLocation.prepare(cacheDirectory)
        let account = try await accountName(client: client, cacheDirectory: cacheDirectory, logger: logger)
        let replicaPath = ReplicaLocation.path(in: cacheDirectory, account: account)
        let claim: Int32
        do {
            claim = try ReplicaLocation.claim(replicaPath)
        } catch let error as ReplicaError {
            throw NotesError(.constraintViolation, error.message)
        }
        defer { close(claim) }
        let replica = try Replica(path: replicaPath)
        try replica.setMeta("account", account)

        // The tree asks the engine for uploads; the engine is made after the tree.
        let engineBox = Mutex<SyncEngine?>(nil)
        let tree = try NoteTree(account: account, replica: replica, cacheDirectory: cacheDirectory) {
            engineBox.withLock { $0 }?.requestUpload()
        }
        let engine = SyncEngine(client: client, replica: replica, tree: tree, logger: logger, conflictMarkers: conflictMarkers)
        engineBox.withLock { $0 = engine }

        let mount = FuseMount(mountpoint: mountpoint, fileSystem: tree)
        do {
            try mount.mount()
        } catch {
            throw NotesError(.invalidArguments, "Cannot mount at \(mountpoint): \(String(cString: strerror(error.errno))). Is /dev/fuse there and the folder empty?")
        }
        tree.attach(mount)
        ReplicaLocation.register(ReplicaLocation.Registration(mountpoint: mountpoint, replica: replicaPath, account: account, pid: getpid()))
        defer { ReplicaLocation.unregister(mountpoint: mountpoint) }
        logger.info("mounted \(account)'s notes at \(mountpoint) (replica in \(cacheDirectory))")

        for signalNumber in [SIGTERM, SIGINT, SIGHUP] { signal(signalNumber, SIG_IGN) }
        let signalSources = [SIGTERM, SIGINT].map { signalNumber in
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { mount.unmount() }
            source.resume()
            return source
        }
        let sync = Task { await engine.run() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                _ = mount.run()
                done.resume()
            }
            thread.name = "fuse"
            thread.start()
        }
        sync.cancel()
        mount.unmount()
        mount.close()
        signalSources.forEach { $0.cancel() }
        let unsaved = tree.saveAllBeforeUnmount()
        if unsaved > 0 {
            logger.critical("\(unsaved) closed file(s) could not be saved: the disk of \(cacheDirectory) is full. Their last writes are lost; the notes keep their previous content.")
        }
        // One last try to hand queued saves to the daemon; what stays queued is uploaded
        // by the next mount.
        await engine.turns.turn { await engine.uploadPending() }
        let queued = (try? replica.pendingCount()) ?? 0
        logger.info("unmounted \(mountpoint)\(queued > 0 ? "; \(queued) changes stay queued for the next mount" : "")")
    }


    /// The account the daemon says we are, or, when it is away, the one whose replica
    /// this cache holds (so a mount can start offline).
    static func accountName(client: NotesClient, cacheDirectory: String, logger: Logger) async throws -> String {
        do {
            return try await client.whoami().name
        } catch {
            guard error.code == .serviceUnavailable else { throw error }
            let accounts = ReplicaLocation.accounts(in: cacheDirectory)
            guard accounts.count == 1, let name = accounts.first else { throw error }
            logger.warning("notesd is not reachable; mounting \(name)'s local replica")
            return name
        }
    }
}
