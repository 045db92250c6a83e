public import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Metrics
public import NIOSSL
public import NotesModel
public import Logging

/// Builds the HTTP applications of the daemon: one on the Unix socket and, when asked,
/// one on TCP, sharing one router, store and notifier.
public struct NotesAPI: Sendable {
    public let store: any RecordStore
    public let notifier: ChangeNotifier
    /// Base of share URLs and public pages.
    public let publicURL: String
    /// How a client's address is found (directly, or behind trusted proxies).
    public let clients: ClientAddress
    /// Seconds an idle connection stays open.
    public let idleTimeout: Int
    /// How public pages render notes (notesd: in a worker process with a time budget).
    public let renderer: any NoteRendering
    /// Seconds a request body may take beyond what its size earns (see `SlowBodyGuard`).
    public let bodyTimeout: Int
    /// Bytes a second at which one caller's large bodies are let in while others use
    /// notesd (`TransferPace`); 0: never paced.
    public let sharedUploadRate: Int
    /// As `sharedUploadRate`, for the answers it is sent; 0: never paced.
    public let sharedDownloadRate: Int
    /// The metrics in Prometheus' text format, for `GET /metrics` (absent: 404).
    public let metrics: (@Sendable () -> [UInt8])?
    /// Why this notesd should not be sent requests now though its database answers (on
    /// PostgreSQL: it does not hear other instances' changes); `nil` when it should.
    public let notReady: @Sendable () -> String?

    public init(
        store: any RecordStore, notifier: ChangeNotifier, publicURL: String, clients: ClientAddress = ClientAddress(),
        idleTimeout: Int = Limits.idleConnectionSeconds, bodyTimeout: Int = Limits.requestBodySeconds,
        sharedUploadRate: Int = Limits.pacedUploadBytesPerSecond, sharedDownloadRate: Int = Limits.pacedDownloadBytesPerSecond,
        renderer: any NoteRendering = InProcessRendering(), metrics: (@Sendable () -> [UInt8])? = nil,
        notReady: @escaping @Sendable () -> String? = { nil }
    ) {
        self.sharedUploadRate = sharedUploadRate
        self.sharedDownloadRate = sharedDownloadRate
        self.notReady = notReady
        self.metrics = metrics
        self.bodyTimeout = bodyTimeout
        self.renderer = renderer
        self.idleTimeout = idleTimeout
        self.store = store
        self.notifier = notifier
        self.publicURL = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
        self.clients = clients
    }

    /// The router with every endpoint; `docs/openapi.yaml` describes them.
    public func router() -> Router<NotesRequestContext> {
        let router = Router(context: NotesRequestContext.self)
        let routes = RouteTable()
        // Outside the error mapping, so that it counts the status the client got.
        if metrics != nil { router.add(middleware: MetricsMiddleware()) }
        router.add(middleware: APIVersionMiddleware())
        let refusals = RefusalPace()
        router.add(middleware: ErrorMiddleware(routes: routes, refusals: refusals, clients: clients))
        router.get("healthz") { _, _ in JSONResponse.make(["status": "ok"]) }
        // Ready: the database answers and is migrated (503 otherwise, through the error mapping).
        router.get("readyz") { [store, notReady] _, _ in
            try await store.checkReady()
            if let reason = notReady() { throw NotesError(.serviceUnavailable, reason, retryAfter: 1) }
            return JSONResponse.make(["status": "ready"])
        }
        let budget = CallerBudget()
        let charge = CallerBudgetMiddleware(
            budget: budget, clients: clients,
            pacer: TransferPacer(
                sharedUploadRate > 0 || sharedDownloadRate > 0
                    ? TransferPace(
                        uploadBytesPerSecond: sharedUploadRate > 0 ? Double(sharedUploadRate) : .infinity,
                        downloadBytesPerSecond: sharedDownloadRate > 0 ? Double(sharedDownloadRate) : .infinity) : nil))
        // Behind an https:// public URL (TLS here or at a proxy), the link cookie is Secure.
        PublicPageController(
            store: store, renderer: renderer, clients: clients, secureCookies: publicURL.lowercased().hasPrefix("https://"),
            views: PublicViewCounter(store: store), refusals: refusals
        )
        .addRoutes(to: router.group().add(middleware: charge))
        let peers = PeerAccountCache()
        let identify = IdentityMiddleware(store: store, peers: peers, clients: clients)
        if let metrics {
            // For the admin only (a token, or the admin or root on the socket): request
            // counts and latencies say how busy the team is, not for the whole network.
            router.group().add(middleware: identify).get("metrics") { _, context in
                guard context.identity?.isAdmin == true else {
                    throw NotesError(.permissionFailure, "Only notesd's admin may read its metrics; scrape with an admin's token (Prometheus: authorization.credentials_file).")
                }
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metrics())))
            }
        }
        let accounts = AccountController(store: store, notifier: notifier, peers: peers, publicURL: publicURL)
        // Whoever holds a sign-in link has no token yet; their address is charged.
        accounts.addSignInRoute(to: router.group("v1").add(middleware: charge), clients: clients)
        router.group().add(middleware: charge).get(RouterPath(SignInCode.path)) { _, _ in SignInPage.response() }
        let v1 = router.group("v1").add(middleware: identify).add(middleware: charge)
        accounts.addRoutes(to: v1)
        RecordController(store: store).addRoutes(to: v1)
        ShareController(store: store, publicURL: publicURL).addRoutes(to: v1)
        EventController(notifier: notifier).addRoutes(to: v1)
        routes.fill(from: router.routes)
        return router
    }

    /// An application bound to `address`; run it as a service. A connection with no
    /// request under way for `idleTimeout` seconds is closed (a client that
    /// sends headers a byte at a time included); event streams are never idle (they
    /// carry a keep-alive every 15 s). A request body must keep up
    /// `Limits.minimumBodyBytesPerSecond` after `bodyTimeout` seconds of grace, or the
    /// connection is closed. On TCP, one address holds at most
    /// `Limits.maxConnectionsPerClient` connections.
    /// With `tls`, every connection speaks TLS first (HTTP/1.1 inside).
    public func application(address: BindAddress, tls: TLSConfiguration? = nil, logger: Logger) throws -> some ApplicationProtocol {
        let limiter = ConnectionLimiter(limit: Limits.maxConnectionsPerClient)
        let bodyTimeout = bodyTimeout
        let http = HTTPServerBuilder.http1(
            configuration: .init(
                additionalChannelHandlers: [
                    limiter.handler(),
                    SlowBodyGuard(graceSeconds: bodyTimeout, minimumBytesPerSecond: Limits.minimumBodyBytesPerSecond),
                    DrainSignal(),
                ],
                idleTimeout: .seconds(Int64(idleTimeout))))
        return Application(
            router: router(),
            server: try tls.map { try .tls(http, tlsConfiguration: $0) } ?? http,
            configuration: .init(address: address, serverName: "notesd"),
            logger: logger)
    }
}
