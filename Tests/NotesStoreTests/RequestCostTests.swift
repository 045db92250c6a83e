import Foundation
import NotesModel
@testable import NotesPostgres
@testable import NotesStore
import NotesWork
import Testing

/// Every request's cost is bounded before it is paid, the same way on every backend.
@Suite struct RequestCostTests {
    /// A lookup naming one large note 2,000 times answered with 2,000 copies of it: an
    /// 8 GiB answer from a 4 MiB note, which a read-only participant could ask for too.
    @Test(arguments: Backend.allCases)
    func aLookupReadsEachNameOnceAndStopsPastItsByteBound(_ backend: Backend) async throws {
        // Given five notes of 3 MiB, one of them shared read-only with bob
        let f = try await Fixture(backend)
        let big = String(repeating: "x", count: 3 << 20)
        for index in 0..<5 { try await f.note("big\(index)", "big\(index).md", body: big) }
        _ = try await f.shareWithBob("big0", permission: .readOnly)

        // When bob asks for the shared note 2,000 times
        let repeated = try await f.store.lookUp(Array(repeating: "big0", count: 2_000), in: f.aliceZone, actor: Fixture.bob)
        // Then he gets it once, and nothing is left to ask for
        #expect(repeated.records.map(\.recordName) == ["big0"] && repeated.remaining == [])

        // When alice asks for all five and a missing one, each twice
        let names = ["big0", "gone", "big1", "big0", "big2", "big3", "big4", "gone", "big4"]
        let first = try await f.store.lookUp(names, in: f.aliceZone, actor: Fixture.alice)
        // Then the answer stops once past 8 MiB and hands back the names it did not reach, once each
        #expect(first.records.map(\.recordName) == ["big0", "big1", "big2"])
        #expect(first.remaining == ["big3", "big4"])
        let rest = try await f.store.lookUp(first.remaining ?? [], in: f.aliceZone, actor: Fixture.alice)
        #expect(rest.records.map(\.recordName) == ["big3", "big4"] && rest.remaining == [])
        // And the one note past the bound still comes whole
        let huge = String(repeating: "y", count: 12 << 20)
        try await f.note("huge", "huge.md", body: huge)
        let alone = try await f.store.lookUp(["huge", "big0"], in: f.aliceZone, actor: Fixture.alice)
        #expect(alone.records.map(\.recordName) == ["huge"] && alone.records.first?.body == huge && alone.remaining == ["big0"])
        // And more than 2,000 names is refused
        await f.expectFailure(.limitExceeded) {
            _ = try await f.store.lookUp((0...2_000).map { "n\($0)" }, in: f.aliceZone, actor: Fixture.alice)
        }
    }

    /// The count of wrong guesses was read first and written after the hash: of 200
    /// guesses sent at once from one address (limit 10 in 15 minutes), 78 were hashed and
    /// answered 403 before the limit answered 429.
    @Test(arguments: Backend.allCases)
    func guessesSentAtOnceTakeTheirPlaceInTheCountBeforeAnyIsHashed(_ backend: Backend) async throws {
        // Given a public link with a password
        let f = try await Fixture(backend)
        try await f.note("n", "n.md")
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "n", publicPermission: .readOnly), actor: Fixture.alice)
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPassword: "correct horse"), actor: Fixture.alice)
        // When bob sends 200 wrong guesses at once from one address
        let outcomes = await withTaskGroup(of: NotesError.Code?.self) { group in
            for index in 0..<200 {
                group.addTask {
                    do {
                        _ = try await f.store.acceptShare(urlToken: share.urlToken, password: "guess \(index)", actor: Fixture.bob, client: "203.0.113.9")
                        return nil
                    } catch {
                        return (error as? NotesError)?.code
                    }
                }
            }
            return await group.reduce(into: [NotesError.Code?]()) { $0.append($1) }
        }
        // Then exactly the limit of them were checked, and every other one was refused unhashed
        #expect(outcomes.filter { $0 == .permissionFailure }.count == Limits.passwordFailuresPerClient)
        #expect(outcomes.filter { $0 == .requestRateLimited }.count == 200 - Limits.passwordFailuresPerClient)
        // And the right password from another address still opens the link, and is not counted
        _ = try await f.store.acceptShare(urlToken: share.urlToken, password: "correct horse", actor: Fixture.carol, client: "198.51.100.7")
        _ = try await f.store.acceptShare(urlToken: share.urlToken, password: "correct horse", actor: Fixture.bob, client: "198.51.100.7")
    }

    /// Past its limit, a client's every further guess took a write transaction to learn
    /// that it was refused: 200 guesses at once from one address queued hundreds of
    /// transactions a second on one PostgreSQL row lock, each holding a connection.
    @Test(arguments: Backend.allCases)
    func aClientPastItsLimitIsRefusedWithoutWaitingForTheDatabase(_ backend: Backend) async throws {
        // Given bob's address past its limit of wrong guesses at a password-protected link
        let f = try await Fixture(backend)
        try await f.note("n", "n.md")
        let share = try await f.store.createShare(NewShare(zone: f.aliceZone, rootRecordName: "n", publicPermission: .readOnly), actor: Fixture.alice)
        _ = try await f.store.updateShare(id: share.id, ShareUpdate(publicPassword: "correct horse"), actor: Fixture.alice)
        func guess(from client: String) async -> NotesError.Code? {
            do {
                _ = try await f.store.acceptShare(urlToken: share.urlToken, password: "wrong", actor: Fixture.bob, client: client)
                return nil
            } catch {
                return error.code
            }
        }
        for _ in 0..<Limits.passwordFailuresPerClient { #expect(await guess(from: "203.0.113.9") == .permissionFailure) }
        #expect(await guess(from: "203.0.113.9") == .requestRateLimited)

        // When another caller holds every way into the database (SQLite's writer, every pooled connection)
        let gate: FairGate = try #require((f.store as? SQLiteStore)?.writer ?? (f.store as? PostgresStore)?.database.connections)
        var held = 0
        while gate.tryAcquire() { held += 1 }
        // Then bob's further guesses are refused at once: each would wait (and, cancelled after 30 s, fail otherwise)
        let refusals = Task {
            var codes: [NotesError.Code?] = []
            for _ in 0..<20 { codes.append(await guess(from: "203.0.113.9")) }
            return codes
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(30))
            refusals.cancel()
        }
        let codes = await refusals.value
        watchdog.cancel()
        for _ in 0..<held { gate.release() }
        #expect(codes == Array(repeating: .requestRateLimited, count: 20))

        // And once the window is over, bob's guesses are checked again; another address never waited
        #expect(await guess(from: "198.51.100.7") == .permissionFailure)
        f.clock.advance(by: Limits.passwordWindowSeconds + 1)
        #expect(await guess(from: "203.0.113.9") == .permissionFailure)
    }
}
