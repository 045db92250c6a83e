#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
public import Logging
public import NotesClient
import NotesFS
import NotesModel
import NotesReplica
import ServiceLifecycle
import Synchronization

/// Runs one mount in the foreground: replica, file tree, sync engine and the libfuse
/// session, until SIGTERM/SIGINT or an external unmount.
public enum MountRunner {
    /// A replica holds one server's notes: the same account name on another server (a
    /// team server, after a local notesd) must not take it, or its queued saves would go
    /// up to the wrong server. Replicas from before this was recorded are taken as the
    /// current server's.
    static func checkServer(of replica: Replica, at path: String, client: NotesClient, account: String) throws {
        let server: String
        switch client.endpoint {
        case .unixSocket: server = "local notesd"
        case .http(let url): server = url
        }
        if let saved = try replica.meta("server"), !ConnectionChoice.sameServer(saved, server) {
            throw NotesError(
                .constraintViolation,
                "The replica \(path) holds \(account)'s notes from \(saved), not from \(server); mounting it would mix the two. Mount with --cache-dir FOLDER to keep a replica for \(server) apart."
            )
        }
        try replica.setMeta("server", server)
    }

    public static func run(mountpoint: String, client: NotesClient, cacheDirectory: String, conflictMarkers: Bool = false, logger: Logger) async throws {
        ProcessMemory.tune(arenas: 2, keepFree: 128 * 1024)
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
        try checkServer(of: replica, at: replicaPath, client: client, account: account)

        // The tree asks the engine for uploads; the engine is made after the tree.
        let engineBox = Mutex<SyncEngine?>(nil)
        let tree = try NoteTree(account: account, replica: replica, cacheDirectory: cacheDirectory) {
            engineBox.withLock { $0 }?.requestUpload()
        }
        let events = try EventLog(path: URL(fileURLWithPath: cacheDirectory).appendingPathComponent("events-\(account).jsonl").path)
        let engine = SyncEngine(client: client, replica: replica, tree: tree, logger: logger, conflictMarkers: conflictMarkers, events: events)
        engineBox.withLock { $0 = engine }
        var socketWatch: SocketWatch?
        if case .unixSocket(let path) = client.endpoint {
            socketWatch = SocketWatch(socketPath: path) { engine.notesdMayBeBack() }
        }
        defer { socketWatch?.stop() }

        let fileSystem = VirtualFolders(tree: tree, service: client, events: events, isOnline: { engine.isOnline }) { engine.requestFetch() }
        let mount = FuseMount(mountpoint: mountpoint, fileSystem: fileSystem)
        do {
            try mount.mount()
        } catch {
            throw NotesError(.invalidArguments, FuseAccess.current().explain(errno: error.errno, mountpoint: mountpoint))
        }
        tree.attach(mount)
        // The search index opens (and on a first mount, starts filling) after the
        // mount is up: a mount never waits for it.
        let search = Mutex<ReplicaSearch?>(nil)
        Task.detached(priority: .background) {
            do {
                let opened = try ReplicaSearch(replica: replica, logger: logger)
                search.withLock { $0 = opened }
                fileSystem.attach(opened)
            } catch {
                logger.error("the mount's search index could not be opened; .search/ and notes search offline find nothing", metadata: ["error": "\(error)"])
            }
        }
        defer { search.withLock { $0 }?.close() }
        ReplicaLocation.register(ReplicaLocation.Registration(mountpoint: mountpoint, replica: replicaPath, account: account, pid: getpid()))
        defer { ReplicaLocation.unregister(mountpoint: mountpoint) }
        logger.info("mounted \(account)'s notes at \(mountpoint) (replica in \(cacheDirectory))")

        // The terminal a background mount was started from may close: it keeps running.
        signal(SIGHUP, SIG_IGN)
        // As notesd: one ServiceGroup, ended by SIGTERM or SIGINT (the kernel session
        // is unmounted first, then the sync engine stops) or by an external
        // `fusermount3 -u` (the FUSE loop returns and the group shuts down).
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: SyncService(engine: engine)),
                    .init(service: FuseService(mount: mount), successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
        mount.unmount()
        mount.close()
        let unsaved = tree.saveAllBeforeUnmount()
        if unsaved > 0 {
            logger.critical(
                "\(unsaved) closed file(s) could not be saved: the disk of \(cacheDirectory) is full. Their last writes are lost; the notes keep their previous content.")
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

/// The libfuse session loop, on a thread of its own (it blocks); a graceful shutdown
/// unmounts, which ends the loop.
struct FuseService: Service {
    let mount: FuseMount

    func run() async throws {
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let thread = Thread {
                    _ = mount.run()
                    done.resume()
                }
                thread.name = "fuse"
                thread.start()
            }
        } onGracefulShutdown: {
            mount.unmount()
        }
    }
}

/// The sync engine's loop, cancelled when the group shuts down; what stays queued is
/// handed to notesd once more after the unmount (`MountRunner.run`).
struct SyncService: Service {
    let engine: SyncEngine

    func run() async throws {
        await cancelWhenGracefulShutdown { await engine.run() }
    }
}
