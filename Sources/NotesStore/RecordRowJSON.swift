import Foundation
import GRDBSQLite
import NotesModel

/// Writes the JSON of the record on the current row of a statement that selects
/// `StoredRecord.columns`, as `RecordJSONWriter.record` would write the `Record`, from
/// SQLite's column buffers themselves: no `Record`, `String` or `Data` in between.
/// `zoneJSON` is the record's last member, the same for a whole page.
struct RecordRowJSON {
    let statement: OpaquePointer
    let zoneJSON: [UInt8]

    func write(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        optionalText(4, "body", into: &out)
        if let bytes = column(5) {
            JSONBytes.field("bytes", Data(bytes).base64EncodedString(), into: &out)
        }
        JSONBytes.field("changeTag", StoredRecord.changeTag(seq), into: &out)
        JSONBytes.date("createdAt", secondsSince1970: sqlite3_column_double(statement, 6), into: &out)
        JSONBytes.date("modifiedAt", secondsSince1970: sqlite3_column_double(statement, 7), into: &out)
        text(8, "modifiedBy", into: &out)
        text(2, "name", into: &out)
        optionalText(3, "parent", emptyIsNone: true, into: &out)
        text(0, "recordName", into: &out)
        text(1, "recordType", into: &out)
        optionalText(10, "shareID", into: &out)
        out.append(contentsOf: zoneJSON)
        out.append(UInt8(ascii: "}"))
    }

    /// The record's seq (its change tag's number) and name, for cutting the page.
    var seq: Int64 { sqlite3_column_int64(statement, 9) }
    var recordName: String { column(0).map { String(decoding: $0, as: UTF8.self) } ?? "" }

    /// A column's bytes (valid until the statement steps), or `nil` for NULL.
    private func column(_ index: Int32) -> UnsafeRawBufferPointer? {
        guard sqlite3_column_type(statement, index) != SQLITE_NULL else { return nil }
        let pointer = sqlite3_column_blob(statement, index)
        let count = Int(sqlite3_column_bytes(statement, index))
        return UnsafeRawBufferPointer(start: pointer, count: count)
    }

    /// `"name":"…",` from a text column that is never NULL.
    private func text(_ index: Int32, _ name: StaticString, into out: inout [UInt8]) {
        JSONBytes.key(name, into: &out)
        JSONBytes.string(column(index) ?? UnsafeRawBufferPointer(start: nil, count: 0), into: &out)
        out.append(UInt8(ascii: ","))
    }

    /// `"name":"…",`, or nothing for NULL (and, with `emptyIsNone`, for ''; the store
    /// keeps a root's parent as '').
    private func optionalText(_ index: Int32, _ name: StaticString, emptyIsNone: Bool = false, into out: inout [UInt8]) {
        guard let value = column(index), !(emptyIsNone && value.isEmpty) else { return }
        JSONBytes.key(name, into: &out)
        JSONBytes.string(value, into: &out)
        out.append(UInt8(ascii: ","))
    }
}
