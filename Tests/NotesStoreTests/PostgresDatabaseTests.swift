import Foundation
import NotesModel
@testable import NotesPostgres
import NotesTestSupport
import Testing

/// `--database postgres://…` as libpq reads it, and the PostgreSQL schema's migrations
/// on a real, throwaway server.
@Suite struct PostgresDatabaseTests {
    @Test func urlsReadAsLibpqReadsThem() throws {
        let tcp = try PostgresLocation(url: "postgres://notes:secret@db.example.com:6432/team?sslmode=require")
        #expect(tcp.endpoint == .tcp(host: "db.example.com", port: 6432))
        #expect(tcp.user == "notes" && tcp.password == "secret" && tcp.database == "team" && tcp.tls == .require)
        #expect(!tcp.description.contains("secret"), "the password showed in \(tcp.description)")

        let socket = try PostgresLocation(url: "postgresql://notes@%2Frun%2Fpostgresql/team")
        #expect(socket.endpoint == .socket(directory: "/run/postgresql", port: 5432))
        #expect(socket.socketPath == "/run/postgresql/.s.PGSQL.5432")
        #expect(socket.tls == .disable)

        let query = try PostgresLocation(url: "postgres:///team?host=/var/run/postgresql&port=5433&user=notes")
        #expect(query.endpoint == .socket(directory: "/var/run/postgresql", port: 5433))
        #expect(query.user == "notes" && query.database == "team")

        let defaults = try PostgresLocation(url: "postgres://notes@localhost")
        #expect(defaults.endpoint == .tcp(host: "localhost", port: 5432))
        #expect(defaults.database == "notes" && defaults.tls == .prefer)
    }

    @Test(arguments: [
        "postgres://u:hunter2@h/db?sslmode=sometimes",
        "postgres://u:hunter2@h/db?colour=blue",
        "postgres://u:hunter2@h:99999/db",
        "postgres://u:hunter2@%2Ftmp/db?sslmode=require",
        "mysql://u:hunter2@h/db",
    ])
    func badURLsAreRefusedWithoutShowingThePassword(_ url: String) {
        do {
            _ = try PostgresLocation(url: url)
            Issue.record("\(url) was taken")
        } catch {
            #expect(error.code == .invalidArguments)
            #expect(!error.message.contains("hunter2"), "the password showed in: \(error.message)")
            #expect(error.message.contains("postgres://USER@HOST"), "no example in: \(error.message)")
        }
    }

    /// A database of the shared throwaway cluster, and a running pool on it.
    static func database(_ url: String) throws -> (PostgresDatabase, Task<Void, Never>) {
        let database = PostgresDatabase(try PostgresLocation(url: url))
        return (database, Task { await database.run() })
    }

    @Test func migrationsApplyOnceEvenWhenTwoInstancesStartTogether() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let (first, firstRun) = try Self.database(url)
        let (second, secondRun) = try Self.database(url)
        defer {
            firstRun.cancel()
            secondRun.cancel()
        }
        async let a = first.migrate()
        async let b = second.migrate()
        let applied = try await a + b
        #expect(applied.sorted() == Array(1...PostgresMigrations.latest), "migrations applied: \(applied)")
        #expect(try await first.migrate().isEmpty)
        #expect(try await second.schemaVersion() == PostgresMigrations.latest)
        let tables = try cluster.psql(
            "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'", database: PostgresCluster.databaseName(of: url))
        for table in ["accounts", "counters", "participants", "records", "schema_migrations", "shares", "tokens", "trash", "usage", "versions", "zones"] {
            #expect(tables.split(separator: ",").contains(Substring(table)), "no table \(table) in \(tables)")
        }
    }

    @Test func aDatabaseANewerNotesdMigratedIsRefusedWithAClearMessage() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let (database, run) = try Self.database(url)
        defer { run.cancel() }
        try await database.migrate()
        let name = PostgresCluster.databaseName(of: url)
        try cluster.psql("INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')", database: name)
        do {
            try await database.migrate()
            Issue.record("a database at version 99 was taken")
        } catch {
            #expect(error.code == .serviceUnavailable)
            #expect(error.message.contains("version 99") && error.message.contains("newer"), "\(error.message)")
        }
    }
}
