import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// PostgreSQL going away under a serving notesd and a connected mount, and coming back.
/// Before notesd checked for itself, a request waited in the pool for as long as the
/// server was away (curl gave up after 60 s), and the mount's queued note had not arrived
/// 90 s after the server came back.
@Suite(.enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct DatabaseRestartTests {
    @Test func whileTheDatabaseIsDownRequestsGet503WithRetryAfterAndTheMountQueuesThenAllFlows() async throws {
        // Given notesd on a PostgreSQL server of this test's own, and alice's mount
        let cluster = try PostgresCluster.dedicated()
        defer { cluster.stop() }
        let daemon = try await DaemonProcess.started(tcp: true, arguments: ["--database", try cluster.createDatabase()])
        let issued = try await daemon.client().createAccount(name: "alice", email: nil)
        let alice = daemon.client(token: issued.token)
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        _ = try await alice.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "b", recordType: .note, name: "before.md", body: "before")]))
        let mount = try MountProcess(daemon: daemon, token: issued.token)
        let root = mount.path("private")
        #expect(await eventually(.seconds(30)) { FileManager.default.fileExists(atPath: "\(root)/before.md") })

        // When the database server stops (every connection cut at once)
        cluster.pause()

        // Then a request is answered 503 with Retry-After, and says why
        let body = #"{"zone":{"owner":"alice","name":"_defaultZone"},"saves":[{"recordName":"x","recordType":"note","name":"x.md","body":"x"}]}"#
        let asked = ContinuousClock.now
        let answer = Shell.run(
            "curl -s -i -m 60 -X POST -H 'Authorization: Bearer \(issued.token)' -H 'Content-Type: application/json' --data '\(body)' http://127.0.0.1:\(daemon.port!)/v1/records/modify"
        )
        print("database restart: 503 after \(ContinuousClock.now - asked)")
        #expect(answer.stdout.hasPrefix("HTTP/1.1 503"), "\(answer)")
        #expect(answer.stdout.lowercased().contains("retry-after:"), "\(answer)")
        #expect(answer.stdout.contains("serviceUnavailable"), "\(answer)")
        // … and what alice writes meanwhile is kept by the mount
        #expect(Shell.run("printf 'during' > during.md", in: root).status == 0)
        #expect(fileText("\(root)/during.md") == "during")

        // When the database comes back, notesd (never restarted) serves again and the
        // mount's queued note arrives; nothing acknowledged before is lost
        try cluster.resume()
        let back = ContinuousClock.now
        // (Usually within 2 s; up to a minute when postgres-nio's pool is in the middle of
        // its reconnect backoff, which it caps at 60 s.)
        #expect(
            await eventually(.seconds(150)) {
                let records = (try? await alice.zoneChanges(zone, since: nil).records) ?? []
                return Set(records.map { "\($0.name)=\($0.body ?? "")" }) == ["before.md=before", "during.md=during"]
            }, "mount log:\n\(mount.log().suffix(3_000))")
        print("database restart: the mount's queued note on notesd \(ContinuousClock.now - back) after the server came back")
        _ = try await alice.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "a", recordType: .note, name: "after.md", body: "after")]))
        #expect(await eventually(.seconds(30)) { fileText("\(root)/after.md") == "after" })
    }
}

private func fileText(_ path: String) -> String? {
    try? String(contentsOfFile: path, encoding: .utf8)
}
