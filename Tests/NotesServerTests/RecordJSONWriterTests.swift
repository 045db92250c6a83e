import Foundation
import NotesModel
import Testing

@Suite struct RecordJSONWriterTests {
    static func record(_ name: String, body: String?, bytes: Data? = nil, parent: String? = nil, share: String? = nil) -> Record {
        Record(
            recordName: name, zone: ZoneID(owner: "alice", name: "Wörk \"q\""), recordType: bytes == nil ? .note : .file, name: "\(name).md",
            parent: parent, body: body, bytes: bytes, createdAt: Date(timeIntervalSince1970: 1_795_000_000.5),
            modifiedAt: Date(timeIntervalSince1970: 1_795_000_100.25), modifiedBy: "bob", changeTag: "2s", shareID: share)
    }

    @Test func matchesTheCodableEncoding() throws {
        let nasty = "quote \" backslash \\ newline \n tab \t cr \r nul \u{0} bell \u{7} unicode é 日本 🎉 slash / end"
        let changes = ZoneChanges(
            records: [Self.record("a", body: nasty, parent: "p", share: "sh_1"), Self.record("b", body: nil, bytes: Data([0, 1, 2, 250, 255])), Self.record("c", body: "")],
            deleted: ["gone", "with \"quote\""], changeToken: "z1.1.2.0", moreComing: true)
        let fast = RecordJSONWriter.encode(changes)
        let decoded = try NotesJSON.decoder().decode(ZoneChanges.self, from: Data(fast))
        let viaCodable = try NotesJSON.decoder().decode(ZoneChanges.self, from: NotesJSON.encoder().encode(changes))
        #expect(decoded == viaCodable)
        #expect(decoded.records[0].body == nasty)
        #expect(decoded.records[1].bytes == Data([0, 1, 2, 250, 255]))
        // And it is valid JSON for any parser, not only ours.
        #expect(try JSONSerialization.jsonObject(with: Data(fast)) is [String: Any])
    }

    @Test func escapesAtEveryPositionOfTheEightByteScan() throws {
        // Every special character at every offset around the 8-byte words, in ASCII and
        // among multi-byte characters, must come back as written.
        let specials: [Character] = ["\"", "\\", "\n", "\u{0}", "\u{1f}", "\t"]
        for filler in ["abcdefghijklmnopq", "é日本🎉xyzéé日本🎉"] {
            for special in specials {
                for offset in 0...filler.count {
                    var text = filler
                    text.insert(special, at: text.index(text.startIndex, offsetBy: offset))
                    var out: [UInt8] = []
                    JSONBytes.string(text, into: &out)
                    let back = try JSONSerialization.jsonObject(with: Data(out), options: .fragmentsAllowed) as? String
                    #expect(back == text, "\(text.debugDescription) came back as \(String(describing: back?.debugDescription))")
                }
            }
        }
    }
}
