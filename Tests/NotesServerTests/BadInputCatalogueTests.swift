import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// The catalogue of bad input, as one table through the real API: each row an input,
/// the status and code it gets, and after it the data exactly as before and notesd
/// still serving. (Inputs through the mount — names, sizes — are in PosixTests and
/// SaveGuaranteeTests; event streams and slow clients in DaemonTests.)
@Suite struct BadInputCatalogueTests {
    struct Row {
        var input: String
        var method = "POST"
        var path: String
        var body: [UInt8]?
        var status: Int
        var code: NotesError.Code?
    }

    static func save(_ name: String, body: String = "x", zone: String) -> [UInt8] {
        let escaped = String(decoding: try! JSONEncoder().encode(name), as: UTF8.self)
        return Array(#"{"zone":\#(zone),"saves":[{"recordName":"r\#(UUID().uuidString.prefix(6))","recordType":"note","name":\#(escaped),"body":"\#(body)"}]}"#.utf8)
    }

    @Test func everyBadInputGetsItsAnswerAndChangesNothing() async throws {
        let daemon = try await DaemonProcess.started()
        let client = daemon.client()
        let me = try await client.whoami().name
        let zoneID = ZoneID(owner: me, name: ZoneID.defaultZoneName)
        let zone = #"{"owner":"\#(me)","name":"_defaultZone"}"#
        let kept = try #require(
            try await client.modify(
                ModifyRequest(
                    zone: zoneID,
                    saves: [
                        RecordSave(recordName: "kept", recordType: .note, name: "kept.md", body: "kept")
                    ])
            ).saved.first)
        let share = try await client.createShare(NewShare(zone: zoneID, rootRecordName: "kept", publicPermission: .readOnly))
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let sixteen = String(repeating: "a", count: Limits.maxBodyBytes)
        let rows: [Row] = [
            Row(input: "name with /", path: "/v1/records/modify", body: Self.save("a/b.md", zone: zone), status: 400, code: .invalidArguments),
            Row(input: "name ..", path: "/v1/records/modify", body: Self.save("..", zone: zone), status: 400, code: .invalidArguments),
            Row(input: "name .", path: "/v1/records/modify", body: Self.save(".", zone: zone), status: 400, code: .invalidArguments),
            Row(input: "name with NUL", path: "/v1/records/modify", body: Self.save("a\u{0}b.md", zone: zone), status: 400, code: .invalidArguments),
            Row(input: "name with a control character", path: "/v1/records/modify", body: Self.save("a\u{1B}[31mb.md", zone: zone), status: 400, code: .invalidArguments),
            Row(input: "name with a newline", path: "/v1/records/modify", body: Self.save("a\nb.md", zone: zone), status: 400, code: .invalidArguments),
            Row(input: "name with a bidi override", path: "/v1/records/modify", body: Self.save("evil\u{202E}dm.exe", zone: zone), status: 400, code: .invalidArguments),
            Row(
                input: "name of 256 bytes", path: "/v1/records/modify", body: Self.save(String(repeating: "n", count: 253) + ".md", zone: zone), status: 400,
                code: .invalidArguments),
            Row(
                input: "name of 10,000 bytes", path: "/v1/records/modify", body: Self.save(String(repeating: "n", count: 10_000), zone: zone), status: 400, code: .invalidArguments),
            Row(input: "empty name", path: "/v1/records/modify", body: Self.save("", zone: zone), status: 400, code: .invalidArguments),
            Row(input: "body of 16 MiB + 1", path: "/v1/records/modify", body: Self.save("big.md", body: sixteen + "a", zone: zone), status: 413, code: .limitExceeded),
            Row(input: "request over 64 MiB", path: "/v1/records/modify", body: [UInt8](repeating: 0x20, count: Limits.maxRequestBytes + 1), status: 413, code: .limitExceeded),
            Row(
                input: "401 records in a batch", path: "/v1/records/modify",
                body: Array(#"{"zone":\#(zone),"deletes":[\#((0...400).map { #"{"recordName":"d\#($0)"}"# }.joined(separator: ","))]}"#.utf8), status: 413, code: .limitExceeded),
            Row(input: "JSON nested 10,000 deep", path: "/v1/records/modify", body: Array(deep.utf8), status: 400, code: .invalidArguments),
            Row(input: "not JSON", path: "/v1/records/modify", body: Array("zone=1".utf8), status: 400, code: .invalidArguments),
            Row(input: "no body", path: "/v1/records/modify", body: nil, status: 400, code: .invalidArguments),
            Row(
                input: "unknown record type", path: "/v1/records/modify",
                body: Array(#"{"zone":\#(zone),"saves":[{"recordName":"p","recordType":"poem","name":"p.md"}]}"#.utf8), status: 400, code: .invalidArguments),
            Row(
                input: "stale change tag", path: "/v1/records/modify",
                body: Array(#"{"zone":\#(zone),"saves":[{"recordName":"kept","recordType":"note","name":"kept.md","body":"stale","changeTag":"1"}]}"#.utf8), status: 409,
                code: .serverRecordChanged),
            Row(
                input: "forged change tag", path: "/v1/records/modify",
                body: Array(#"{"zone":\#(zone),"saves":[{"recordName":"kept","recordType":"note","name":"kept.md","body":"forged","changeTag":"zzzzzzzzzzzzzzzzzzzz"}]}"#.utf8),
                status: 409, code: .serverRecordChanged),
            Row(
                input: "forged zone change token", path: "/v1/records/changes",
                body: Array(#"{"zone":\#(zone),"since":"z1.999999999.999999999.999999999"}"#.utf8), status: 400, code: nil),
            Row(input: "garbage zone change token", path: "/v1/records/changes", body: Array(#"{"zone":\#(zone),"since":"../../etc"}"#.utf8), status: 400, code: nil),
            Row(input: "forged database change token", path: "/v1/changes", body: Array(#"{"scope":"private","since":"d1.99999999999"}"#.utf8), status: 400, code: nil),
            Row(input: "negative page size", path: "/v1/records/changes", body: Array(#"{"zone":\#(zone),"limit":-5}"#.utf8), status: 400, code: .invalidArguments),
            Row(input: "huge page size", path: "/v1/records/changes", body: Array(#"{"zone":\#(zone),"limit":1e308}"#.utf8), status: 400, code: .invalidArguments),
            Row(
                input: "expiry of 1e308 seconds", method: "PATCH", path: "/v1/shares/\(share.id)", body: Array(#"{"publicExpiresIn":1.7976931348623157e308}"#.utf8), status: 400,
                code: .invalidArguments),
            Row(
                input: "expiry of -1e308 seconds", method: "PATCH", path: "/v1/shares/\(share.id)", body: Array(#"{"publicExpiresIn":-1e308}"#.utf8), status: 400,
                code: .invalidArguments),
            Row(input: "expiry as \"NaN\"", method: "PATCH", path: "/v1/shares/\(share.id)", body: Array(#"{"publicExpiresIn":"NaN"}"#.utf8), status: 400, code: .invalidArguments),
            Row(input: "token lifetime over ten years", path: "/v1/accounts/\(me)/tokens", body: Array(#"{"expiresIn":315360001}"#.utf8), status: 400, code: .invalidArguments),
            Row(
                input: "10,000 participants", path: "/v1/shares/\(share.id)/participants",
                body: Array(#"{"participants":[\#((0..<10_000).map { #"{"email":"p\#($0)@example.com","permission":"readOnly"}"# }.joined(separator: ","))]}"#.utf8),
                status: 413, code: .limitExceeded),
            Row(
                input: "password of 2,000 bytes", path: "/v1/accept", body: Array(#"{"url":"\#(share.urlToken)","password":"\#(String(repeating: "p", count: 2_000))"}"#.utf8),
                status: 400, code: .invalidArguments),
            Row(input: "share URL with a path", path: "/v1/accept", body: Array(#"{"url":"http://x/s/../../etc/passwd"}"#.utf8), status: 404, code: .unknownItem),
            Row(
                input: "version cursor that is no tag", path: "/v1/records/versions", body: Array(#"{"zone":\#(zone),"recordName":"kept","before":"ZZ"}"#.utf8), status: 400,
                code: .invalidArguments),
            Row(input: "label with an escape", path: "/v1/accounts/\(me)/tokens", body: Array("{\"label\":\"a\\u001b[2J\"}".utf8), status: 400, code: .invalidArguments),
        ]

        func fingerprint() async throws -> String {
            let changes = try await client.zoneChanges(zoneID, since: nil)
            let shares = try await client.shares()
            return changes.records.map { "\($0.recordName)|\($0.name)|\($0.changeTag)|\($0.body ?? "")" }.sorted().joined(separator: "\n")
                + "\n" + shares.map { "\($0.id)|\($0.publicPermission)|\($0.participants.count)|\(String(describing: $0.publicExpiresAt))" }.sorted().joined(separator: "\n")
        }
        let before = try await fingerprint()
        var failures: [String] = []
        for row in rows {
            let answer = try await client.raw(row.method, row.path, body: row.body)
            let error = try? NotesJSON.decoder().decode(NotesJSON.ErrorBody.self, from: Data(answer.body))
            if answer.status != row.status || (row.code != nil && error?.error.code != row.code) || (error?.error.message ?? "").isEmpty {
                failures.append(
                    "\(row.input): expected \(row.status) \(row.code?.rawValue ?? ""), got \(answer.status) \(String(decoding: answer.body.prefix(200), as: UTF8.self))")
            }
            if try await fingerprint() != before { failures.append("\(row.input): the data changed") }
            if try await client.whoami().name != me { failures.append("\(row.input): notesd stopped serving") }
        }
        #expect(failures.isEmpty, "\(failures.count) rows:\n\(failures.joined(separator: "\n"))")
        // The inputs at the limit are accepted: a 255-byte name and a 16 MiB body.
        let atLimit = try await client.modify(
            ModifyRequest(
                zone: zoneID,
                saves: [
                    RecordSave(recordName: "long", recordType: .note, name: String(repeating: "n", count: 252) + ".md", body: sixteen)
                ]))
        #expect(atLimit.saved.first?.name.utf8.count == 255)
        _ = kept
    }
}
