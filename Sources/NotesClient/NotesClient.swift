import AsyncHTTPClient
#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
public import NotesModel
import Synchronization

/// A client of `notesd`'s HTTP API, over its Unix socket or TCP.
///
/// Every failure arrives as `NotesError`: the server's own error body when it
/// answered, `serviceUnavailable` with a hint when it could not be reached.
public struct NotesClient: Sendable {
    /// Where the daemon listens.
    public enum Endpoint: Sendable, CustomStringConvertible {
        case unixSocket(String)
        case http(String)

        public var description: String {
            switch self {
            case .unixSocket(let path): "the socket \(path)"
            case .http(let url): url
            }
        }
    }

    /// One HTTP client per CA file (and pool name) for the whole process, never shut down. Unlike
    /// AsyncHTTPClient's shared client they do not retry failed connections until the
    /// request's deadline: a daemon that is not running is reported at once, not after a
    /// minute, and the callers that want to wait (the mount) retry on their own terms.
    private static let clients = Mutex<[String: HTTPClient]>([:])

    /// The HTTP client that trusts the system's CAs, or only those in `caFile`.
    static func http(trusting caFile: String?, pool: Pool?) -> HTTPClient {
        let key = "\(caFile ?? "")\u{0}\(pool?.name ?? "")"
        return clients.withLock { clients in
            if let client = clients[key] { return client }
            var configuration = HTTPClient.Configuration()
            configuration.timeout.connect = .seconds(5)
            configuration.connectionPool.retryConnectionEstablishment = false
            if let pool { configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = pool.connections }
            if let caFile {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.trustRoots = .file(caFile)
                configuration.tlsConfiguration = tls
            }
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[key] = client
            return client
        }
    }

    /// Connections of their own, for a program that acts for several people at once (a
    /// benchmark's accounts, each of whom would be on a machine of their own): requests
    /// of one never wait for a connection that another's fill.
    public struct Pool: Sendable {
        public let name: String
        /// Requests to one server beyond this many wait for a connection.
        public let connections: Int

        public init(name: String, connections: Int = 8) {
            self.name = name
            self.connections = connections
        }
    }

    public let endpoint: Endpoint
    public let token: String?
    /// PEM file of the CAs to trust for `https://` (else the system's).
    public let caFile: String?
    /// nil: the process's one pool (8 connections to each server).
    public let pool: Pool?
    let timeout: TimeAmount

    public init(endpoint: Endpoint, token: String? = nil, caFile: String? = nil, timeoutSeconds: Int64 = 60, pool: Pool? = nil) {
        self.endpoint = endpoint
        self.token = token
        self.caFile = caFile
        self.timeout = .seconds(timeoutSeconds)
        self.pool = pool
    }

    /// This client's HTTP connection pool.
    var http: HTTPClient { Self.http(trusting: caFile, pool: pool) }

    func url(_ path: String) -> String {
        switch endpoint {
        case .unixSocket(let socket):
            let host = socket.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? socket
            return "http+unix://\(host)\(path)"
        case .http(let base):
            return (base.hasSuffix("/") ? String(base.dropLast()) : base) + path
        }
    }

    func request(_ method: HTTPMethod, _ path: String, body: ByteBuffer? = nil) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url(path))
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(body)
        }
        return request
    }

    /// Sends a request and decodes the JSON answer, or throws the server's error.
    func call<Response: Decodable & Sendable>(_ method: HTTPMethod, _ path: String, body: (some Encodable & Sendable)?, as type: Response.Type) async throws(NotesError) -> Response
    {
        let data = try await exchange(method, path, body: body)
        let decode = { @Sendable () -> Result<Response, NotesError> in
            do {
                return .success(try NotesJSON.decoder().decode(Response.self, from: Data(data)))
            } catch {
                return .failure(NotesError(.internalError, "notesd's answer could not be read: \(error)"))
            }
        }
        return try (data.count > OffLoop.inlineBytes ? await OffLoop.run(decode) : decode()).get()
    }

    /// Sends a request and returns the body of a 2xx answer; any other answer is
    /// thrown as the server's error.
    func exchange(_ method: HTTPMethod, _ path: String, body: (some Encodable & Sendable)?) async throws(NotesError) -> [UInt8] {
        // Encoded straight into the buffer that is sent: an upload of 8 MiB is 11 MB of
        // JSON, and each copy on the way (to an array, then to the buffer) was another.
        let encode = { @Sendable () -> Result<ByteBuffer?, NotesError> in
            do {
                return .success(try body.map { ByteBuffer(bytes: try NotesJSON.encoder().encode($0)) })
            } catch {
                return .failure(NotesError(.invalidArguments, "Could not encode the request: \(error)"))
            }
        }
        let payload = try (OffLoop.isLarge(body) ? await OffLoop.run(encode) : encode()).get()
        let (status, data) = try await send(method, path, body: payload)
        guard (200..<300).contains(status) else {
            if let body = try? NotesJSON.decoder().decode(NotesJSON.ErrorBody.self, from: Data(data)) {
                throw body.notesError
            }
            throw NotesError(.internalError, "notesd answered HTTP \(status) without an error body.")
        }
        return data
    }

    /// The one place a request goes out: returns status and body whatever the
    /// status; only a failure to reach the daemon throws.
    func send(_ method: HTTPMethod, _ path: String, body: ByteBuffer?) async throws(NotesError) -> (status: Int, body: [UInt8]) {
        let response: HTTPClientResponse
        let buffer: ByteBuffer
        do {
            response = try await http.execute(request(method, path, body: body), timeout: timeout)
            buffer = try await response.body.collect(upTo: Limits.maxRequestBytes * 2)
        } catch {
            throw unreachable(error)
        }
        try checkAPIVersion(response.headers)
        return (Int(response.status.code), Array(buffer.readableBytesView))
    }

    /// Refuses an answer of another major API version than this client's (an answer
    /// without the field comes from something that is not notesd, and is read as usual).
    func checkAPIVersion(_ headers: HTTPHeaders) throws(NotesError) {
        guard let field = headers.first(name: NotesVersion.apiHeader), let version = Int(field), version != NotesVersion.api else { return }
        throw NotesError(
            .serviceUnavailable,
            "notesd at \(endpoint) speaks version \(version) of the API, and this notes (\(NotesVersion.release)) version \(NotesVersion.api): install the notes that goes with that notesd (`notesd --version` tells its release)."
        )
    }

    /// What a failure to reach notesd says: a TLS failure names the certificate
    /// options, anything else asks whether notesd runs.
    func unreachable(_ error: any Error) -> NotesError {
        if Self.isTLSFailure(error) {
            return NotesError(
                .serviceUnavailable,
                "Cannot reach notesd at \(endpoint) over TLS (\(Self.reason(error))). If its certificate comes from your own CA, pass that CA's PEM file with --ca-file or NOTES_CA_FILE; check that the URL's host is one the certificate names."
            )
        }
        if case .http(let url) = endpoint, url.lowercased().hasPrefix("http://"), (error as? HTTPClientError) == .remoteConnectionClosed {
            return NotesError(.serviceUnavailable, "notesd at \(url) closed the connection without an answer; if it speaks TLS (--tls-cert), use https://.")
        }
        return NotesError(.serviceUnavailable, "Cannot reach notesd at \(endpoint) (\(Self.reason(error))). Is it running? Start it with `notesd`, or pass --socket/--server.")
    }

    static func isTLSFailure(_ error: any Error) -> Bool {
        error is NIOSSLError || error is NIOSSLExtraError || "\(error)".contains("NIOSSL") || "\(error)".contains("certificate")
    }

    /// A short reason for a failed connection: the system's words for its errno.
    static func reason(_ error: any Error) -> String {
        if let error = error as? IOError {
            return String(cString: strerror(error.errnoCode)).lowercased()
        }
        if "\(error)".contains("CERTIFICATE_VERIFY_FAILED") {
            return "its certificate is not signed by a CA this client trusts"
        }
        if "\(error)".contains("failedToValidateHostname") {
            return "its certificate does not name this host"
        }
        return "\(error)"
    }

    func get<Response: Decodable & Sendable>(_ path: String, as type: Response.Type) async throws(NotesError) -> Response {
        try await call(.GET, path, body: Optional<API.Done>.none, as: type)
    }
}

extension NotesClient {
    /// An HTTP exchange with a raw body, for tools that test the API itself (fuzzers,
    /// malformed-input tests). Returns the status and body whatever the status is.
    public func raw(_ method: String, _ path: String, body: [UInt8]?) async throws(NotesError) -> (status: Int, body: [UInt8]) {
        try await send(HTTPMethod(rawValue: method), path, body: body.map { ByteBuffer(bytes: $0) })
    }
}
