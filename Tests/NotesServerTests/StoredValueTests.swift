#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Values that came in as numbers are bounded before they are stored, and nothing
/// already stored can stop notesd from starting and serving.
@Suite(.serialized) struct StoredValueTests {
    /// The fuzzer's finding: `publicExpiresIn: 1.7976931348623157e+308` was stored, and
    /// encoding the share trapped on every later `GET /v1/shares`, restarts included.
    @Test func anExpiryPastYear9999IsRefusedAndOneAlreadyStoredStillServes() async throws {
        let daemon = try await DaemonProcess.started()
        let client = daemon.client()
        let me = try await client.whoami().name
        let zone = ZoneID(owner: me, name: ZoneID.defaultZoneName)
        _ = try await client.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "p", recordType: .note, name: "plan.md", body: "# Plan\n")]))
        let share = try await client.createShare(NewShare(zone: zone, rootRecordName: "p", publicPermission: .readOnly))

        // Given bodies with numbers no expiry can hold, when they are sent, then each is
        // refused with 400 and the share keeps no expiry.
        let refused = [
            #"{"publicExpiresIn": 1.7976931348623157e+308, "publicPermission": "readOnly"}"#,
            #"{"publicExpiresIn": 1e400}"#,
            #"{"publicExpiresIn": -1}"#,
            #"{"publicExpiresIn": 315360001}"#,
            #"{"publicExpiresIn": "NaN"}"#,
        ]
        for body in refused {
            let answer = try await client.raw("PATCH", "/v1/shares/\(share.id)", body: Array(body.utf8))
            #expect(answer.status == 400, "\(body): \(String(decoding: answer.body, as: UTF8.self))")
            let error = try NotesJSON.decoder().decode(NotesJSON.ErrorBody.self, from: Data(answer.body))
            #expect(error.error.code == .invalidArguments, "\(body)")
        }
        #expect(try await client.share(id: share.id).publicExpiresAt == nil)
        let tokenAnswer = try await client.raw("POST", "/v1/accounts/\(me)/tokens", body: Array(#"{"expiresIn": 1.7976931348623157e+308}"#.utf8))
        #expect(tokenAnswer.status == 400)

        // Given a database written before the bound existed, holding that expiry, when
        // notesd starts again, then it serves the share, its listing and its page.
        try await daemon.stop()
        try Self.sqlite(daemon.dataDir + "/notes.sqlite", "UPDATE shares SET public_expires_at = 1.7976931348623157e308 WHERE id = '\(share.id)'")
        try await daemon.restart()
        let listing = try await client.raw("GET", "/v1/shares", body: nil)
        #expect(listing.status == 200)
        #expect(String(decoding: listing.body, as: UTF8.self).contains("9999-12-31T23:59:59.999Z"))
        #expect(try await client.share(id: share.id).publicExpiresAt != nil)
        let page = try await client.raw("GET", "/s/\(share.urlToken)", body: nil)
        #expect(page.status == 200)
        #expect(daemon.process.isRunning)
    }

    /// Runs one statement on a SQLite file with Debian's `sqlite3`, as an admin would.
    static func sqlite(_ path: String, _ statement: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, statement]
        try process.run()
        #expect(ChildExit.wait(for: process) == 0, "sqlite3 \(statement)")
    }
}
