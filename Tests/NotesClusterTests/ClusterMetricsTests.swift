import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// `GET /metrics` of an instance on PostgreSQL: its listening connection, the notices it
/// hears from the other instance, and its pool.
@Suite(.serialized) struct ClusterMetricsTests {
    @Test func anInstanceCountsWhatItHearsFromTheOther() async throws {
        let cluster = try await TwoInstances.start()
        let alice = try await cluster.account("alice")
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        _ = try await alice.onB.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "p")]))

        let heard = #"notes_change_notices_total{source="other_instances"}"#
        let deadline = ContinuousClock.now + .seconds(60)
        var page = try #require(try await MetricsPage.read(cluster.a.client()))
        while (page.value(heard) ?? 0) < 1 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            page = try #require(try await MetricsPage.read(cluster.a.client()))
        }
        #expect((page.value(heard) ?? 0) >= 1, "\(page.text.prefix(4_000))")
        #expect(page.value("notes_change_listener_connected") == 1)
        #expect(page.value(#"notes_store_connections_max{backend="postgres"}"#) == 20)
        #expect(page.value(#"notes_store_faults_total{backend="postgres"}"#) == 0)
        _ = try await cluster.a.stop()
        _ = try await cluster.b.stop()
    }
}
