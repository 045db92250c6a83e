import Foundation
public import NotesModel
import NIOCore
import PostgresNIO

/// A page of a zone's changes written as JSON straight from PostgreSQL's row cells (as
/// `RecordRowJSON` writes them from SQLite's column buffers): no `Record`, `String` or
/// `Data` per row. Building values first made a page of 2,000 notes cost twice what
/// reading it did.
extension PostgresStore {
    public func zoneChangesJSON(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> EncodedZoneChanges {
        let limit = ChangePage.clamp(limit)
        let parsed = try token.map { text throws(NotesError) in try ZoneChangeToken(parsing: text) }
        return try await read { sql in
            let start = try await Self.startPage(sql, zone, since: parsed, limit: limit, actor: actor)
            let (page, count, tombstones) = (start.page, start.count, start.tombstones)
            var out = RecordJSONWriter.pageStart
            var zoneJSON: [UInt8] = []
            RecordJSONWriter.zone(zone, into: &zoneJSON)
            var seqs: [Int64] = []
            var ends: [Int] = []
            var names: [String] = []
            seqs.reserveCapacity(count)
            ends.reserveCapacity(count)
            for try await row in try await sql.connection.query(start.recordFilter.selecting(PostgresRecords.columns, from: "records", limit: count), logger: sql.logger) {
                if !seqs.isEmpty { out.append(UInt8(ascii: ",")) }
                let cells = row.makeRandomAccess()
                let seq = try cells[9].decode(Int64.self)
                Self.writeRecord(cells, seq: seq, zoneJSON: zoneJSON, into: &out)
                seqs.append(seq)
                ends.append(out.count)
                if !tombstones.isEmpty { names.append(try cells[0].decode(String.self)) }
            }
            let end = page.end(recordSeqs: seqs, tombstones: tombstones, recordsCutShort: start.cutShort)
            let kept = seqs.prefix { $0 <= end.cut }.count
            out.removeSubrange((kept == 0 ? RecordJSONWriter.pageStart.count : ends[kept - 1])...)
            let deleted = tombstones.isEmpty ? [] : ChangePage.deleted(tombstones, upTo: end.cut, present: Set(names.prefix(kept)))
            let token = page.token(end.cut)
            RecordJSONWriter.finishPage(&out, changeToken: token, deleted: deleted, moreComing: end.moreComing)
            return EncodedZoneChanges(json: out, changeToken: token, moreComing: end.moreComing)
        }
    }

    /// What a caller reads of a zone's changes: the owner all of it, a participant the
    /// shares it may read (records, and tombstones that say a record left them).
    static func changeFilters(_ zone: ZoneID, access: ZoneAccess, since: Int64, through: Int64) -> (records: PostgresQuery, tombstones: PostgresQuery) {
        let owner = zone.owner
        let name = zone.name
        if access.isOwner {
            return (
                "owner = \(owner) AND zone = \(name) AND seq > \(since) AND seq <= \(through)",
                "owner = \(owner) AND zone = \(name) AND seq > \(since) AND seq <= \(through) AND kind = 'deleted'"
            )
        }
        let shares = access.readableShares
        let filter: PostgresQuery = "owner = \(owner) AND zone = \(name) AND seq > \(since) AND seq <= \(through) AND share_id = ANY(\(shares))"
        return (filter, filter)
    }

    /// One record's JSON from the cells of `PostgresRecords.columns`, as
    /// `RecordJSONWriter.record` writes a `Record`.
    static func writeRecord(_ cells: PostgresRandomAccessRow, seq: Int64, zoneJSON: [UInt8], into out: inout [UInt8]) {
        func bytes(_ index: Int) -> ByteBuffer? { cells[index].bytes }
        func text(_ index: Int, _ name: StaticString) {
            JSONBytes.key(name, into: &out)
            if let buffer = bytes(index) {
                buffer.withUnsafeReadableBytes { JSONBytes.string($0, into: &out) }
            } else {
                JSONBytes.string("", into: &out)
            }
            out.append(UInt8(ascii: ","))
        }
        func double(_ index: Int) -> Double { (try? cells[index].decode(Double.self)) ?? 0 }
        out.append(UInt8(ascii: "{"))
        if let body = bytes(4) {
            JSONBytes.key("body", into: &out)
            body.withUnsafeReadableBytes { JSONBytes.string($0, into: &out) }
            out.append(UInt8(ascii: ","))
        }
        if let data = bytes(5) {
            JSONBytes.field("bytes", Data(data.readableBytesView).base64EncodedString(), into: &out)
        }
        JSONBytes.field("changeTag", RecordRules.changeTag(seq), into: &out)
        JSONBytes.date("createdAt", secondsSince1970: double(6), into: &out)
        JSONBytes.date("modifiedAt", secondsSince1970: double(7), into: &out)
        text(8, "modifiedBy")
        text(2, "name")
        if let parent = bytes(3), parent.readableBytes > 0 { text(3, "parent") }
        text(0, "recordName")
        text(1, "recordType")
        if bytes(10) != nil { text(10, "shareID") }
        out.append(contentsOf: zoneJSON)
        out.append(UInt8(ascii: "}"))
    }
}
