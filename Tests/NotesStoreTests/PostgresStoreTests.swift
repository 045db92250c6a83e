import Foundation
import Logging
import NotesModel
@testable import NotesPostgres
import PostgresNIO
import NotesTestSupport
import Testing

/// What only PostgreSQL has: several notesd (each with its own pool) on one database.
@Suite struct PostgresStoreTests {
    /// Two notesd saving the same record with the same change tag at once: the zone's
    /// row taken `FOR UPDATE` makes the second wait and then see the first's save, so
    /// exactly one wins and the other is told the record changed, as with one writer.
    @Test func ofTwoConcurrentSavesWithTheSameTagExactlyOneWins() async throws {
        let url = try PostgresCluster.shared().createDatabase()
        let first = try PostgresPool(url: url)
        let second = try PostgresPool(url: url)
        try await first.database.migrate()
        let a = PostgresStore(database: first.database)
        let b = PostgresStore(database: second.database)
        _ = try await a.createAccount(name: "alice", email: nil, isAdmin: false)
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        var record = try #require(
            try await a.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "n", recordType: .note, name: "n.md", body: "0")]), actor: "alice").saved.first)
        for round in 1...20 {
            let tag = record.changeTag
            func save(_ store: PostgresStore, _ body: String) async -> Result<Record, NotesError> {
                do {
                    let request = ModifyRequest(zone: zone, saves: [RecordSave(recordName: "n", recordType: .note, name: "n.md", body: body, changeTag: tag)])
                    return .success(try await store.modify(request, actor: "alice").saved[0])
                } catch {
                    return .failure(error)
                }
            }
            async let fromA = save(a, "a\(round)")
            async let fromB = save(b, "b\(round)")
            let results = await [fromA, fromB]
            let winners = results.compactMap { try? $0.get() }
            let losers = results.compactMap { result -> NotesError? in if case .failure(let error) = result { error } else { nil } }
            #expect(winners.count == 1 && losers.count == 1, "round \(round): \(results)")
            guard let winner = winners.first, let loser = losers.first else { return }
            #expect(loser.code == .serverRecordChanged, "round \(round): \(loser)")
            #expect(loser.serverRecord?.changeTag == winner.changeTag, "round \(round): the loser was not shown the winner's save")
            let stored = try #require(try await b.records(["n"], in: zone, actor: "alice").first)
            #expect(stored.changeTag == winner.changeTag && stored.body?.hasSuffix("\(round)") == true)
            record = winner
        }
        // Every save kept the one before it: 20 rounds, 20 versions and the record.
        #expect(try await a.versions(of: "n", in: zone, actor: "alice").count == 21)
    }

    /// Ready once the database answers and holds this binary's schema.
    @Test func readyOnlyOnceMigrated() async throws {
        let url = try PostgresCluster.shared().createDatabase()
        let pool = try PostgresPool(url: url)
        let store = PostgresStore(database: pool.database)
        do {
            try await store.checkReady()
            Issue.record("an empty database was ready")
        } catch {
            #expect(error.code == .serviceUnavailable, "\(error)")
        }
        try await pool.database.migrate()
        try await store.checkReady()
    }

    /// Zones number their changes apart, so writers of different zones commit in any
    /// order: a database token must still report a zone changed by a transaction that
    /// was running when the token was issued (it began before a change the token
    /// reports, and commits after), and report each change once. Here a transaction
    /// holds an ID from before a save to another zone, and changes its zone as a modify's
    /// last statement does only after the token was handed out.
    @Test func aDatabaseTokenReportsAChangeOfATransactionRunningWhenItWasIssuedOnce() async throws {
        let url = try PostgresCluster.shared().createDatabase()
        let pool = try PostgresPool(url: url)
        try await pool.database.migrate()
        let store = PostgresStore(database: pool.database)
        _ = try await store.createAccount(name: "alice", email: nil, isAdmin: false)
        let slow = ZoneID(owner: "alice", name: "slow")
        let quick = ZoneID(owner: "alice", name: "quick")
        _ = try await store.createZone(slow, actor: "alice")
        _ = try await store.createZone(quick, actor: "alice")
        let start = try await store.databaseChanges(scope: .private, since: nil, actor: "alice")
        let logger = Logger(label: "test")
        try await pool.database.client.withConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            for try await _ in try await connection.query("SELECT pg_current_xact_id()", logger: logger) {}
            _ = try await store.modify(ModifyRequest(zone: quick, saves: [RecordSave(recordName: "q", recordType: .note, name: "q.md", body: "q")]), actor: "alice")
            let first = try await store.databaseChanges(scope: .private, since: start.changeToken, actor: "alice")
            #expect(first.changedZones == [quick])
            try await connection.query(
                "UPDATE zones SET changed_txn = pg_current_xact_id()::text::bigint WHERE owner = 'alice' AND name = 'slow'", logger: logger)
            try await connection.query("COMMIT", logger: logger)
            let second = try await store.databaseChanges(scope: .private, since: first.changeToken, actor: "alice")
            #expect(second.changedZones == [slow], "the change committed after the token was missed, or the one before reported again")
            let third = try await store.databaseChanges(scope: .private, since: second.changeToken, actor: "alice")
            #expect(third.changedZones.isEmpty)
        }
    }

    /// Large notes are stored compressed with lz4, not PostgreSQL's slower default, and
    /// read back whole.
    @Test func largeNotesAreCompressedWithLZ4() async throws {
        let url = try PostgresCluster.shared().createDatabase()
        let pool = try PostgresPool(url: url)
        try await pool.database.migrate()
        let store = PostgresStore(database: pool.database)
        _ = try await store.createAccount(name: "alice", email: nil, isAdmin: false)
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        let text = String(repeating: "A line of a long note.\n", count: 2_000)
        _ = try await store.modify(
            ModifyRequest(zone: zone, saves: [RecordSave(recordName: "long", recordType: .note, name: "long.md", body: text)]), actor: "alice")
        var methods: [String] = []
        try await pool.database.client.withConnection { connection in
            for try await method in try await connection.query("SELECT pg_column_compression(body) FROM contents", logger: Logger(label: "test")).decode(String?.self) {
                methods.append(method ?? "none")
            }
        }
        #expect(methods == ["lz4"])
        #expect(try await store.lookUp(["long"], in: zone, actor: "alice").records.first?.body == text)
    }

    /// A database token from another store (SQLite's change numbers, or another
    /// PostgreSQL cluster after a move) has expired: the client lists zones again from
    /// no token. A zone token from before the per-zone counters still pages on.
    @Test func aDatabaseTokenFromAnotherDatabaseHasExpired() async throws {
        let url = try PostgresCluster.shared().createDatabase()
        let pool = try PostgresPool(url: url)
        try await pool.database.migrate()
        let store = PostgresStore(database: pool.database)
        _ = try await store.createAccount(name: "alice", email: nil, isAdmin: false)
        let current = try await store.databaseChanges(scope: .private, since: nil, actor: "alice")
        let parsed = try DatabaseChangeToken(parsing: current.changeToken)
        let elsewhere = DatabaseChangeToken(database: "1", seq: parsed.seq, end: parsed.end, running: parsed.running)
        for token in ["d1.5", elsewhere.encoded] {
            do {
                _ = try await store.databaseChanges(scope: .private, since: token, actor: "alice")
                Issue.record("\(token) was taken")
            } catch {
                #expect(error.code == .changeTokenExpired, "\(token): \(error)")
            }
        }
        let ahead = DatabaseChangeToken(database: parsed.database, seq: parsed.seq + 1_000_000, end: parsed.end + 1_000_000, running: [])
        await #expect(throws: NotesError.self) { _ = try await store.databaseChanges(scope: .private, since: ahead.encoded, actor: "alice") }
    }

    /// Statements are planned once per connection; planned while `records` was nearly
    /// empty, a lookup by name took any index beginning with the zone and read the whole
    /// zone for each record (a first import slowed as it went). Once an instance has
    /// written as many records as the table held, it analyzes the table, and the plan
    /// made again finds a record by its primary key.
    @Test func aTableThatGrowsFromNothingIsAnalyzedAndLookedUpByItsKey() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let name = PostgresCluster.databaseName(of: url)
        let pool = try PostgresPool(url: url)
        try await pool.database.migrate()
        let store = PostgresStore(database: pool.database)
        _ = try await store.createAccount(name: "alice", email: nil, isAdmin: false)
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        for batch in 0..<3 {
            let saves = (0..<400).map { RecordSave(recordName: "n\(batch)-\($0)", recordType: .note, name: "n\(batch)-\($0).md", body: "\($0)") }
            _ = try await store.modify(ModifyRequest(zone: zone, saves: saves), actor: "alice")
        }
        // (The count of analyses shows before the analysis commits: wait for the plan.)
        let deadline = ContinuousClock.now + .seconds(60)
        var plan = ""
        while true {
            let analyzed = try cluster.psql("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'records'", database: name) != "0"
            plan = try cluster.psql(
                """
                SET plan_cache_mode = force_generic_plan;
                PREPARE lookup(text, text, text) AS SELECT * FROM records WHERE owner = $1 AND zone = $2 AND record_name = $3 LIMIT 1;
                EXPLAIN EXECUTE lookup('alice', '_defaultZone', 'n1-7');
                """, database: name)
            if analyzed && plan.contains("records_pkey") { break }
            guard ContinuousClock.now < deadline else {
                Issue.record(analyzed ? "after the analysis a record is still looked up so: \(plan)" : "records was not analyzed after 1,200 rows were written")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// One write per zone at a time on an instance, and writes to different zones at
    /// once; a zone's turn is forgotten once nobody holds or waits for it.
    @Test func zoneTurnsLetOtherZonesThroughAndOneZoneOneAtATime() async throws {
        let turns = PostgresZoneTurns()
        let first = ZoneID(owner: "alice", name: "first")
        let second = ZoneID(owner: "alice", name: "second")
        try await turns.acquire(first)
        try await turns.acquire(second)  // (would wait for ever if zones shared a turn)
        let waiter = Task {
            try await turns.acquire(first)
            turns.release(first)
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while turns.waiting(first) == 0 {
            guard ContinuousClock.now < deadline else {
                Issue.record("a second write of the zone never waited")
                return
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(turns.waiting(second) == 0)
        turns.release(first)
        try await waiter.value
        turns.release(second)
        #expect(turns.count == 0)
    }
}
