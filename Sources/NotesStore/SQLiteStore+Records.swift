import Foundation
import GRDB
public import NotesModel
import NotesStoreRules

extension SQLiteStore {
    // MARK: Zones

    public func createZone(_ zone: ZoneID, actor: String) async throws(NotesError) -> Zone {
        try ZoneAccess.checkCreate(zone, actor: actor)
        return try await write { context in
            if try Bool.fetchOne(context.db.cachedStatement(sql: "SELECT 1 FROM zones WHERE owner = ? AND name = ?"), arguments: [zone.owner, zone.name]) == true {
                throw NotesError(.constraintViolation, "You already have a zone named \(zone.name).")
            }
            let zones = try Int.fetchOne(context.db.cachedStatement(sql: "SELECT COUNT(*) FROM zones WHERE owner = ?"), arguments: [zone.owner]) ?? 0
            try self.storage.checkCount(.zones, has: zones, owner: zone.owner, actor: actor)
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
                    zones.append(access.sharedZone(at: seq))
                }
                return zones
            }
        }
    }

    public func deleteZone(_ zone: ZoneID, actor: String) async throws(NotesError) {
        try ZoneAccess.checkDelete(zone, actor: actor)
        try await write { context in
            let access = try ZoneAccess.load(context.db, zone: zone, actor: actor)
            let shares = ShareWriter(context: context)
            for shareID in access.activeShares {
                try shares.stop(shareID: shareID, zone: zone)
            }
            let db = context.db
            for table in ["records", "tombstones", "versions", "trash"] {
                try db.cachedStatement(sql: "DELETE FROM \(table) WHERE owner = ? AND zone = ?").execute(arguments: [zone.owner, zone.name])
            }
            try db.cachedStatement(sql: "DELETE FROM zones WHERE owner = ? AND name = ?").execute(arguments: [zone.owner, zone.name])
            try db.cachedStatement(sql: "INSERT INTO zone_tombstones (owner, name, seq) VALUES (?, ?, ?)").execute(arguments: [zone.owner, zone.name, context.nextSeq()])
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: nil))
        }
    }

    // MARK: Records

    public func modify(_ request: ModifyRequest, actor: String) async throws(NotesError) -> ModifyResult {
        try await modify(request, actor: actor, restoring: [], restore: nil)
    }

    public func modify(_ request: ModifyRequest, actor: String, restoring: [RestoredRecord], restore: String?) async throws(NotesError) -> ModifyResult {
        try request.validate()
        let saves = try RecordRules.ordered(request.saves)
        let store = self
        let apart = try await writeApart(saves, in: request.zone, actor: actor)
        let apartBytes = SeparateContents.charge(saves, apart: apart)
        do {
            // (A few small notes take a millisecond: see `write(small:)`.)
            return try await write(small: SeparateContents.isSmall(saves, deletes: request.deletes.count)) { context in
                try Self.takeWrittenApart(context.db, apart.values, charging: apartBytes, to: request.zone.owner)
                return try store.modifyNow(
                    request, saves: saves, actor: actor, restoring: restoring, restore: restore, apart: apart, apartBytes: apartBytes, context: context)
            }
        } catch {
            await dropWrittenApart(Array(apart.values))
            throw error
        }
    }

    /// The modify's own transaction: its large contents are already written (`apart`,
    /// counted in the owner's usage since, `apartBytes`).
    private func modifyNow(
        _ request: ModifyRequest, saves: [RecordSave], actor: String, restoring: [RestoredRecord], restore: String?,
        apart: [String: Int64], apartBytes: Int64, context: WriteContext
    ) throws -> ModifyResult {
        let store = self
        let access = try ZoneAccess.load(context.db, zone: request.zone, actor: actor)
        let writer = RecordWriter(context: context, access: access, actor: actor)
        var saved: [NotesModel.Record] = []
        saved.reserveCapacity(saves.count)
        var run = ModifyRun(request, saves: saves)
        let usedBefore = try Storage.used(context.db, by: request.zone.owner) - apartBytes
        do {
            while let step = run.next() {
                switch step {
                case .delete(let delete, let savedParents):
                    if try !writer.delete(delete, deleting: run.deleting, savedParents: savedParents) { run.waitForSaves(delete) }
                case .save(let save):
                    saved.append(try writer.save(save, contentID: apart[save.recordName]))
                case .savesDone:
                    break
                }
            }
            try Self.joinHistories(context.db, restoring, in: request.zone, restore: restore)
        } catch {
            throw run.failure(store.convert(error))
        }
        if store.storage.quotaBytes != nil {
            try RecordRules.checkQuota(
                store.storage, owner: request.zone.owner, actor: actor, usedBefore: usedBefore,
                usedAfter: try Storage.used(context.db, by: request.zone.owner))
        }
        try context.zoneChanged(request.zone)
        return ModifyResult(saved: saved, deleted: request.deletes.map(\.recordName))
    }

    public func lookUp(_ recordNames: [String], in zone: ZoneID, actor: String) async throws(NotesError) -> API.Records {
        let asked = try RecordLookup(asking: recordNames)
        return try await readAside { db in
            var lookup = asked
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            let hidden = try Self.restoring(db, in: zone)
            while let name = lookup.nextName() {
                lookup.found(try StoredRecord.fetch(db, name, in: zone).flatMap { access.canRead(shareID: $0.shareID) && !hidden.contains(name) ? $0 : nil })
            }
            return lookup.answer
        }
    }

    public func zoneChanges(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> ZoneChanges {
        let limit = ChangePage.clamp(limit)
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
            return query.page.changes(records: records, tombstones: try query.tombstones(db), recordsCutShort: cutShort)
        }
    }

    /// The same page as `zoneChanges`, written as JSON straight from SQLite's column
    /// buffers: no `Record` values or `String`s in between.
    public func zoneChangesJSON(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> EncodedZoneChanges {
        let limit = ChangePage.clamp(limit)
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
            let end = query.page.end(recordSeqs: seqs, tombstones: tombstones, recordsCutShort: cutShort)
            let kept = seqs.prefix { $0 <= end.cut }.count
            out.removeSubrange((kept == 0 ? RecordJSONWriter.pageStart.count : ends[kept - 1])...)
            let deleted = tombstones.isEmpty ? [] : ChangePage.deleted(tombstones, upTo: end.cut, present: Set(names.prefix(kept)))
            let token = query.page.token(end.cut)
            RecordJSONWriter.finishPage(&out, changeToken: token, deleted: deleted, moreComing: end.moreComing)
            return EncodedZoneChanges(json: out, changeToken: token, moreComing: end.moreComing)
        }
    }

    public func databaseChanges(scope: DatabaseScope, since token: String?, actor: String) async throws(NotesError) -> DatabaseChanges {
        return try await readAside { db in
            let current = DatabaseChangeToken(seq: try Self.currentSeq(db))
            let since = try DatabaseChanges.since(token, current: current)?.seq ?? 0
            switch scope {
            case .private:
                let changed = try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM zones WHERE owner = ? AND changed_seq > ? ORDER BY name"), arguments: [actor, since])
                let deleted = try String.fetchAll(
                    db.cachedStatement(sql: "SELECT DISTINCT name FROM zone_tombstones WHERE owner = ? AND seq > ? AND name NOT IN (SELECT name FROM zones WHERE owner = ?)"),
                    arguments: [actor, since, actor])
                return DatabaseChanges(
                    changedZones: changed.map { ZoneID(owner: actor, name: $0) },
                    deletedZones: deleted.map { ZoneID(owner: actor, name: $0) }, changeToken: current.encoded, moreComing: false)
            case .shared:
                let visible = Set(try Self.sharedZoneIDs(db, actor: actor))
                let rows = try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT s.owner, s.zone, MAX(p.changed_seq) AS membership, MAX(COALESCE(z.changed_seq, 0)) AS changed
                            FROM participants p JOIN shares s ON s.id = p.share_id LEFT JOIN zones z ON z.owner = s.owner AND z.name = s.zone
                            WHERE p.account = ? AND p.role != 'owner' GROUP BY s.owner, s.zone
                            """), arguments: [actor])
                return DatabaseChanges.shared(
                    rows.map { row in
                        (
                            zone: ZoneID(owner: row["owner"], name: row["zone"]), membershipChanged: (row["membership"] as Int64) > since,
                            zoneChanged: (row["changed"] as Int64) > since
                        )
                    }, visible: visible, current: current)
            }
        }
    }

    public func versions(of recordName: String, in zone: ZoneID, actor: String, limit: Int, before: String?) async throws(NotesError) -> API.Versions {
        let beforeSeq = try RecordRules.versionsBefore(before, limit: limit)
        return try await readAside { db in
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            let record = try StoredRecord.fetch(db, recordName, in: zone)
            guard record.map({ access.canRead(shareID: $0.shareID) }) ?? access.isOwner else {
                throw RecordRules.unknownRecord(recordName)
            }
            // This record's own history: not that of an earlier record deleted under the same
            // name (for a deleted record, the owner reads its last use's).
            let createdSeq =
                try Int64.fetchOne(
                    db.cachedStatement(
                        sql: record != nil
                            ? "SELECT created_seq FROM records WHERE owner = ? AND zone = ? AND record_name = ?"
                            : "SELECT created_seq FROM versions WHERE owner = ? AND zone = ? AND record_name = ? ORDER BY seq DESC LIMIT 1"),
                    arguments: [zone.owner, zone.name, recordName]) ?? 0
            var page = VersionPage(record: record, beforeSeq: beforeSeq, limit: limit)
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT seq, name, parent, \(StoredRecord.body("versions")), size, modified_by, modified_at
                        FROM versions WHERE owner = ? AND zone = ? AND record_name = ? AND created_seq = ? AND seq < ?
                        ORDER BY seq DESC LIMIT ?
                        """), arguments: [zone.owner, zone.name, recordName, createdSeq, beforeSeq ?? Int64.max, limit + 1])
            while let row = try rows.next(), page.fitsAnother() {
                let parent: String = row["parent"]
                page.append(
                    RecordVersion(
                        changeTag: StoredRecord.changeTag(row["seq"]), name: row["name"], parent: parent.isEmpty ? nil : parent,
                        body: StoredRecord.text(row["body"]), size: row["size"], modifiedBy: row["modified_by"], modifiedAt: Date(stored: row["modified_at"])))
            }
            return try page.finish(recordName)
        }
    }

    // MARK: Helpers

    static func currentSeq(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM counters WHERE name = 'seq'")) ?? 0
    }

    /// Zones of others in which the caller has at least one readable, accepted share.
    static func sharedZoneIDs(_ db: Database, actor: String) throws -> [ZoneID] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT DISTINCT s.owner, s.zone FROM participants p JOIN shares s ON s.id = p.share_id
                    WHERE p.account = ? AND p.status = 'accepted' AND p.role != 'owner' AND s.stopped = 0
                      AND (p.role != 'publicUser' OR s.public_permission != 'none')
                    ORDER BY s.owner, s.zone
                    """), arguments: [actor]
        ).map { ZoneID(owner: $0["owner"], name: $0["zone"]) }
    }
}
