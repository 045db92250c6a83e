import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// `GET /metrics` of a real notesd on SQLite: requests by route and status, latencies,
/// open event streams, the store's connections, change notices; the admin only.
@Suite struct MetricsTests {
    /// Reads the page until `condition` holds (an event stream is counted once the server
    /// has it open, a moment after the client sees `ready`).
    static func page(of daemon: DaemonProcess, until condition: (MetricsPage) -> Bool) async throws -> MetricsPage {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let page = try #require(try await MetricsPage.read(daemon.client()), "the admin on the socket was refused the metrics")
            if condition(page) || ContinuousClock.now > deadline { return page }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Runs `body` while `client` holds an event stream open; the stream is cancelled
    /// after (dropping an iterator would not end it: the stream's task holds it).
    static func withStream<T>(of client: NotesClient, _ body: () async throws -> T) async throws -> T {
        let (ready, signal) = AsyncStream<Void>.makeStream()
        let reader = Task {
            for try await event in client.events() where event == .ready { signal.yield() }
        }
        defer { reader.cancel() }
        for await _ in ready { break }
        return try await body()
    }

    @Test func requestsStreamsAndTheStoreAreCountedForTheAdmin() async throws {
        let daemon = try await DaemonProcess.started(tcp: true)
        let port = try #require(daemon.port)
        let issued = try await daemon.client().createAccount(name: "alice", email: nil)
        let alice = daemon.tcpClient(token: issued.token)
        for _ in 0..<3 { _ = try await alice.whoami() }
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        _ = try await alice.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "p")]))
        _ = try? await alice.zoneChanges(ZoneID(owner: "alice", name: "missing"), since: nil)
        let whoami = #"hb_requests{http_route="/v1/whoami",http_request_method="GET",http_response_status_code="200"}"#
        let streams = "notes_event_streams_open"
        let page = try await Self.withStream(of: alice) {
            try await Self.page(of: daemon) { ($0.value(whoami) ?? 0) >= 3 && $0.value(streams) == 1 }
        }
        #expect(page.value(whoami) ?? 0 >= 3, "\(page.text.prefix(4_000))")
        #expect(page.value(streams) == 1)
        #expect(page.has(#"hb_requests{http_route="/v1/records/changes",http_request_method="POST",http_response_status_code="404"}"#), "a refused call is counted by its status")
        #expect(page.has(#"http_server_request_duration_bucket{http_route="/v1/records/modify""#), "no latency histogram of saves")
        #expect(page.value(#"notes_store_connections_max{backend="sqlite"}"#) == 6)
        #expect(page.value(#"notes_store_faults_total{backend="sqlite"}"#) == 0)
        #expect((page.value(#"notes_change_notices_total{source="this_instance"}"#) ?? 0) >= 1)
        #expect(page.has("notes_store_calls_in_flight") && page.has("notes_store_connections_in_use"))
        #expect(page.text.contains("# TYPE http_server_request_duration histogram"))

        // Not for an account over TCP, nor for no one.
        let asAlice = try await alice.raw("GET", "/metrics", body: nil)
        #expect(asAlice.status == 403 && String(decoding: asAlice.body, as: UTF8.self).contains("admin"))
        let anonymous = Shell.run("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:\(port)/metrics")
        #expect(anonymous.stdout == "401")

        // A stream whose client went away is no longer counted once the next keep-alive
        // (every 15 s) finds the connection gone.
        let closed = try await Self.page(of: daemon) { $0.value(streams) == 0 }
        #expect(closed.value(streams) == 0)
        _ = try await daemon.stop()
    }
}
