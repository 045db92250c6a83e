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

        let tooMany = ModifyRequest(zone: zone, saves: (0...Limits.maxBatchItems).map {
            RecordSave(recordName: "r\($0)", recordType: .note, name: "\($0).md", body: "")
        })
        let error = #expect(throws: NotesError.self) { try tooMany.validate() }
        #expect(error?.code == .limitExceeded)

        let oneBad = ModifyRequest(zone: zone, saves: [
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
