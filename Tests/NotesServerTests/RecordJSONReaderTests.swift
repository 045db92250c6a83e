import Foundation
@testable import NotesClient
@testable import NotesServer
import NotesModel
import Testing

/// The client's hand-written page reader against the server's hand-written writer and
/// against Foundation's encoder, on content that exercises every escape.
@Suite struct RecordJSONReaderTests {
    static let page = ZoneChanges(
        records: [
            RecordJSONWriterTests.record("a", body: "quote \" backslash \\ newline \n tab \t cr \r nul \u{0} bell \u{7} é 日本 🎉 / end", parent: "p", share: "sh_1"),
            RecordJSONWriterTests.record("b", body: nil, bytes: Data([0, 1, 2, 250, 255])),
            RecordJSONWriterTests.record("c", body: ""),
        ],
        deleted: ["gone", "with \"quote\""], changeToken: "z1.1.2.0", moreComing: true)

    @Test func readsWhatTheServerWrites() throws {
        let read = try #require(RecordJSONReader.readZoneChanges(RecordJSONWriter.encode(Self.page)))
        #expect(read == Self.page)
    }

    @Test func readsTheTrashAsWrittenByHandAndByFoundation() throws {
        let date = Date(timeIntervalSince1970: 1_795_000_000.123)
        let trash = API.Trash(trash: [
            TrashedRecord(
                recordName: "a", recordType: .note, name: "quote \" é 日本 \n.md", parent: "p", size: 12, shareID: "sh_1",
                deletedBy: "alice", deletedAt: date, changeTag: "3f"),
            TrashedRecord(
                recordName: "b", recordType: .folder, name: "Plans", parent: nil, size: 0, shareID: nil,
                deletedBy: "bob", deletedAt: date, changeTag: "40"),
        ])
        let written = RecordJSONWriter.encode(trash)
        #expect(try NotesJSON.decoder().decode(API.Trash.self, from: Data(written)).trash == trash.trash)
        #expect(RecordJSONReader.readTrash(written)?.trash == trash.trash)
        #expect(RecordJSONReader.readTrash(Array(try NotesJSON.encoder().encode(trash)))?.trash == trash.trash)
        #expect(RecordJSONReader.readTrash(Array(#"{"trash":[{"recordName":"x"}]}"#.utf8)) == nil)
        #expect(RecordJSONReader.readTrash(Array(#"{"trash":[]}"#.utf8))?.trash == [])
    }

    @Test func readsModifyResults() throws {
        let result = ModifyResult(
            saved: Self.page.records.map {
                var record = $0
                record.body = nil
                record.bytes = nil
                return record
            }, deleted: ["x", "é\""])
        let written = RecordJSONWriter.encode(result)
        #expect(try NotesJSON.decoder().decode(ModifyResult.self, from: Data(written)) == result)
        #expect(RecordJSONReader.readModifyResult(written) == result)
        #expect(RecordJSONReader.readModifyResult(Array(try NotesJSON.encoder().encode(result))) == result)
        #expect(RecordJSONReader.readModifyResult(Array(#"{"saved":[]}"#.utf8)) == nil)
    }

    @Test func readsFoundationsEncodingToo() throws {
        let encoder = NotesJSON.encoder()
        encoder.outputFormatting = [.prettyPrinted]
        let read = try #require(RecordJSONReader.readZoneChanges(Array(try encoder.encode(Self.page))))
        #expect(read == Self.page)
    }

    @Test func readsEscapesFoundationMayUse() throws {
        let json = #"{"changeToken":"t","deleted":["\u00e9\ud83c\udf89\/"],"moreComing":false,"records":[],"future":{"x":[1,2.5e3,null,true]}}"#
        let read = try #require(RecordJSONReader.readZoneChanges(Array(json.utf8)))
        #expect(read.deleted == ["é🎉/"])
    }

    @Test(arguments: [
        "", "{", "[]", #"{"changeToken":"t"}"#, #"{"changeToken":"t","deleted":[],"moreComing":false,"records":[{}]}"#,
        #"{"changeToken":"t","deleted":["\ud800"],"moreComing":false,"records":[]}"#,
        #"{"changeToken":"t","deleted":[],"moreComing":false,"records":[]} trailing"#,
        "{\"changeToken\":\"a\u{1}b\",\"deleted\":[],\"moreComing\":false,\"records\":[]}",
    ])
    func refusesWhatItCannotRead(_ json: String) {
        #expect(RecordJSONReader.readZoneChanges(Array(json.utf8)) == nil)
    }

    @Test func survivesTruncationAtEveryByte() throws {
        let bytes = RecordJSONWriter.encode(Self.page)
        for length in 0..<bytes.count {
            #expect(RecordJSONReader.readZoneChanges(Array(bytes[..<length])) == nil)
        }
    }
}
