public import Hummingbird
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

    public init(
        store: any RecordStore, notifier: ChangeNotifier, publicURL: String, clients: ClientAddress = ClientAddress(),
        idleTimeout: Int = Limits.idleConnectionSeconds, bodyTimeout: Int = Limits.requestBodySeconds,
        renderer: any NoteRendering = InProcessRendering()
    ) {
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
        router.add(middleware: ErrorMiddleware(routes: routes))
        router.get("healthz") { _, _ in JSONResponse.make(["status": "ok"]) }
        // Ready: the database answers and is migrated (503 otherwise, through the error mapping).
        router.get("readyz") { [store] _, _ in
            try await store.checkReady()
            return JSONResponse.make(["status": "ready"])
        }
        PublicPageController(store: store, renderer: renderer).addRoutes(to: router)
        let peers = PeerAccountCache()
        let v1 = router.group("v1").add(middleware: IdentityMiddleware(store: store, peers: peers, clients: clients))
        AccountController(store: store, notifier: notifier, peers: peers).addRoutes(to: v1)
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
    public func application(address: BindAddress, logger: Logger) -> some ApplicationProtocol {
        let limiter = ConnectionLimiter(limit: Limits.maxConnectionsPerClient)
        let bodyTimeout = bodyTimeout
        return Application(
            router: router(),
            server: .http1(configuration: .init(
                additionalChannelHandlers: [
                    limiter.handler(),
                    SlowBodyGuard(graceSeconds: bodyTimeout, minimumBytesPerSecond: Limits.minimumBodyBytesPerSecond),
                ],
                idleTimeout: .seconds(Int64(idleTimeout)))),
            configuration: .init(address: address, serverName: "notesd"),
            logger: logger)
    }
}
