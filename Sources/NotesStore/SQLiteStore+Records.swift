import Foundation
import GRDB
public import NotesModel

extension SQLiteStore {
    // MARK: Zones

    public func createZone(_ zone: ZoneID, actor: String) async throws(NotesError) -> Zone {
        try Names.validateNewName(zone.name, what: "zone name")
        guard zone.owner == actor else {
            throw NotesError(.permissionFailure, "You can create zones only in your own private database.")
        }
        return try await write { context in
            if try Bool.fetchOne(context.db.cachedStatement(sql: "SELECT 1 FROM zones WHERE owner = ? AND name = ?"), arguments: [zone.owner, zone.name]) == true {
                throw NotesError(.constraintViolation, "You already have a zone named \(zone.name).")
            }
            let epoch = context.nextSeq()
            try context.db.cachedStatement(sql: "INSERT INTO zones (owner, name, epoch, changed_seq) VALUES (?, ?, ?, ?)").execute(arguments: [zone.owner, zone.name, epoch, epoch])
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: nil))
            return Zone(id: zone, changeToken: ZoneChangeToken(epoch: epoch, seq: epoch, membership: 0).encoded)
        }
    }

    public func zones(scope: DatabaseScope, actor: String) async throws(NotesError) -> [Zone] {
        try await read { db in
            let seq = try Self.currentSeq(db)
            switch scope {
            case .private:
                return try Row.fetchAll(db.cachedStatement(sql: "SELECT name, epoch FROM zones WHERE owner = ? ORDER BY name"), arguments: [actor]).map { row in
                    Zone(id: ZoneID(owner: actor, name: row["name"]), changeToken: ZoneChangeToken(epoch: row["epoch"], seq: seq, membership: 0).encoded)
                }
            case .shared:
                var zones: [Zone] = []
                for zone in try Self.sharedZoneIDs(db, actor: actor) {
                    let access = try ZoneAccess.load(db, zone: zone, actor: actor)
                    zones.append(Zone(id: zone, changeToken: ZoneChangeToken(epoch: access.epoch, seq: seq, membership: access.membershipSeq).encoded,
                                      shareIDs: access.readableShares))
                }
                return zones
            }
        }
    }

    public func deleteZone(_ zone: ZoneID, actor: String) async throws(NotesError) {
        guard zone.owner == actor else {
            throw NotesError(.permissionFailure, "Only the owner may delete a zone.")
        }
        guard !zone.isDefault else {
            throw NotesError(.invalidArguments, "The default zone cannot be deleted; delete its records instead.")
        }
        try await write { context in
            let access = try ZoneAccess.load(context.db, zone: zone, actor: actor)
            let shares = ShareWriter(context: context)
            for shareID in Array(access.rootShares.values) + [access.zoneWideShare].compactMap({ $0 }) {
                try shares.stop(shareID: shareID, zone: zone)
            }
            let db = context.db
            for table in ["records", "tombstones", "versions"] {
                try db.cachedStatement(sql: "DELETE FROM \(table) WHERE owner = ? AND zone = ?").execute(arguments: [zone.owner, zone.name])
            }
            try db.cachedStatement(sql: "DELETE FROM zones WHERE owner = ? AND name = ?").execute(arguments: [zone.owner, zone.name])
            try db.cachedStatement(sql: "INSERT INTO zone_tombstones (owner, name, seq) VALUES (?, ?, ?)").execute(arguments: [zone.owner, zone.name, context.nextSeq()])
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: nil))
        }
    }

    // MARK: Records

    public func modify(_ request: ModifyRequest, actor: String) async throws(NotesError) -> ModifyResult {
        try request.validate()
        let saves = try Self.parentsFirst(Self.updatesFirst(request.saves))
        let deleting = Set(request.deletes.map(\.recordName))
        let store = self
        return try await write { context in
            let access = try ZoneAccess.load(context.db, zone: request.zone, actor: actor)
            let writer = RecordWriter(context: context, access: access, actor: actor)
            var saved: [NotesModel.Record] = []
            saved.reserveCapacity(saves.count)
            var current = ""
            let usedBefore = try Storage.used(context.db, by: request.zone.owner)
            do {
                for delete in request.deletes {
                    current = delete.recordName
                    try writer.delete(delete, deleting: deleting)
                }
                for save in saves {
                    current = save.recordName
                    saved.append(try writer.save(save))
                }
            } catch {
                var failure = store.convert(error)
                if failure.code == .constraintViolation {
                    let name = saves.first { $0.recordName == current }?.name ?? current
                    failure.message = "A record named “\(name)” already exists in that folder; choose another name."
                }
                let names = request.deletes.map(\.recordName) + saves.map(\.recordName)
                failure.itemErrors = names.map { name in
                    name == current
                        ? NotesError.ItemError(recordName: name, code: failure.code, message: failure.message, serverRecord: failure.serverRecord)
                        : NotesError.ItemError(recordName: name, code: .batchRequestFailed, message: "Not applied: \(current) failed in the same operation.")
                }
                throw failure
            }
            // Over the owner's quota, only what frees space goes through (deletes, smaller
            // saves): a full account can always be cleaned up.
            if let quota = store.storage.quotaBytes {
                let usedAfter = try Storage.used(context.db, by: request.zone.owner)
                if usedAfter > quota && usedAfter > usedBefore {
                    throw NotesError(.quotaExceeded, Storage.fullMessage(owner: request.zone.owner, actor: actor, used: usedAfter, quota: quota))
                }
            }
            try context.zoneChanged(request.zone)
            return ModifyResult(saved: saved, deleted: request.deletes.map(\.recordName))
        }
    }

    public func records(_ recordNames: [String], in zone: ZoneID, actor: String) async throws(NotesError) -> [NotesModel.Record] {
        guard recordNames.count <= Limits.maxChangesPage else {
            throw NotesError(.limitExceeded, "Look up at most \(Limits.maxChangesPage) records at once.")
        }
        return try await read { db in
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            return try recordNames.compactMap { name in
                try StoredRecord.fetch(db, name, in: zone).flatMap { access.canRead(shareID: $0.shareID) ? $0 : nil }
            }
        }
    }

    public func zoneChanges(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> ZoneChanges {
        let limit = min(max(limit, 1), Limits.maxChangesPage)
        let parsed = try token.map { text throws(NotesError) in try ZoneChangeToken(parsing: text) }
        return try await readAside { db in
            let query = try ChangeQuery(db, zone: zone, since: parsed, limit: limit, actor: actor)
            var records: [(seq: Int64, record: NotesModel.Record)] = []
            records.reserveCapacity(limit + 1)
            let cursor = try Row.fetchCursor(db.cachedStatement(sql: query.recordSQL), arguments: query.arguments)
            var bytes = 0
            var cutShort = false
            while let row = try cursor.next() {
                if bytes > Limits.maxChangesPageBytes {
                    cutShort = true
                    break
                }
                let record = StoredRecord.record(fromColumns: row, zone: zone)
                bytes += record.contentSize
                records.append((seq: row[9], record: record))
            }
            let tombstones = try query.tombstones(db)
            let end = query.end(recordSeqs: records.map(\.seq), tombstones: tombstones, recordsCutShort: cutShort)
            let pageRecords = records.prefix { $0.seq <= end.cut }.map(\.record)
            let deleted = ChangeQuery.deleted(tombstones, upTo: end.cut, present: Set(pageRecords.map(\.recordName)))
            return ZoneChanges(records: pageRecords, deleted: deleted, changeToken: query.token(end.cut), moreComing: end.moreComing)
        }
    }

    /// The same page as `zoneChanges`, written as JSON straight from SQLite's column
    /// buffers: no `Record` values or `String`s in between.
    public func zoneChangesJSON(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> EncodedZoneChanges {
        let limit = min(max(limit, 1), Limits.maxChangesPage)
        let parsed = try token.map { text throws(NotesError) in try ZoneChangeToken(parsing: text) }
        return try await readAside { db in
            let query = try ChangeQuery(db, zone: zone, since: parsed, limit: limit, actor: actor)
            // Tombstones first: only when there are some must record names be kept.
            let tombstones = try query.tombstones(db)
            var out = RecordJSONWriter.pageStart
            out.reserveCapacity(limit * 1_400)
            var seqs: [Int64] = []
            var ends: [Int] = []
            var names: [String] = []
            seqs.reserveCapacity(limit + 1)
            ends.reserveCapacity(limit + 1)
            var zoneJSON: [UInt8] = []
            RecordJSONWriter.zone(zone, into: &zoneJSON)
            let statement = try db.cachedStatement(sql: query.recordSQL)
            let writer = RecordRowJSON(statement: statement.sqliteStatement, zoneJSON: zoneJSON)
            // The cursor steps the statement; the writer reads its current row.
            let cursor = try Row.fetchCursor(statement, arguments: query.arguments)
            var cutShort = false
            while try cursor.next() != nil {
                if out.count > Limits.maxChangesPageBytes {
                    cutShort = true
                    break
                }
                if !seqs.isEmpty { out.append(UInt8(ascii: ",")) }
                writer.write(into: &out)
                seqs.append(writer.seq)
                ends.append(out.count)
                if !tombstones.isEmpty { names.append(writer.recordName) }
            }
            let end = query.end(recordSeqs: seqs, tombstones: tombstones, recordsCutShort: cutShort)
            let kept = seqs.prefix { $0 <= end.cut }.count
            out.removeSubrange((kept == 0 ? RecordJSONWriter.pageStart.count : ends[kept - 1])...)
            let deleted = tombstones.isEmpty ? [] : ChangeQuery.deleted(tombstones, upTo: end.cut, present: Set(names.prefix(kept)))
            let token = query.token(end.cut)
            RecordJSONWriter.finishPage(&out, changeToken: token, deleted: deleted, moreComing: end.moreComing)
            return EncodedZoneChanges(json: out, changeToken: token, moreComing: end.moreComing)
        }
    }

    public func databaseChanges(scope: DatabaseScope, since token: String?, actor: String) async throws(NotesError) -> DatabaseChanges {
        let since = try token.map { text throws(NotesError) in try DatabaseChangeToken(parsing: text) }?.seq ?? 0
        return try await read { db in
            let current = try Self.currentSeq(db)
            guard since <= current else {
                throw NotesError(.invalidArguments, "The change token is not one this server issued; fetch without a token to start over.")
            }
            let newToken = DatabaseChangeToken(seq: current).encoded
            switch scope {
            case .private:
                let changed = try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM zones WHERE owner = ? AND changed_seq > ? ORDER BY name"), arguments: [actor, since])
                let deleted = try String.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT name FROM zone_tombstones WHERE owner = ? AND seq > ? AND name NOT IN (SELECT name FROM zones WHERE owner = ?)"),
                                                  arguments: [actor, since, actor])
                return DatabaseChanges(changedZones: changed.map { ZoneID(owner: actor, name: $0) },
                                       deletedZones: deleted.map { ZoneID(owner: actor, name: $0) }, changeToken: newToken, moreComing: false)
            case .shared:
                let visible = Set(try Self.sharedZoneIDs(db, actor: actor))
                let rows = try Row.fetchAll(db.cachedStatement(sql: """
                    SELECT s.owner, s.zone, MAX(p.changed_seq) AS membership, MAX(COALESCE(z.changed_seq, 0)) AS changed
                    FROM participants p JOIN shares s ON s.id = p.share_id LEFT JOIN zones z ON z.owner = s.owner AND z.name = s.zone
                    WHERE p.account = ? AND p.role != 'owner' GROUP BY s.owner, s.zone
                    """), arguments: [actor])
                var changed: [ZoneID] = []
                var deleted: [ZoneID] = []
                for row in rows {
                    let zone = ZoneID(owner: row["owner"], name: row["zone"])
                    let membership: Int64 = row["membership"]
                    let zoneChanged: Int64 = row["changed"]
                    if visible.contains(zone) {
                        if membership > since || zoneChanged > since { changed.append(zone) }
                    } else if membership > since {
                        deleted.append(zone)
                    }
                }
                return DatabaseChanges(changedZones: changed, deletedZones: deleted, changeToken: newToken, moreComing: false)
            }
        }
    }

    public func versions(of recordName: String, in zone: ZoneID, actor: String, limit: Int, before: String?) async throws(NotesError) -> API.Versions {
        guard (1...Limits.maxVersionsPage).contains(limit) else {
            throw NotesError(.invalidArguments, "limit must be 1 to \(Limits.maxVersionsPage); it was \(limit).")
        }
        let beforeSeq: Int64?
        if let before {
            let digits = before.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) }
            guard digits, before.utf8.count <= 12, let seq = Int64(before, radix: 36) else {
                throw NotesError(.invalidArguments, "before must be a change tag from the previous page; \"\(before)\" is not one.")
            }
            beforeSeq = seq
        } else {
            beforeSeq = nil
        }
        return try await read { db in
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            let record = try StoredRecord.fetch(db, recordName, in: zone)
            guard record.map({ access.canRead(shareID: $0.shareID) }) ?? access.isOwner else {
                throw NotesError(.unknownItem, "There is no record \(recordName) in this zone.")
            }
            // This record's own history: not that of an earlier record deleted under the same
            // name (for a deleted record, the owner reads its last use's).
            let createdSeq = try Int64.fetchOne(db.cachedStatement(sql: record != nil
                ? "SELECT created_seq FROM records WHERE owner = ? AND zone = ? AND record_name = ?"
                : "SELECT created_seq FROM versions WHERE owner = ? AND zone = ? AND record_name = ? ORDER BY seq DESC LIMIT 1"),
                arguments: [zone.owner, zone.name, recordName]) ?? 0
            var page: [RecordVersion] = []
            var bytes = 0
            // The record itself heads the first page.
            if let record, beforeSeq == nil {
                page.append(RecordVersion(changeTag: record.changeTag, name: record.name, parent: record.parent, body: record.body,
                                          size: record.contentSize, modifiedBy: record.modifiedBy, modifiedAt: record.modifiedAt))
                bytes += record.body?.utf8.count ?? 0
            }
            let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT * FROM versions WHERE owner = ? AND zone = ? AND record_name = ? AND created_seq = ? AND seq < ?
                ORDER BY seq DESC LIMIT ?
                """), arguments: [zone.owner, zone.name, recordName, createdSeq, beforeSeq ?? Int64.max, limit + 1])
            var moreComing = false
            while let row = try rows.next() {
                // One more than fits (count or bytes, past the first) says more are coming.
                if page.count >= limit || (!page.isEmpty && bytes >= Limits.maxChangesPageBytes) { moreComing = true; break }
                let parent: String = row["parent"]
                let body = StoredRecord.text(row["body"])
                bytes += body?.utf8.count ?? 0
                page.append(RecordVersion(changeTag: StoredRecord.changeTag(row["seq"]), name: row["name"], parent: parent.isEmpty ? nil : parent,
                                          body: body, size: row["size"], modifiedBy: row["modified_by"], modifiedAt: Date(stored: row["modified_at"])))
            }
            guard !page.isEmpty || beforeSeq != nil else {
                throw NotesError(.unknownItem, "There is no record \(recordName) in this zone.")
            }
            return API.Versions(versions: page, moreComing: moreComing)
        }
    }

    // MARK: Helpers

    static func currentSeq(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM counters WHERE name = 'seq'")) ?? 0
    }

    /// Zones of others in which the caller has at least one readable, accepted share.
    static func sharedZoneIDs(_ db: Database, actor: String) throws -> [ZoneID] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT DISTINCT s.owner, s.zone FROM participants p JOIN shares s ON s.id = p.share_id
            WHERE p.account = ? AND p.status = 'accepted' AND p.role != 'owner' AND s.stopped = 0
              AND (p.role != 'publicUser' OR s.public_permission != 'none')
            ORDER BY s.owner, s.zone
            """), arguments: [actor]).map { ZoneID(owner: $0["owner"], name: $0["zone"]) }
    }

    /// Orders saves so that a folder created in the same operation comes before what
    /// it holds; a cycle among the saves is refused.
    /// Saves of records that exist (they carry a change tag) before new ones, each group
    /// in the order sent: a rename in the batch frees its old name before a new record
    /// takes it. (A mount that renamed `z.bin` away and made a new `z.bin` sent the new
    /// one first, and the unique name index, checked row by row, refused it.)
    static func updatesFirst(_ saves: [RecordSave]) -> [RecordSave] {
        saves.filter { $0.changeTag != nil } + saves.filter { $0.changeTag == nil }
    }

    static func parentsFirst(_ saves: [RecordSave]) throws(NotesError) -> [RecordSave] {
        let byName = Dictionary(saves.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
        var done = Set<String>()
        var ordered: [RecordSave] = []
        ordered.reserveCapacity(saves.count)
        for save in saves where !done.contains(save.recordName) {
            var chain: [RecordSave] = []
            var onChain = Set<String>()
            var cursor: RecordSave? = save
            while let current = cursor, !done.contains(current.recordName) {
                guard onChain.insert(current.recordName).inserted else {
                    throw NotesError(.invalidArguments, "The saves make \(current.recordName) its own ancestor; folders cannot contain themselves.")
                }
                chain.append(current)
                cursor = current.parent.flatMap { byName[$0] }
            }
            for item in chain.reversed() {
                done.insert(item.recordName)
                ordered.append(item)
            }
        }
        return ordered
    }
}
