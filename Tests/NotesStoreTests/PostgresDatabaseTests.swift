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

    /// A database an older notesd wrote, with one change counter for the whole
    /// database: after the migration that gives each zone its own, the change tags and
    /// zone tokens it handed out still hold (a mount pages on from its token and sees
    /// only what is new), new numbers come after every old one, the quota's usage is
    /// the same, and an old database token has expired (the client lists zones again).
    @Test func tokensAndTagsOfTheDatabaseWideCounterHoldAfterZonesCountApart() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let name = PostgresCluster.databaseName(of: url)
        let older = PostgresMigrations.all.filter { $0.version < 10 }
        var script = "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());\n"
        for migration in older {
            script +=
                migration.sql + ";\nINSERT INTO schema_migrations (version, name) VALUES (\(migration.version), '\(migration.name.replacingOccurrences(of: "'", with: "''"))');\n"
        }
        // What notesd wrote with the database-wide counter: two notes (changes 2 and 3) in
        // alice's zone (made at change 1), then changes 4 to 7 in other zones.
        script += """
            INSERT INTO accounts (name, created_at) VALUES ('alice', 0);
            INSERT INTO zones (owner, name, epoch, changed_seq) VALUES ('alice', '_defaultZone', 1, 3);
            INSERT INTO records (owner, zone, record_name, record_type, name, parent, body, created_at, modified_at, modified_by, seq, created_seq)
                VALUES ('alice', '_defaultZone', 'a', 'note', 'a.md', '', convert_to('first', 'UTF8'), 0, 0, 'alice', 2, 2),
                       ('alice', '_defaultZone', 'b', 'note', 'b.md', '', convert_to('second', 'UTF8'), 0, 0, 'alice', 3, 3);
            UPDATE counters SET value = 7 WHERE name = 'seq';
            """
        _ = try cluster.psql(script, database: name)
        let pool = try PostgresPool(url: url)
        let store = PostgresStore(database: pool.database)
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        let usageBefore = try cluster.psql("SELECT bytes FROM usage WHERE owner = 'alice'", database: name)
        #expect(try await pool.database.migrate() == Array(10...PostgresMigrations.latest))

        // Tokens handed out at change 3 (the zone's last) and 7 (the counter, as zone
        // listings gave it) both page on, and see nothing new yet.
        for token in ["z1.1.3.0", "z1.1.7.0"] {
            let page = try await store.zoneChanges(zone, since: token, limit: 10, actor: "alice")
            #expect(page.records.isEmpty && page.deleted.isEmpty, "\(token): \(page)")
        }
        #expect(try await store.records(["a"], in: zone, actor: "alice").first?.changeTag == RecordRules.changeTag(2))
        let saved = try await store.modify(
            ModifyRequest(zone: zone, saves: [RecordSave(recordName: "c", recordType: .note, name: "c.md", body: "third")]), actor: "alice")
        #expect(Int64(saved.saved[0].changeTag, radix: 36) ?? 0 > 7, "a new change numbered \(saved.saved[0].changeTag), not after the old counter")
        let page = try await store.zoneChanges(zone, since: "z1.1.7.0", limit: 10, actor: "alice")
        #expect(page.records.map(\.recordName) == ["c"])
        let again = try await store.zoneChanges(zone, since: "z1.1.3.0", limit: 10, actor: "alice")
        #expect(again.records.map(\.recordName) == ["c"])

        // A new zone's epoch is new (an old token of a zone of that name is refused).
        let work = try await store.createZone(ZoneID(owner: "alice", name: "Work"), actor: "alice")
        #expect(try ZoneChangeToken(parsing: work.changeToken).epoch > 7)

        let (used, _) = try await store.usage(of: "alice")
        #expect(used == (Int64(usageBefore) ?? -1) + 256 + 5, "usage \(used), before \(usageBefore)")
        await #expect(throws: NotesError.self) { _ = try await store.databaseChanges(scope: .private, since: "d1.7", actor: "alice") }
    }
}
