import Foundation
public import NotesModel
import NIOSSL
package import PostgresNIO

/// Where a PostgreSQL database is, from `notesd --database`, in libpq's URL forms:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…]` (or `postgresql://`),
/// with a Unix socket given as `?host=/run/postgresql` or as a percent-encoded host that
/// starts with `/` (`postgres://%2Frun%2Fpostgresql/notes`). As in libpq, the user
/// defaults to the process's user and the database to the user's name, and `sslmode`
/// to `prefer` over TCP (TLS when the server offers it, unverified); `require` insists
/// on TLS, `verify-full` also checks the certificate and the host name.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The folder holding the server's socket (`.s.PGSQL.<port>` in it).
        case socket(directory: String, port: Int)
    }

    public enum TLSMode: String, Sendable, Equatable {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    public var endpoint: Endpoint
    public var user: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    /// Whether `value` is meant for this backend (it may still be malformed).
    public static func matches(_ value: String) -> Bool {
        value.hasPrefix("postgres://") || value.hasPrefix("postgresql://")
    }

    public init(url value: String) throws(NotesError) {
        func refuse(_ why: String) -> NotesError {
            NotesError(
                .invalidArguments,
                "The database URL \(Self.redacted(value)) \(why). Write it as postgres://USER@HOST:PORT/DATABASE, or postgres://USER@%2Frun%2Fpostgresql/DATABASE for a Unix socket."
            )
        }
        guard Self.matches(value), let url = URLComponents(string: value) else { throw refuse("is not a postgres:// URL") }
        let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let known: Set<String> = ["sslmode", "host", "port", "user", "password", "dbname", "application_name"]
        if let unknown = query.keys.sorted().first(where: { !known.contains($0) }) { throw refuse("has an option notesd does not know: \(unknown)") }
        let port: Int
        if let text = query["port"] {
            guard let number = Int(text), (1...65_535).contains(number) else { throw refuse("has a port that is not a number from 1 to 65535") }
            port = number
        } else {
            port = url.port ?? 5432
        }
        guard (1...65_535).contains(port) else { throw refuse("has a port outside 1–65535") }
        let host = query["host"] ?? url.host ?? ""
        if host.hasPrefix("/") {
            endpoint = .socket(directory: host, port: port)
        } else {
            endpoint = .tcp(host: host.isEmpty ? "localhost" : host, port: port)
        }
        let processUser = ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        user = query["user"] ?? url.user.flatMap { $0.isEmpty ? nil : $0 } ?? processUser
        password = query["password"] ?? url.password
        let path = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        database = query["dbname"] ?? (path.isEmpty ? user : path)
        guard !database.contains("/") else { throw refuse("names a database with a / in it") }
        let mode = query["sslmode"] ?? (host.hasPrefix("/") ? "disable" : "prefer")
        switch mode {
        case "disable", "allow": tls = .disable
        case "prefer": tls = .prefer
        case "require", "verify-ca": tls = .require
        case "verify-full": tls = .verifyFull
        default: throw refuse("has sslmode=\(mode); use disable, prefer, require or verify-full")
        }
        if case .socket = endpoint, tls != .disable, tls != .prefer { throw refuse("asks for TLS over a Unix socket, which PostgreSQL does not offer") }
    }

    /// The URL without its password, for logs and messages.
    public var description: String {
        switch endpoint {
        case .tcp(let host, let port): "postgres://\(user)@\(host):\(port)/\(database)?sslmode=\(tls.rawValue)"
        case .socket(let directory, let port): "postgres://\(user)@/\(database)?host=\(directory)&port=\(port)"
        }
    }

    /// `value` with any password in it replaced by `***`.
    static func redacted(_ value: String) -> String {
        guard var url = URLComponents(string: value), url.password != nil else { return value }
        url.password = "***"
        return url.string ?? "(the URL given)"
    }

    /// The path of the server's socket file for a socket endpoint.
    public var socketPath: String? {
        if case .socket(let directory, let port) = endpoint { return "\(directory)/.s.PGSQL.\(port)" }
        return nil
    }

    /// postgres-nio's configuration for this location (pool and timeouts set by the caller).
    package func clientConfiguration() -> PostgresClient.Configuration {
        var configuration = endpointConfiguration()
        // Prepared statements planned once per connection, not for every call:
        // planning the modify's first read (custom plans, as PostgreSQL chose for it)
        // cost 0.37 ms a save, seven times running it. Plans made while a table was
        // nearly empty are made again as it grows (`PostgresStatistics`).
        configuration.options.additionalStartupParameters = [("plan_cache_mode", "force_generic_plan")]
        return configuration
    }

    private func endpointConfiguration() -> PostgresClient.Configuration {
        switch endpoint {
        case .socket:
            return PostgresClient.Configuration(unixSocketPath: socketPath!, username: user, password: password, database: database)
        case .tcp(let host, let port):
            let mode: PostgresClient.Configuration.TLS
            switch tls {
            case .disable:
                mode = .disable
            case .prefer, .require:
                // As libpq's prefer and require: encrypted, the certificate not checked.
                var configuration = TLSConfiguration.makeClientConfiguration()
                configuration.certificateVerification = .none
                mode = tls == .prefer ? .prefer(configuration) : .require(configuration)
            case .verifyFull:
                mode = .require(TLSConfiguration.makeClientConfiguration())
            }
            return PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: mode)
        }
    }

    /// postgres-nio's configuration for one connection of its own (outside the pool),
    /// with the same endpoint, credentials and TLS as the pool's.
    func connectionConfiguration(applicationName: String) throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch endpoint {
        case .socket:
            configuration = PostgresConnection.Configuration(unixSocketPath: socketPath!, username: user, password: password, database: database)
        case .tcp(let host, let port):
            let mode: PostgresConnection.Configuration.TLS
            switch tls {
            case .disable:
                mode = .disable
            case .prefer, .require:
                var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
                tlsConfiguration.certificateVerification = .none
                let context = try NIOSSLContext(configuration: tlsConfiguration)
                mode = tls == .prefer ? .prefer(context) : .require(context)
            case .verifyFull:
                mode = .require(try NIOSSLContext(configuration: TLSConfiguration.makeClientConfiguration()))
            }
            configuration = PostgresConnection.Configuration(host: host, port: port, username: user, password: password, database: database, tls: mode)
        }
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.additionalStartupParameters = [("application_name", applicationName)]
        return configuration
    }
}
