#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Two notesd on one PostgreSQL database, as behind a load balancer: what a client does
/// through one instance reaches clients of the other.
@Suite struct CrossInstanceTests {
    static let defaultZone = ZoneID.defaultZoneName

    /// alice subscribes on A and saves through B, 30 times: each save's notice reaches
    /// her stream on A (through B's `pg_notify` and A's `LISTEN`), and A serves the save.
    @Test func aSaveThroughOneInstanceReachesSubscribersOfTheOther() async throws {
        let pair = try await TwoInstances.start()
        let alice = try await pair.account("alice")
        let zone = ZoneID(owner: "alice", name: Self.defaultZone)
        let events = EventLog(alice.onA)
        try await events.waitUntilReady()
        // The first save warms both pools; then measure.
        _ = try await alice.onB.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "warm", recordType: .note, name: "warm.md", body: "w")]))
        try await events.wait { $0.isChange(of: zone) }
        var latencies: [Double] = []
        var roundTrips: [Double] = []
        var afterAcknowledged: [Double] = []
        for round in 1...30 {
            let from = events.count
            let sent = ContinuousClock.now
            let saved = try await alice.onB.modify(
                ModifyRequest(
                    zone: zone,
                    saves: [
                        RecordSave(recordName: "n\(round)", recordType: .note, name: "n\(round).md", body: "round \(round)")
                    ]))
            let acknowledged = ContinuousClock.now
            roundTrips.append((acknowledged - sent).milliseconds)
            let (_, entry) = try await events.wait(from: from) { $0.isChange(of: zone, scope: .private) }
            latencies.append((entry.at - sent).milliseconds)
            afterAcknowledged.append((entry.at - acknowledged).milliseconds)
            let onA = try await alice.onA.records(["n\(round)"], in: zone)
            #expect(onA.first?.body == "round \(round)" && onA.first?.changeTag == saved.saved.first?.changeTag, "round \(round): A serves \(onA)")
        }
        print(
            """
            cross-instance latency (save sent to B → change event on A's stream), 30 saves: \
            p50 \(String(format: "%.1f", percentile(latencies, 0.5))) ms, p99 \(String(format: "%.1f", percentile(latencies, 0.99))) ms, \
            max \(String(format: "%.1f", latencies.max() ?? 0)) ms; the save's own round trip p50 \(String(format: "%.1f", percentile(roundTrips, 0.5))) ms; \
            the event after B's answer p50 \(String(format: "%.1f", percentile(afterAcknowledged, 0.5))) ms, p99 \(String(format: "%.1f", percentile(afterAcknowledged, 0.99))) ms (negative: before it)
            """)
        // A's own saves reach its own stream too (from its commit, not through the database).
        let from = events.count
        _ = try await alice.onA.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "local", recordType: .note, name: "local.md", body: "l")]))
        // And once: A skips its own echo from the database. An echo would come through
        // the listening connection before B's next commit does (commit order), so B's
        // next save fences it.
        let local = try await events.wait(from: from) { $0.isChange(of: zone) }
        _ = try await alice.onB.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "fence", recordType: .note, name: "fence.md", body: "f")]))
        let fence = try await events.wait(from: local.index + 1) { $0.isChange(of: zone) }
        let between = events.entries[(local.index + 1)..<fence.index].filter { $0.event.isChange(of: zone) }.count
        #expect(between == 0, "A's own save was announced \(between + 1) times")
    }

    /// alice on A shares with bob on B (read-only), bob accepts through B and reads
    /// through both; his write is refused on both. And back: bob on B shares with alice
    /// read-write, she accepts and writes through A, and bob hears of it and reads it on B.
    @Test func sharingWorksAcrossInstancesBothWays() async throws {
        let pair = try await TwoInstances.start()
        let alice = try await pair.account("alice")
        let bob = try await pair.account("bob")
        let bobEventsOnA = EventLog(bob.onA)
        let bobEventsOnB = EventLog(bob.onB)
        try await bobEventsOnA.waitUntilReady()
        try await bobEventsOnB.waitUntilReady()

        let team = try await alice.onA.createZone(named: "Team").id
        _ = try await alice.onA.modify(ModifyRequest(zone: team, saves: [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "v1")]))
        let share = try await alice.onA.createShare(NewShare(zone: team, rootRecordName: "plan", participants: [Invitee(name: "bob", permission: .readOnly)]))
        #expect(try await bob.onB.invitations().map(\.id) == [share.id], "B shows bob the invitation made on A")
        _ = try await bob.onB.accept(url: share.urlToken)
        #expect(try await alice.onA.share(id: share.id).participants.first { $0.name == "bob" }?.status == .accepted)
        let sharedPlan = try #require(try await alice.onA.records(["plan"], in: team).first)
        for (label, client) in [("A", bob.onA), ("B", bob.onB)] {
            #expect(try await client.zones(scope: .shared).map(\.id) == [team], "bob's shared zones on \(label)")
            #expect(try await client.records(["plan"], in: team).first?.body == "v1", "bob reads the shared note on \(label)")
            do {
                _ = try await client.modify(
                    ModifyRequest(
                        zone: team,
                        saves: [
                            RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "bob was here (\(label))", changeTag: sharedPlan.changeTag)
                        ]))
                Issue.record("bob's write through \(label) into a read-only share went through")
            } catch {
                #expect(error.code == .permissionFailure, "bob's write through \(label): \(error)")
            }
        }
        // alice's next save, through B, reaches bob's streams on both instances.
        let fromA = bobEventsOnA.count
        let fromB = bobEventsOnB.count
        let shared = try #require(try await alice.onB.records(["plan"], in: team).first)  // (sharing gave it a new tag)
        _ = try await alice.onB.modify(
            ModifyRequest(zone: team, saves: [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "v2", changeTag: shared.changeTag)]))
        try await bobEventsOnA.wait(from: fromA) { $0.isChange(of: team, scope: .shared) }
        try await bobEventsOnB.wait(from: fromB) { $0.isChange(of: team, scope: .shared) }
        #expect(try await bob.onA.records(["plan"], in: team).first?.body == "v2")

        // The other way: bob shares from B, alice accepts and writes through A.
        let aliceEventsOnA = EventLog(alice.onA)
        try await aliceEventsOnA.waitUntilReady()
        let desk = try await bob.onB.createZone(named: "Desk").id
        _ = try await bob.onB.modify(ModifyRequest(zone: desk, saves: [RecordSave(recordName: "todo", recordType: .note, name: "todo.md", body: "milk")]))
        let deskShare = try await bob.onB.createShare(NewShare(zone: desk, rootRecordName: "todo", participants: [Invitee(name: "alice", permission: .readWrite)]))
        _ = try await alice.onA.accept(url: deskShare.urlToken)
        let todo = try #require(try await alice.onA.records(["todo"], in: desk).first)
        let fromBob = bobEventsOnB.count
        _ = try await alice.onA.modify(
            ModifyRequest(zone: desk, saves: [RecordSave(recordName: "todo", recordType: .note, name: "todo.md", body: "milk, eggs", changeTag: todo.changeTag)]))
        try await bobEventsOnB.wait(from: fromBob) { $0.isChange(of: desk, scope: .private) }
        #expect(try await bob.onB.records(["todo"], in: desk).first?.body == "milk, eggs")
        // bob's own save through B reaches alice's stream on A as a change of a shared zone.
        let fromAlice = aliceEventsOnA.count
        let current = try #require(try await bob.onB.records(["todo"], in: desk).first)
        _ = try await bob.onB.modify(
            ModifyRequest(zone: desk, saves: [RecordSave(recordName: "todo", recordType: .note, name: "todo.md", body: "milk, eggs, tea", changeTag: current.changeTag)]))
        try await aliceEventsOnA.wait(from: fromAlice) { $0.isChange(of: desk, scope: .shared) }
        #expect(try await alice.onA.records(["todo"], in: desk).first?.body == "milk, eggs, tea")
    }

    /// `kill -9` of A while batches go through it: every batch A acknowledged is stored,
    /// a batch cut off is there whole or not at all, and B serves throughout (its own
    /// writer never fails) and afterwards; A comes back on the same database.
    @Test func killingOneInstanceMidBatchLosesNothingAcknowledged() async throws {
        let pair = try await TwoInstances.start()
        let alice = try await pair.account("alice")
        let zone = ZoneID(owner: "alice", name: Self.defaultZone)
        let batchSize = 5

        /// Writes batches of new notes through `client` until told to stop or refused;
        /// returns the batches acknowledged and the one in flight when it failed.
        @Sendable func writer(_ client: NotesClient, prefix: String, stop: @Sendable @escaping () -> Bool) async -> (acknowledged: [Int], cut: Int?, error: NotesError?) {
            var acknowledged: [Int] = []
            var batch = 0
            while !stop() {
                batch += 1
                let saves = (0..<batchSize).map {
                    RecordSave(recordName: "\(prefix)\(batch)-\($0)", recordType: .note, name: "\(prefix)\(batch)-\($0).md", body: "\(prefix) \(batch) \($0)")
                }
                do {
                    _ = try await client.modify(ModifyRequest(zone: zone, saves: saves))
                    acknowledged.append(batch)
                } catch {
                    return (acknowledged, batch, error)
                }
            }
            return (acknowledged, nil, nil)
        }
        let killed = Flag()
        let bDone = Flag()
        async let throughA = writer(alice.onA, prefix: "a", stop: { false })
        async let throughB = writer(alice.onB, prefix: "b", stop: { bDone.isSet })
        // Kill A once a good number of its batches went through (it is mid-batch then:
        // its writer sends the next one at once).
        #expect(
            try await eventually(.seconds(120)) {
                try await alice.onB.zoneChanges(zone, since: nil, limit: 2_000).records.filter { $0.recordName.hasPrefix("a") }.count >= 20 * batchSize
            })
        try await pair.a.stop(signal: SIGKILL)
        killed.set()
        let a = await throughA
        #expect(a.error != nil, "A's writer should have been cut off")
        // B keeps serving: its writer goes on; let it do 10 more batches after the kill.
        let bAtKill = try await alice.onB.zoneChanges(zone, since: nil, limit: 2_000).records.filter { $0.recordName.hasPrefix("b") }.count
        #expect(
            try await eventually(.seconds(120)) {
                try await alice.onB.zoneChanges(zone, since: nil, limit: 2_000).records.filter { $0.recordName.hasPrefix("b") }.count >= bAtKill + 10 * batchSize
            })
        bDone.set()
        let b = await throughB
        #expect(b.error == nil, "B's writer failed: \(String(describing: b.error))")

        var stored: [String: String] = [:]
        var token: String?
        while true {
            let page = try await alice.onB.zoneChanges(zone, since: token, limit: 500)
            for record in page.records { stored[record.recordName] = record.body }
            token = page.changeToken
            if !page.moreComing { break }
        }
        for (prefix, result) in [("a", a), ("b", b)] {
            for batch in result.acknowledged {
                for item in 0..<batchSize {
                    #expect(stored["\(prefix)\(batch)-\(item)"] == "\(prefix) \(batch) \(item)", "acknowledged \(prefix)\(batch)-\(item) is missing")
                }
            }
        }
        if let cut = a.cut {
            let present = (0..<batchSize).filter { stored["a\(cut)-\($0)"] != nil }.count
            #expect(present == 0 || present == batchSize, "the batch cut off by the kill is stored in part: \(present) of \(batchSize)")
            print(
                "kill -9 of A: \(a.acknowledged.count) batches acknowledged by A, the one in flight \(present == 0 ? "not stored" : "stored whole"); B went on for \(b.acknowledged.count) batches without an error"
            )
        }
        // A comes back and serves what B wrote meanwhile.
        try await pair.a.restart()
        #expect(try await alice.onA.records(["b\(b.acknowledged.last ?? 1)-0"], in: zone).count == 1)
    }

    /// A's listening connection is cut (`pg_terminate_backend`) and kept from coming
    /// back (its role may not log in) while alice saves through B. When A listens again
    /// its subscriber is told to fetch everything, and the fetch brings that save.
    @Test func aDroppedListeningConnectionReconnectsAndSubscribersCatchUp() async throws {
        let cluster = try PostgresCluster.shared()
        let role = "notes_a_\(UUID().uuidString.prefix(8).lowercased())"
        try cluster.psql("CREATE ROLE \(role) LOGIN SUPERUSER", database: "postgres")
        let pair = try await TwoInstances.start(urlA: { $0.replacingOccurrences(of: "postgres://postgres@", with: "postgres://\(role)@") })
        let alice = try await pair.account("alice")
        let zone = ZoneID(owner: "alice", name: Self.defaultZone)
        let events = EventLog(alice.onA)
        try await events.waitUntilReady()
        _ = try await alice.onB.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "before", recordType: .note, name: "before.md", body: "b")]))
        try await events.wait { $0.isChange(of: zone) }
        let token = try await alice.onA.zoneChanges(zone, since: nil).changeToken

        let backend = try #require(try pair.listenerBackend(of: pair.a), "A's listening connection is not in pg_stat_activity")
        try pair.psql("ALTER ROLE \(role) NOLOGIN")
        let dropped = events.count
        try pair.psql("SELECT pg_terminate_backend(\(backend))")
        #expect(try await eventually { try pair.listenerBackend(of: pair.a) == nil })
        // Meanwhile, through B: A cannot hear it.
        let saved = try await alice.onB.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "meanwhile", recordType: .note, name: "meanwhile.md", body: "m")])).saved[0]
        // A's log shows it trying again (and refused) before it is let back in; meanwhile
        // A tells load balancers it is not ready (B is). (Here its role may not log in, so
        // the database check says so first; with the database reachable, the reason is the
        // listening connection.)
        #expect(
            await eventually {
                ((try? String(contentsOfFile: pair.a.logPath, encoding: .utf8)) ?? "").components(separatedBy: "listening for other instances' changes failed").count >= 3
            })
        let readyz = { (daemon: DaemonProcess) in Shell.run("curl -s -i --unix-socket '\(daemon.socket)' http://localhost/readyz").stdout }
        let notReady = readyz(pair.a)
        #expect(notReady.hasPrefix("HTTP/1.1 503"), "\(notReady)")
        #expect(readyz(pair.b).hasPrefix("HTTP/1.1 200"))
        try pair.psql("ALTER ROLE \(role) LOGIN")

        let hint = try await events.wait(from: dropped) { $0.isChange(of: nil) }
        #expect(events.entries[dropped..<hint.index].allSatisfy { !$0.event.isChange(of: zone) }, "A announced a save it could not have heard")
        #expect(try await eventually { try pair.listenerBackend(of: pair.a) != nil })
        #expect(await eventually { readyz(pair.a).hasPrefix("HTTP/1.1 200") }, "A listens again but is not ready")
        let caughtUp = try await alice.onA.zoneChanges(zone, since: token)
        #expect(caughtUp.records.map(\.recordName) == ["meanwhile"] && caughtUp.records.first?.changeTag == saved.changeTag)
        // And it hears B again.
        let from = events.count
        _ = try await alice.onB.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "after", recordType: .note, name: "after.md", body: "a")]))
        try await events.wait(from: from) { $0.isChange(of: zone) }
        let log = (try? String(contentsOfFile: pair.a.logPath, encoding: .utf8)) ?? ""
        #expect(log.contains("listening again for other instances' changes"))
    }

    /// SIGTERM stops notesd on PostgreSQL with status 0. A database that a newer notesd
    /// migrated is refused at start: a message that says so, a non-zero exit, and
    /// nothing served.
    @Test func aDatabaseNewerThanTheBinaryIsRefused() async throws {
        let url = try PostgresCluster.shared().createDatabase()
        let first = try await DaemonProcess.started(arguments: ["--database", url])
        #expect(try await first.stop() == 0, "SIGTERM: notesd on PostgreSQL stops cleanly")
        try PostgresCluster.shared().psql("INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')", database: PostgresCluster.databaseName(of: url))
        let second = try await DaemonProcess(arguments: ["--database", url])
        #expect(await eventually { ChildExit.status(of: second.process) != nil })
        #expect(ChildExit.status(of: second.process) != 0)
        let log = (try? String(contentsOfFile: second.logPath, encoding: .utf8)) ?? ""
        #expect(log.contains("schema version 999, newer than this notesd knows"), "\(log)")
        #expect(!FileManager.default.fileExists(atPath: second.socket))
    }
}

/// Revoking a token, or disabling or deleting an account, through one instance ended the
/// event streams it had opened only on that instance.
@Suite struct CrossInstanceRevocationTests {
    static func eventually(_ seconds: Double, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    @Test func revokingOrDisablingThroughOneInstanceEndsStreamsOnTheOther() async throws {
        // Given alice's second token and bob's token, each with a stream open on B
        let pair = try await TwoInstances.start()
        _ = try await pair.account("alice")
        let bob = try await pair.account("bob")
        let issued = try await pair.a.client().issueToken(for: "alice", label: "laptop")
        let aliceOnB = StreamWatch.start(pair.b.client(token: issued.token))
        let bobOnB = StreamWatch.start(bob.onB)
        #expect(
            await Self.eventually(60) {
                let alice = await aliceOnB.isReady
                let bob = await bobOnB.isReady
                return alice && bob
            })

        // When the admin revokes alice's token through A
        _ = try await pair.a.client().revokeToken(id: try #require(issued.id))
        // Then her stream on B ends at once, and bob's goes on
        #expect(await Self.eventually(10) { await aliceOnB.hasEnded }, "alice's stream on B outlived her revoked token")
        #expect(await bobOnB.hasEnded == false)

        // When the admin disables bob through A
        _ = try await pair.a.client().setAccount("bob", disabled: true)
        // Then his stream on B ends too
        #expect(await Self.eventually(10) { await bobOnB.hasEnded }, "bob's stream on B outlived his account")
    }
}
