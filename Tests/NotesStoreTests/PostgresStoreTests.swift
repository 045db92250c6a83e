import Foundation
import NotesModel
import NotesPostgres
import NotesTestSupport
import Testing

/// What only PostgreSQL has: several notesd (each with its own pool) on one database.
@Suite struct PostgresStoreTests {
    /// Two notesd saving the same record with the same change tag at once: the counter
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
}
