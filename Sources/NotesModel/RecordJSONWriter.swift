import Foundation

/// Writes pages of records as JSON by hand: the JSON `NotesJSON.encoder()` would produce
/// for the same values (a test decodes both and compares). Only the hot paths, "changes
/// since" and modify answers; everything else stays Codable.
public enum RecordJSONWriter {
    /// A page of changes. The records come first (unlike `JSONEncoder`'s sorted keys;
    /// JSON readers do not care), so a store can write them straight into the page
    /// and add the rest once it knows where the page ends.
    public static func encode(_ changes: ZoneChanges) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(changes.records.reduce(256) { $0 + $1.contentSize * 4 / 3 + 320 })
        out.append(contentsOf: pageStart)
        for (index, record) in changes.records.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            Self.record(record, into: &out)
        }
        finishPage(&out, changeToken: changes.changeToken, deleted: changes.deleted, moreComing: changes.moreComing)
        return out
    }

    /// How a page begins: `{"records":[`, then the records separated by commas.
    public static let pageStart = Array(#"{"records":["#.utf8)

    /// Closes the records of a page begun with `pageStart` and adds the rest.
    public static func finishPage(_ out: inout [UInt8], changeToken: String, deleted: [String], moreComing: Bool) {
        out.append(contentsOf: #"],"changeToken":"#.utf8)
        JSONBytes.string(changeToken, into: &out)
        out.append(contentsOf: #","deleted":"#.utf8)
        strings(deleted, into: &out)
        out.append(contentsOf: #","moreComing":"#.utf8)
        out.append(contentsOf: (moreComing ? "true" : "false").utf8)
        out.append(UInt8(ascii: "}"))
    }

    /// The answer of a lookup by record names, as `NotesJSON.encoder()` would write it.
    public static func encode(_ answer: API.Records) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(answer.records.reduce(64) { $0 + $1.contentSize * 4 / 3 + 320 })
        out.append(contentsOf: #"{"records":"#.utf8)
        records(answer.records, into: &out)
        if let remaining = answer.remaining {
            out.append(contentsOf: #","remaining":"#.utf8)
            strings(remaining, into: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The answer of a modify operation, as `NotesJSON.encoder()` would write it.
    public static func encode(_ result: ModifyResult) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + result.saved.count * 320)
        out.append(contentsOf: #"{"deleted":"#.utf8)
        strings(result.deleted, into: &out)
        out.append(contentsOf: #","saved":"#.utf8)
        records(result.saved, into: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static func strings(_ values: [String], into out: inout [UInt8]) {
        JSONBytes.array(values, into: &out, element: JSONBytes.string)
    }

    private static func records(_ values: [Record], into out: inout [UInt8]) {
        JSONBytes.array(values, into: &out, element: record)
    }

    public static func record(_ record: Record, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let body = record.body {
            JSONBytes.field("body", body, into: &out)
        }
        if let bytes = record.bytes {
            JSONBytes.field("bytes", bytes.base64EncodedString(), into: &out)
        }
        JSONBytes.field("changeTag", record.changeTag, into: &out)
        JSONBytes.date("createdAt", secondsSince1970: record.createdAt.timeIntervalSince1970, into: &out)
        JSONBytes.date("modifiedAt", secondsSince1970: record.modifiedAt.timeIntervalSince1970, into: &out)
        JSONBytes.field("modifiedBy", record.modifiedBy, into: &out)
        JSONBytes.field("name", record.name, into: &out)
        if let parent = record.parent { JSONBytes.field("parent", parent, into: &out) }
        JSONBytes.field("recordName", record.recordName, into: &out)
        JSONBytes.field("recordType", record.recordType.rawValue, into: &out)
        if let shareID = record.shareID { JSONBytes.field("shareID", shareID, into: &out) }
        zone(record.zone, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// A zone's trash (`API.Trash`), written as `JSONEncoder` would write it: a trash of
    /// 10,000 entries went from 140 ms to a few through notesd.
    public static func encode(_ trash: API.Trash) -> [UInt8] {
        var out = Array(#"{"trash":["#.utf8)
        out.reserveCapacity(trash.trash.count * 200)
        for (index, entry) in trash.trash.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "{"))
            JSONBytes.field("changeTag", entry.changeTag, into: &out)
            JSONBytes.date("deletedAt", secondsSince1970: entry.deletedAt.timeIntervalSince1970, into: &out)
            JSONBytes.field("deletedBy", entry.deletedBy, into: &out)
            JSONBytes.field("name", entry.name, into: &out)
            if let parent = entry.parent { JSONBytes.field("parent", parent, into: &out) }
            JSONBytes.field("recordName", entry.recordName, into: &out)
            JSONBytes.field("recordType", entry.recordType.rawValue, into: &out)
            if let shareID = entry.shareID { JSONBytes.field("shareID", shareID, into: &out) }
            JSONBytes.key("size", into: &out)
            out.append(contentsOf: String(entry.size).utf8)
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }

    /// `"zone":{"name":…,"owner":…}`, the last member of a record.
    public static func zone(_ zone: ZoneID, into out: inout [UInt8]) {
        JSONBytes.key("zone", into: &out)
        out.append(contentsOf: #"{"name":"#.utf8)
        JSONBytes.string(zone.name, into: &out)
        out.append(contentsOf: #","owner":"#.utf8)
        JSONBytes.string(zone.owner, into: &out)
        out.append(UInt8(ascii: "}"))
    }
}
