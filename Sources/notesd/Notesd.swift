import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOPosix
import NIOSSL
import NotesModel
import NotesPostgres
import NotesServer
import NotesStore
import ServiceLifecycle

/// `notesd`: the daemon. Wiring only: options, paths, the store, and one
/// `ServiceGroup` that owns signals and shuts every service down in order.
@main
struct Notesd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notesd",
        abstract: "The notes daemon: record store, sharing, HTTP API and change notifications.",
        discussion: """
            With no options it keeps its data in $NOTES_DATA_DIR (else $XDG_DATA_HOME/notes or \
            ~/.local/share/notes), listens on the Unix socket $NOTES_SOCKET (else \
            $XDG_RUNTIME_DIR/notes/notesd.sock, else DATA_DIR/notesd.sock), and makes the Unix \
            user who runs it the admin, with an account of the same name.

            --database postgres://… keeps the records in PostgreSQL instead, so that several \
            notesd (behind one load balancer) serve the same accounts: each migrates the schema \
            at start (a database a newer notesd migrated is refused), uses a pool of at most \
            \(PostgresDatabase.defaultMaximumConnections) connections plus one that listens for \
            the others' changes, and cancels any statement running past \
            \(PostgresDatabase.defaultStatementTimeout.components.seconds) s. sslmode is disable, \
            prefer (the default over TCP), require or verify-full, as in libpq.

            Examples:
              notesd
              notesd --data-dir /var/lib/notes --socket /run/notes/notesd.sock --listen 127.0.0.1:8420
              notesd --database 'postgres://notes@db.example.com:5432/notes?sslmode=verify-full' --listen 127.0.0.1:8420
              notesd --database postgresql://notes@%2Frun%2Fpostgresql/notes
              notesd migrate --from sqlite:/var/lib/notes/notes.sqlite --to postgres://notes@db.example.com/notes
            """,
        version: "notesd \(NotesVersion.release) (API \(NotesVersion.api))",
        subcommands: [MigrateCommand.self, BackupCommand.self, RestoreCommand.self, ReindexCommand.self])

    /// Raises the soft limit on open descriptors to the hard one: every connection is a
    /// descriptor, and systemd's default soft limit (1,024) is four clients' worth of
    /// `Limits.maxConnectionsPerClient`. Returns the limit in force.
    static func raiseDescriptorLimit() -> UInt64 {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = rlimit(rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max)
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return UInt64(limit.rlim_cur)
    }

    /// glibc's allocator, set for a server whose event loops receive 16 MB bodies while
    /// its writer runs SQLite on another thread. With an arena per thread, the writer's
    /// small allocations kept faulting in fresh pages and taking the TLB shootdowns of
    /// other threads' unmaps, inside the transaction every other account waits for. Two
    /// arenas took a 400-note batch's transaction from 18 to 14 ms of CPU, with notesd's
    /// peak memory no higher.
    static func tuneAllocator() {
        ProcessMemory.tune(arenas: 2, keepFree: 128 * 1024)
    }

    /// Runs Swift concurrency on NIO's event loops, so that a request's handler runs on
    /// the thread that read it instead of hopping to the cooperative pool and back (two
    /// context switches per request, expensive on small virtual machines).
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "--render-worker" {
            // Before NIO opens anything: the worker closes every descriptor it inherited.
            RenderWorker.confine()
            RenderWorker.serve()
            return
        }
        tuneAllocator()
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await main(nil)
    }

    @Option(help: "Directory for the database and key material.")
    var dataDir: String?

    @Option(help: "Path of the Unix socket to listen on.")
    var socket: String?

    @Option(help: "Also serve HTTP on TCP, as HOST:PORT (clients then need a bearer token).")
    var listen: String?

    @Option(help: ArgumentHelp("With --tls-key: speak TLS on --listen with this certificate chain (PEM, the server's certificate first).", valueName: "FILE"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The private key of --tls-cert (PEM, unencrypted; readable by notesd's user only).", valueName: "FILE"))
    var tlsKey: String?

    @Option(
        help:
            "Database URL (default $NOTES_DATABASE_URL, else sqlite:DATA_DIR/notes.sqlite): sqlite:PATH, or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE] (also postgresql://; a Unix socket as a host of %2Frun%2Fpostgresql or ?host=/run/postgresql)."
    )
    var database: String?

    @Option(help: "Base URL of share links and public pages (default http://HOST:PORT of --listen).")
    var publicURL: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            "IP address of a reverse proxy in front of notesd, whose X-Forwarded-For is believed when counting wrong passwords and tokens (repeat for several).",
            valueName: "IP"))
    var trustedProxies: [String] = []

    @Option(
        help: ArgumentHelp(
            "Storage per account: note text, attachments and kept versions in the zones it owns (participants' writes count for the owner). 500M, 10G, or none.",
            valueName: "SIZE"))
    var quota: String = "10G"

    @Option(help: "Seconds a connection may sit with no request under way before it is closed.")
    var idleTimeout: Int = Limits.idleConnectionSeconds

    @Option(help: "Seconds a request body may take beyond one second per 4 KiB received; a slower upload is cut off.")
    var bodyTimeout: Int = Limits.requestBodySeconds

    @Option(
        help: ArgumentHelp(
            "While others use notesd, one account's uploads of 64 KiB or more are let in at this many MiB a second (0: never held back).",
            valueName: "MIB"))
    var sharedUploadRate: Int = Limits.pacedUploadBytesPerSecond >> 20

    @Option(
        help: ArgumentHelp(
            "While others use notesd, one account reads answers of 64 KiB or more at this many MiB a second; past it, its next requests wait (0: never held back).",
            valueName: "MIB"))
    var sharedDownloadRate: Int = Limits.pacedDownloadBytesPerSecond >> 20

    @Option(help: "Seconds a public page may take to render a note before it is shown as plain text.")
    var renderTimeout: Double = 5

    @Flag(help: .hidden)
    var renderWorker = false

    @Flag(help: "Keep no search index: saves the index's disk and CPU; searches are refused (503).")
    var noSearch = false

    @Option(help: "Keep every version of a note for this many days.")
    var keepAllVersions: Int = 30

    @Option(help: "Then keep one version a day until this many days; older, one a week.")
    var keepDailyVersions: Int = 365

    @Option(help: "Days a deleted note stays in its zone's trash (the mount's .trash/) before it and its history are purged.")
    var trashDays: Int = 30

    func run() async throws {
        if renderWorker {
            RenderWorker.serve()
            return
        }
        // A render worker killed mid-write must not take notesd with it.
        signal(SIGPIPE, SIG_IGN)
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level must be one of: \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "notesd")
        let descriptors = Self.raiseDescriptorLimit()
        logger.debug("descriptors", metadata: ["limit": "\(descriptors)"])
        let paths = try DaemonPaths(dataDir: dataDir, socket: socket, database: database)
        let tcp = try listen.map(Self.parseListen)
        let tls = try Self.tlsConfiguration(certificate: tlsCert, key: tlsKey, listening: tcp != nil)
        if let tcp, tls == nil, !Self.isLoopback(tcp.host) {
            logger.warning(
                """
                notesd listens on \(tcp.host):\(tcp.port) without TLS: tokens, passwords and notes travel in clear to anyone on the \
                network. Give it --tls-cert and --tls-key, or put it behind a reverse proxy that speaks TLS (nginx, Caddy) and \
                listen on 127.0.0.1, or keep it to a network you trust.
                """)
        }
        let scheme = tls == nil ? "http" : "https"
        let baseURL = publicURL ?? tcp.map { "\(scheme)://\(Self.urlHost($0.host)):\($0.port)" } ?? "http://localhost"
        let metrics = DaemonMetrics.bootstrap()

        guard let quotaBytes = StoragePolicy.parseSize(quota) else {
            throw ValidationError("--quota must be a size such as 500M or 10G, or none; it was \(quota).")
        }
        guard keepAllVersions >= 1, keepDailyVersions >= keepAllVersions, keepDailyVersions <= 36_500 else {
            throw ValidationError("--keep-all-versions must be at least 1 day, and --keep-daily-versions at least that and at most 36500.")
        }
        guard (1...36_500).contains(trashDays) else { throw ValidationError("--trash-days must be 1 to 36500; it was \(trashDays).") }
        let storage = StoragePolicy(
            quotaBytes: quotaBytes, retention: VersionRetention(keepAllDays: keepAllVersions, keepDailyDays: keepDailyVersions), trashDays: trashDays)
        guard (1...86_400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be 1 to 86400 seconds.") }
        guard (1...86_400).contains(bodyTimeout) else { throw ValidationError("--body-timeout must be 1 to 86400 seconds.") }
        guard (0...65_536).contains(sharedUploadRate) else { throw ValidationError("--shared-upload-rate must be 0 to 65536 MiB a second.") }
        guard (0...65_536).contains(sharedDownloadRate) else { throw ValidationError("--shared-download-rate must be 0 to 65536 MiB a second.") }
        guard renderTimeout.isFinite, renderTimeout >= 0.1, renderTimeout <= 600 else { throw ValidationError("--render-timeout must be 0.1 to 600 seconds.") }
        let notifier = ChangeNotifier()
        let renderer = WorkerRendering(
            executable: URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path, arguments: ["--render-worker"],
            budget: .milliseconds(Int64(renderTimeout * 1000)))
        /// The API on the socket (and TCP), event streams and retention, on `store`.
        func serving(_ store: any RecordStore, notReady: @escaping @Sendable () -> String? = { nil }) throws -> [any Service] {
            let api = NotesAPI(
                store: store, notifier: notifier, publicURL: baseURL, clients: ClientAddress(trustedProxies: Set(trustedProxies)),
                idleTimeout: idleTimeout, bodyTimeout: bodyTimeout, sharedUploadRate: sharedUploadRate << 20,
                sharedDownloadRate: sharedDownloadRate << 20, renderer: renderer, metrics: metrics.exposition, notReady: notReady)
            var services: [any Service] = [
                UnixSocketServer(
                    application: try api.application(address: .unixDomainSocket(path: paths.socket), logger: Logger(label: "notesd.socket")),
                    path: paths.socket),
                RetentionService(store: store, logger: logger),
            ]
            if let tcp {
                services.append(try api.application(address: .hostname(tcp.host, port: tcp.port), tls: tls, logger: Logger(label: "notesd.tcp")))
            }
            // Last, so that it is told of shutdown first: a server waits for its open
            // connections to end, and an event stream ends only when the notifier closes
            // it (an open stream on TCP once held notesd past SIGTERM for good).
            services.append(NotifierService(notifier: notifier))
            return services
        }
        let starting: Logger.Metadata = [
            "socket": "\(paths.socket)", "database": "\(paths.database)", "tcp": "\(listen ?? "off")", "publicURL": "\(baseURL)",
            "quota": "\(quotaBytes.map { "\($0) bytes" } ?? "none")",
        ]
        switch paths.database {
        case .sqlite(let path):
            let store = try SQLiteStore(
                path: path, logger: Logger(label: "notesd.store"), storage: storage, searchable: !noSearch,
                onChange: { notices in
                    metrics.noticesCommittedHere.increment(by: notices.count)
                    notifier.publish(notices)
                })
            try await Self.ensureAdmin(store, logger: logger)
            // One process owns the file: a restore still listed was cut short when notesd stopped.
            try await Self.undoAbandonedRestores(store, startedBefore: .distantFuture, logger: logger)
            try paths.prepareSocket()
            let services = try serving(store)
            logger.notice("notesd starting", metadata: starting)
            let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            try await group.run()
        case .postgres(let location):
            try paths.prepareSocket()
            let database = PostgresDatabase(location, logger: Logger(label: "notesd.postgres"))
            let feed = PostgresChangeFeed(instance: PostgresChangeFeed.uniqueInstanceName())
            // Commits made here reach this instance's streams at once (onChange); those
            // of other instances through the listener, which skips this one's echoes.
            let store = PostgresStore(
                database: database, logger: Logger(label: "notesd.store"), storage: storage, changeFeed: feed, searchable: !noSearch,
                onChange: { notices in
                    metrics.noticesCommittedHere.increment(by: notices.count)
                    notifier.publish(notices)
                })
            let listener = PostgresChangeListener(
                location: location, feed: feed, logger: Logger(label: "notesd.listen"),
                heard: { notices in
                    metrics.noticesHeard.increment(by: notices.count)
                    notifier.publish(notices)
                },
                ended: { endings in
                    for ending in endings {
                        switch ending {
                        case .token(let id): notifier.endStreams(tokenID: id)
                        case .account(let name): notifier.endStreams(account: name)
                        }
                    }
                },
                listening: { again in
                    metrics.listening.record(1)
                    if again { metrics.listenerReconnects.increment() }
                    notifier.askEveryoneToFetch()
                },
                reachable: { reachable in
                    if !reachable { metrics.listening.record(0) }
                    database.markReachable(reachable)
                })
            let metadata = starting.merging(["instance": "\(feed.instance)"]) { $1 }
            // The pool runs first and stops last; the rest starts once the schema is
            // migrated (or stops notesd, with the reason, if the database is newer).
            let group = ServiceGroup(
                services: [
                    PostgresPoolService(database: database),
                    AfterStart(
                        logger: logger,
                        services: [ListenerService(listener: listener)]
                            + (try serving(
                                store,
                                notReady: {
                                    // Its subscribers would miss what other instances save: send requests elsewhere until it listens.
                                    listener.isListening
                                        ? nil
                                        : "This notesd does not hear other instances' changes yet (its listening connection to PostgreSQL is being made); it is ready again once it does."
                                }))
                    ) {
                        try await database.checkReachable()
                        try await database.migrate()
                        try await Self.ensureAdmin(store, logger: logger)
                        // Other instances may be restoring right now: only old restores were abandoned.
                        try await Self.undoAbandonedRestores(
                            store, startedBefore: Date().addingTimeInterval(-RestoreRules.abandonedAfterSeconds), logger: logger)
                        logger.notice("notesd starting", metadata: metadata)
                    },
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            try await group.run()
        }
        logger.notice("notesd stopped")
    }

    /// Takes back restores from the trash that an instance stopped in the middle of:
    /// their records go back to the trash, and the zones' change pages move on.
    static func undoAbandonedRestores(_ store: any RecordStore, startedBefore: Date, logger: Logger) async throws {
        let undone = try await store.undoUnfinishedRestores(startedBefore: startedBefore)
        if undone > 0 { logger.warning("restores from the trash cut short by a stop were taken back; restore those folders again", metadata: ["restores": "\(undone)"]) }
    }

    /// The TLS configuration of `--tls-cert` and `--tls-key`, read now so that a
    /// missing or mismatched file stops notesd at start with its name, not at the first
    /// client's handshake.
    static func tlsConfiguration(certificate: String?, key: String?, listening: Bool) throws -> TLSConfiguration? {
        switch (certificate, key) {
        case (nil, nil):
            return nil
        case (.some, nil), (nil, .some):
            throw ValidationError("--tls-cert and --tls-key go together: give both (PEM files), or neither.")
        case (.some(let certificate), .some(let key)):
            guard listening else {
                throw ValidationError("--tls-cert and --tls-key are for the TCP listener: add --listen HOST:PORT (the Unix socket needs no TLS).")
            }
            let chain: [NIOSSLCertificate]
            do {
                chain = try NIOSSLCertificate.fromPEMFile(certificate)
            } catch {
                throw ValidationError("Cannot read the certificate chain \(certificate) (\(error)); it must be PEM, beginning with -----BEGIN CERTIFICATE-----.")
            }
            guard !chain.isEmpty else {
                throw ValidationError("\(certificate) holds no certificate; it must be PEM, beginning with -----BEGIN CERTIFICATE-----.")
            }
            let privateKey: NIOSSLPrivateKey
            do {
                privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
            } catch {
                throw ValidationError("Cannot read the private key \(key) (\(error)); it must be an unencrypted PEM key readable by notesd's user.")
            }
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
            configuration.minimumTLSVersion = .tlsv12
            // A key that does not belong to the certificate fails here, at start.
            do {
                _ = try NIOSSLContext(configuration: configuration)
            } catch {
                throw ValidationError("The private key \(key) does not go with the certificate \(certificate) (\(error)).")
            }
            return configuration
        }
    }

    /// A host as it goes in a URL (an IPv6 address in brackets).
    static func urlHost(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }

    /// Whether a listening address stays on this machine.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    static func parseListen(_ text: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
            throw ValidationError("--listen must be HOST:PORT, for example 127.0.0.1:8420.")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    /// The Unix user running the daemon is its admin, with an account of the same name,
    /// so that a single user needs no set-up at all.
    /// (Several instances on one database may start together: one creates it.)
    static func ensureAdmin(_ store: any RecordStore, logger: Logger) async throws {
        let user = ProcessInfo.processInfo.userName
        if try await store.account(named: user) != nil { return }
        let created: Bool
        do {
            _ = try await store.createAccount(name: user, email: nil, isAdmin: true)
            created = true
        } catch {
            guard error.code == .constraintViolation else { throw error }
            created = false
        }
        if created {
            logger.notice("created the admin account", metadata: ["account": "\(user)"])
        } else if try await store.account(named: user) == nil {
            throw NotesError(.internalError, "The admin account \(user) could not be created.")
        }
    }
}

/// Ends every event stream when shutdown begins (so open streams do not hold the
/// HTTP servers open), and sends keep-alives meanwhile.
struct NotifierService: Service {
    let notifier: ChangeNotifier

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(15))
                    notifier.heartbeat()
                }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        notifier.close()
    }
}

/// Thins old versions by the retention rule, empties the trash of what is past its
/// days and deletes tombstones past 90 days: once at start, then every hour, in small
/// transactions so that writers wait milliseconds at most. Every 10 minutes, takes back
/// restores from the trash that a stopped instance left unfinished.
struct RetentionService: Service {
    let store: any RecordStore
    let logger: Logger

    func run() async throws {
        var pass = 0
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await Notesd.undoAbandonedRestores(
                    store, startedBefore: Date().addingTimeInterval(-RestoreRules.abandonedAfterSeconds), logger: logger)
            } catch {
                logger.error("taking back an abandoned restore failed; it is tried again in 10 minutes", metadata: ["error": "\(error)"])
            }
            defer { pass += 1 }
            guard pass % 6 == 0 else {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(600)) }
                continue
            }
            do {
                try await store.pruneVersions(maxRecords: 200)
            } catch {
                logger.error("version retention failed; it is tried again in an hour", metadata: ["error": "\(error)"])
            }
            do {
                _ = try await store.purgeTrash(maxRecords: 200)
            } catch {
                logger.error("emptying the trash failed; it is tried again in an hour", metadata: ["error": "\(error)"])
            }
            do {
                try await store.pruneTombstones()
            } catch {
                logger.error("tombstone retention failed; it is tried again in an hour", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(600)) }
        }
    }
}

/// PostgreSQL's connection pool; every query waits for it to run. It ends on graceful
/// shutdown, after the services that use it (it comes first in the group).
struct PostgresPoolService: Service {
    let database: PostgresDatabase

    func run() async throws {
        await database.run()
    }
}

/// Runs `start` (migrations, the admin account), then `services` as a group of their
/// own under the daemon's: shut down in reverse order when the daemon is, and none of
/// them started if `start` fails (notesd then exits with its reason).
struct AfterStart: Service {
    let logger: Logger
    let services: [any Service]
    let start: @Sendable () async throws -> Void

    init(logger: Logger, services: [any Service], start: @escaping @Sendable () async throws -> Void) {
        self.logger = logger
        self.services = services
        self.start = start
    }

    func run() async throws {
        try await start()
        try await ServiceGroup(services: services, logger: logger).run()
    }
}

/// Hears other instances' commits until shutdown.
struct ListenerService: Service {
    let listener: PostgresChangeListener

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await listener.run()
        }
    }
}
