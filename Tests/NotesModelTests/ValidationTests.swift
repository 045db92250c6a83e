import Foundation
import NotesModel
import Testing

@Suite struct ValidationTests {
    static let badNames: [String] = ["", "a/b", "/", "..", ".", "a\u{0}b", String(repeating: "x", count: 10_000), String(repeating: "é", count: 128)]

    @Test(arguments: badNames)
    func badRecordNamesAreRefused(_ name: String) {
        let error = #expect(throws: NotesError.self) { try Names.validateComponent(name, what: "name") }
        #expect(error?.code == .invalidArguments)
    }

    @Test(arguments: ["plan.md", "Groceries 2026.md", "é", String(repeating: "x", count: 255), "...", ".hidden"])
    func goodNamesPass(_ name: String) throws {
        try Names.validateComponent(name, what: "name")
    }

    @Test(arguments: ["", "-x", ".x", "a b", "a/b", "ä", String(repeating: "a", count: 65)])
    func badAccountNames(_ name: String) {
        #expect(throws: NotesError.self) { try Names.validateAccount(name) }
    }

    @Test func saveValidationNamesEachProblem() {
        let zone = ZoneID(owner: "alice", name: ZoneID.defaultZoneName)
        let big = RecordSave(recordName: "n", recordType: .note, name: "big.md", body: String(repeating: "a", count: Limits.maxBodyBytes + 1))
        #expect(throws: NotesError.self) { try big.validate() }
        #expect((try? big.validate()) == nil)
        do {
            try big.validate()
        } catch {
            #expect(error.code == .limitExceeded)
        }
        let folderWithBody = RecordSave(recordName: "f", recordType: .folder, name: "F", body: "x")
        #expect(throws: NotesError.self) { try folderWithBody.validate() }
        let ownParent = RecordSave(recordName: "f", recordType: .folder, name: "F", parent: "f")
        #expect(throws: NotesError.self) { try ownParent.validate() }

        let tooMany = ModifyRequest(
            zone: zone,
            saves: (0...Limits.maxBatchItems).map {
                RecordSave(recordName: "r\($0)", recordType: .note, name: "\($0).md", body: "")
            })
        let error = #expect(throws: NotesError.self) { try tooMany.validate() }
        #expect(error?.code == .limitExceeded)

        let oneBad = ModifyRequest(
            zone: zone,
            saves: [
                RecordSave(recordName: "a", recordType: .note, name: "ok.md", body: ""),
                RecordSave(recordName: "b", recordType: .note, name: "a/b", body: ""),
            ])
        let batchError = #expect(throws: NotesError.self) { try oneBad.validate() }
        #expect(batchError?.itemErrors.first { $0.recordName == "a" }?.code == .batchRequestFailed)
        #expect(batchError?.itemErrors.first { $0.recordName == "b" }?.code == .invalidArguments)
    }

    @Test func changeTokensRejectForgeries() throws {
        for text in ["", "z1", "z1.a.b.c", "d1.5", "z1.-1.2.3", "z1.1.2.3.4"] {
            #expect(throws: NotesError.self) { try ZoneChangeToken(parsing: text) }
        }
        let token = ZoneChangeToken(epoch: 3, seq: 99, membership: 7)
        #expect(try ZoneChangeToken(parsing: token.encoded) == token)
        #expect(throws: NotesError.self) { try DatabaseChangeToken(parsing: "z1.1.2.3") }
    }

    @Test func shareTokensFromURLs() {
        #expect(API.shareToken(fromURL: "http://h:1/s/AbC-_9#Plan") == "AbC-_9")
        #expect(API.shareToken(fromURL: "AbC") == "AbC")
        #expect(API.shareToken(fromURL: "http://h/s/../../etc") == nil)
        #expect(API.shareToken(fromURL: "http://h/s/") == nil)
        #expect(API.shareToken(fromURL: String(repeating: "a", count: 500)) == nil)
    }

    @Test func randomTokensAreLongAndDistinct() {
        let tokens = (0..<100).map { _ in SecureRandom.token(bytes: 32) }
        #expect(Set(tokens).count == 100)
        #expect(tokens.allSatisfy { $0.count == 43 })
        #expect(SecureRandom.base64URL([0xFB, 0xFF]) == "-_8")
    }
}

@Suite struct ISO8601Tests {
    @Test(arguments: [0.0, 1_795_000_000.123, 951_782_400.5, -86_400.25, 4_102_444_799.999])
    func roundTrips(_ seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        let text = ISO8601.string(from: date)
        let parsed = try #require(ISO8601.date(from: text))
        #expect(abs(parsed.timeIntervalSince1970 - (seconds * 1000).rounded(.down) / 1000) < 0.0005, "\(text)")
        // Same calendar fields as Foundation's formatter (milliseconds may round apart).
        #expect(text.prefix(19) == date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted)).prefix(19))
    }

    @Test func rejectsOtherShapes() {
        for text in ["", "2026-11-22", "2026-13-01T00:00:00Z", "2026-11-22T14:05:09+01:00", "2026-11-22T14:05:09.12Z", "yyyy-11-22T14:05:09Z"] {
            #expect(ISO8601.date(from: text) == nil, "\(text)")
        }
        #expect(ISO8601.date(from: "2026-11-22T14:05:09Z") != nil)
    }
}

/// A sign-in link's code is found at the end of whatever holds it, and nowhere else.
struct SignInCodeTests {
    static let code = "nsl_0123456789abcdef_" + String(repeating: "aZ9-_", count: 8) + "abc"

    @Test func theCodeEndsTheLinkOrStandsAlone() throws {
        let whole = try #require(SignInCode(parsing: "https://notes.example.com:8420/sign-in#\(Self.code)\n"))
        #expect(whole.id == "0123456789abcdef" && whole.text == Self.code)
        #expect(SignInCode(parsing: Self.code) == whole)
        #expect(SignInCode.server(of: "https://notes.example.com:8420/sign-in#\(Self.code)") == "https://notes.example.com:8420")
        #expect(SignInCode.server(of: "https://example.com/notes/sign-in#\(Self.code)") == "https://example.com/notes")
        #expect(SignInCode.server(of: Self.code) == nil)
        for broken in [String(Self.code.dropLast()), Self.code + ".", Self.code.replacingOccurrences(of: "nsl_", with: "ntk_"), "nsl_", "", "#"] {
            #expect(SignInCode(parsing: broken) == nil, "\(broken)")
        }
        #expect(SignInCode(parsing: Self.code.replacingOccurrences(of: "0123456789abcdef", with: "0123456789ABCDEF")) == nil)
    }
}
