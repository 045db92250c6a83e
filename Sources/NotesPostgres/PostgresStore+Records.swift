import Foundation
public import NotesModel
import NotesStoreRules
import PostgresNIO

extension PostgresStore {
    // MARK: Zones

    public func createZone(_ zone: ZoneID, actor: String) async throws(NotesError) -> Zone {
        try ZoneAccess.checkCreate(zone, actor: actor)
        return try await write { context in
            if try await context.sql.exists("SELECT 1 FROM zones WHERE owner = \(zone.owner) AND name = \(zone.name)") {
                throw NotesError(.constraintViolation, "You already have a zone named \(zone.name).")
            }
            let zones = try await context.sql.value("SELECT COUNT(*) FROM zones WHERE owner = \(zone.owner)", as: Int64.self) ?? 0
            try self.storage.checkCount(.zones, has: Int(zones), owner: zone.owner, actor: actor)
            let epoch = try await Self.insertZone(context.sql, zone)
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: nil))
            return Zone(id: zone, changeToken: ZoneChangeToken(epoch: epoch, seq: epoch, membership: 0).encoded)
        }
    }

    /// Makes a zone's row: a new epoch (unique, so tokens of a zone of the same name
    /// made before are refused), from which its change numbers count.
    static func insertZone(_ sql: SQL, _ zone: ZoneID) async throws -> Int64 {
        let epoch = try await sql.value(
            """
            INSERT INTO zones (owner, name, epoch, changed_seq, last_seq)
            SELECT \(zone.owner), \(zone.name), e, e, e FROM nextval('zone_epochs') AS e RETURNING epoch
            """, as: Int64.self)
        guard let epoch else { throw NotesError(.internalError, "A zone was made without an epoch.") }
        return epoch
    }

    public func zones(scope: DatabaseScope, actor: String) async throws(NotesError) -> [Zone] {
        try await read { sql in
            switch scope {
            case .private:
                return try await sql.rows("SELECT name, epoch, last_seq FROM zones WHERE owner = \(actor) ORDER BY name COLLATE \"C\"").map { row in
                    let (name, epoch, seq) = try row.decode((String, Int64, Int64).self)
                    return Zone(id: ZoneID(owner: actor, name: name), changeToken: ZoneChangeToken(epoch: epoch, seq: seq, membership: 0).encoded)
                }
            case .shared:
                var zones: [Zone] = []
                for zone in try await PostgresRecords.sharedZoneIDs(sql, actor: actor) {
                    let access = try await PostgresRecords.access(sql, zone: zone, actor: actor)
                    zones.append(access.sharedZone(at: try await PostgresRecords.lastSeq(sql, in: zone)))
                }
                return zones
            }
        }
    }

    public func deleteZone(_ zone: ZoneID, actor: String) async throws(NotesError) {
        try ZoneAccess.checkDelete(zone, actor: actor)
        try await write(.zone(zone)) { context in
            let sql = context.sql
            let access = try await PostgresRecords.access(sql, zone: zone, actor: actor)
            let shares = PostgresShareWriter(context: context)
            for shareID in access.activeShares {
                try await shares.stop(shareID: shareID, zone: zone)
            }
            try await sql.execute("DELETE FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name)")
            try await sql.execute("DELETE FROM tombstones WHERE owner = \(zone.owner) AND zone = \(zone.name)")
            try await sql.execute("DELETE FROM versions WHERE owner = \(zone.owner) AND zone = \(zone.name)")
            try await sql.execute("DELETE FROM trash WHERE owner = \(zone.owner) AND zone = \(zone.name)")
            try await sql.execute("DELETE FROM zones WHERE owner = \(zone.owner) AND name = \(zone.name)")
            try await sql.execute("INSERT INTO zone_tombstones (owner, name, seq) VALUES (\(zone.owner), \(zone.name), \(try context.nextSeq()))")
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
        let apart = try await writeApart(saves, in: request.zone, actor: actor)
        let apartBytes = SeparateContents.charge(saves, apart: apart)
        do {
            do {
                let result = try await modifyNow(
                    request, saves: saves, actor: actor, restoring: restoring, restore: restore, apart: apart, apartBytes: apartBytes)
                wroteRecords(result.saved.count)
                return result
            } catch  where error.code == .constraintViolation && saves.count > 1 {
                // A name taken twice shows when the saves are written together, not
                // which save took it: the operation runs again a save at a time, so that
                // the error names the save that failed (or it goes through, if the name
                // came free meanwhile).
                return try await modifyNow(
                    request, saves: saves, actor: actor, restoring: restoring, restore: restore, apart: apart, apartBytes: apartBytes,
                    oneAtATime: true)
            }
        } catch {
            await dropWrittenApart(Array(apart.values))
            throw error
        }
    }

    /// The modify's own transaction: its large contents are already written (`apart`,
    /// counted in the owner's usage since, `apartBytes`). Its saves are written together
    /// (`PostgresPendingSaves`), or each as it is decided (`oneAtATime`).
    private func modifyNow(
        _ request: ModifyRequest, saves: [RecordSave], actor: String, restoring: [RestoredRecord], restore: String?,
        apart: [String: Int64], apartBytes: Int64, oneAtATime: Bool = false
    ) async throws(NotesError) -> ModifyResult {
        try await write(.zone(request.zone)) { context in
            try await Self.takeWrittenApart(context.sql, Array(apart.values), charging: apartBytes, to: request.zone)
            let owner = request.zone.owner
            let names = Set(request.deletes.map(\.recordName) + saves.map(\.recordName) + saves.compactMap(\.parent))
            let (access, usage, participants, found) = try await PostgresRecords.accessAndUsage(
                context.sql, zone: request.zone, actor: actor, records: Array(names))
            let usedBefore = usage - apartBytes
            let writer = PostgresRecordWriter(context: context, access: access, actor: actor, oneAtATime: oneAtATime)
            writer.readAhead(names, found: found)
            var saved: [Record] = []
            saved.reserveCapacity(saves.count)
            var run = ModifyRun(request, saves: saves)
            do {
                while let step = run.next() {
                    switch step {
                    case .delete(let delete, let savedParents):
                        if try await !writer.delete(delete, deleting: run.deleting, savedParents: savedParents) { run.waitForSaves(delete) }
                    case .save(let save):
                        saved.append(try await writer.save(save, contentID: apart[save.recordName]))
                    case .savesDone:
                        try await writer.finish()
                    }
                }
                // (The deletes that waited for the saves are decided and not yet written.)
                try await writer.finish()
                try await Self.joinHistories(context.sql, restoring, in: request.zone, restore: restore)
            } catch {
                throw run.failure(convert(error))
            }
            // The zone's counter is written back in the last statement, which
            // also reads the usage after the write for the quota check.
            context.zoneChangedAtFinish(request.zone, participants: participants)
            let storage = storage
            context.checkUsage = { usedAfter throws(NotesError) in
                try RecordRules.checkQuota(storage, owner: owner, actor: actor, usedBefore: usedBefore, usedAfter: usedAfter)
            }
            return ModifyResult(saved: saved, deleted: request.deletes.map(\.recordName))
        }
    }

    public func lookUp(_ recordNames: [String], in zone: ZoneID, actor: String) async throws(NotesError) -> API.Records {
        let asked = try RecordLookup(asking: recordNames)
        return try await read { sql in
            var lookup = asked
            let access = try await PostgresRecords.access(sql, zone: zone, actor: actor)
            let hidden = try await Self.restoring(sql, in: zone)
            while let name = lookup.nextName() {
                // (A name holding a NUL cannot be stored, so it is not there.)
                guard !name.utf8.contains(0), let record = try await PostgresRecords.fetch(sql, name, in: zone) else { continue }
                lookup.found(access.canRead(shareID: record.shareID) && !hidden.contains(name) ? record : nil)
            }
            return lookup.answer
        }
    }

    public func zoneChanges(_ zone: ZoneID, since token: String?, limit: Int, actor: String) async throws(NotesError) -> ZoneChanges {
        let limit = ChangePage.clamp(limit)
        let parsed = try token.map { text throws(NotesError) in try ZoneChangeToken(parsing: text) }
        return try await read { sql in
            let start = try await Self.startPage(sql, zone, since: parsed, limit: limit, actor: actor)
            let records = try await sql.rows(start.recordFilter.selecting(PostgresRecords.columns, from: "records", limit: start.count))
                .map { try PostgresRecords.record(from: $0, zone: zone) }
            return start.page.changes(records: records, tombstones: start.tombstones, recordsCutShort: start.cutShort)
        }
    }

    /// What both forms of a change page read before its records: the caller's access,
    /// the page's bounds, how many records fit its byte bound (sizes first, so that
    /// content past it is never sent), and the tombstones after its start.
    struct PageStart {
        let page: ChangePage
        let recordFilter: PostgresQuery
        let count: Int
        let cutShort: Bool
        let tombstones: [(seq: Int64, name: String)]
    }

    static func startPage(_ sql: SQL, _ zone: ZoneID, since parsed: ZoneChangeToken?, limit: Int, actor: String) async throws -> PageStart {
        let access = try await PostgresRecords.access(sql, zone: zone, actor: actor)
        let (current, pruned, held) = try await PostgresRecords.currentSeq(sql, in: zone)
        let page = try ChangePage(access: access, since: parsed, limit: limit, current: current, prunedThrough: pruned, heldAt: held)
        let (recordFilter, tombstoneFilter) = changeFilters(zone, access: access, since: page.since, through: page.current)
        let sizes = try await sql.column(
            recordFilter.selecting(PostgresRecords.size("records"), from: "records", limit: limit + 1), as: Int.self)
        let (count, cutShort) = ChangePage.fitting(contentSizes: sizes)
        let tombstones = try await sql.rows(tombstoneFilter.selecting("seq, record_name", from: "tombstones", limit: limit + 1)).map { row in
            let (seq, name) = try row.decode((Int64, String).self)
            return (seq: seq, name: name)
        }
        return PageStart(page: page, recordFilter: recordFilter, count: count, cutShort: cutShort, tombstones: tombstones)
    }

    /// A zone, a membership or a deleted zone carries the transaction that changed it
    /// (`changed_txn`, `txn`), and the token is the snapshot of the client's last read
    /// (`databasePosition`): what changed is what that snapshot did not see.
    public func databaseChanges(scope: DatabaseScope, since token: String?, actor: String) async throws(NotesError) -> DatabaseChanges {
        try await read { sql in
            let current = try await databasePosition(sql)
            let since = try DatabaseChanges.since(token, current: current)
            // Not visible in the token's snapshot: begun after it, or running then.
            let end = since?.end ?? 0
            let running = since?.running ?? []
            switch scope {
            case .private:
                let changed = try await sql.column(
                    """
                    SELECT name FROM zones WHERE owner = \(actor) AND (changed_txn >= \(end) OR changed_txn = ANY(\(running)))
                    ORDER BY name COLLATE "C"
                    """, as: String.self)
                let deleted = try await sql.column(
                    """
                    SELECT DISTINCT name FROM zone_tombstones WHERE owner = \(actor) AND (txn >= \(end) OR txn = ANY(\(running)))
                      AND name NOT IN (SELECT name FROM zones WHERE owner = \(actor))
                    """, as: String.self)
                return DatabaseChanges(
                    changedZones: changed.map { ZoneID(owner: actor, name: $0) },
                    deletedZones: deleted.map { ZoneID(owner: actor, name: $0) }, changeToken: current.encoded, moreComing: false)
            case .shared:
                let visible = Set(try await PostgresRecords.sharedZoneIDs(sql, actor: actor))
                let rows = try await sql.rows(
                    """
                    SELECT s.owner, s.zone, bool_or(p.changed_txn >= \(end) OR p.changed_txn = ANY(\(running))),
                           bool_or(COALESCE(z.changed_txn >= \(end) OR z.changed_txn = ANY(\(running)), FALSE))
                    FROM participants p JOIN shares s ON s.id = p.share_id LEFT JOIN zones z ON z.owner = s.owner AND z.name = s.zone
                    WHERE p.account = \(actor) AND p.role != 'owner' GROUP BY s.owner, s.zone
                    """
                ).map { row in
                    let (owner, name, membership, changed) = try row.decode((String, String, Bool, Bool).self)
                    return (zone: ZoneID(owner: owner, name: name), membershipChanged: membership, zoneChanged: changed)
                }
                return DatabaseChanges.shared(rows, visible: visible, current: current)
            }
        }
    }

    /// The read's snapshot, in transaction IDs (`DatabaseChangeToken`): a change
    /// committed by a transaction it does not see is one the next read reports, whatever
    /// the order in which concurrent writers of different zones commit (the same
    /// snapshot functions delimit PgQ's batches).
    func databasePosition(_ sql: SQL) async throws -> DatabaseChangeToken {
        let known = clusterID.withLock { $0 }
        let row = try await sql.row(
            known == nil
                ? """
                SELECT pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint,
                       ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(s) AS x ORDER BY 1), (SELECT system_identifier::text FROM pg_control_system())
                FROM pg_current_snapshot() AS s
                """
                : """
                SELECT pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint,
                       ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(s) AS x ORDER BY 1), NULL::text
                FROM pg_current_snapshot() AS s
                """)
        guard let row else { throw NotesError(.internalError, "The database did not say where its transactions stand.") }
        let (xmin, xmax, running, read) = try row.decode((Int64, Int64, [Int64], String?).self)
        let cluster = known ?? read ?? ""
        if known == nil { clusterID.withLock { $0 = cluster } }
        return DatabaseChangeToken(database: cluster, seq: xmin, end: xmax, running: running)
    }

    public func versions(of recordName: String, in zone: ZoneID, actor: String, limit: Int, before: String?) async throws(NotesError) -> API.Versions {
        let beforeSeq = try RecordRules.versionsBefore(before, limit: limit)
        return try await read { sql in
            let access = try await PostgresRecords.access(sql, zone: zone, actor: actor)
            let record = try await PostgresRecords.fetch(sql, recordName, in: zone)
            guard record.map({ access.canRead(shareID: $0.shareID) }) ?? access.isOwner else {
                throw RecordRules.unknownRecord(recordName)
            }
            // This record's own history: not that of an earlier record deleted under the same
            // name (for a deleted record, the owner reads its last use's).
            let createdSeq =
                try await sql.value(
                    record != nil
                        ? "SELECT created_seq FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(recordName)"
                        : "SELECT created_seq FROM versions WHERE owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(recordName) ORDER BY seq DESC LIMIT 1",
                    as: Int64.self) ?? 0
            var page = VersionPage(record: record, beforeSeq: beforeSeq, limit: limit)
            let filter: PostgresQuery = """
                owner = \(zone.owner) AND zone = \(zone.name) AND record_name = \(recordName) AND created_seq = \(createdSeq) AND seq < \(beforeSeq ?? Int64.max)
                """
            // Sizes first, so that texts past the page's byte bound are never sent.
            let sizes = try await sql.column(filter.selecting(PostgresRecords.versionBodySize, from: "versions", limit: limit + 1, newestFirst: true), as: Int.self)
            let count = page.fitting(bodySizes: sizes)
            let rows = try await sql.rows(
                filter.selecting("seq, name, parent, \(PostgresRecords.body("versions")), size, modified_by, modified_at", from: "versions", limit: count, newestFirst: true))
            for row in rows {
                let (seq, name, parent, body, size, modifiedBy, modifiedAt) = try row.decode((Int64, String, String, Data?, Int, String, Double).self)
                page.append(
                    RecordVersion(
                        changeTag: RecordRules.changeTag(seq), name: name, parent: parent.isEmpty ? nil : parent,
                        body: body.map { String(decoding: $0, as: UTF8.self) }, size: size, modifiedBy: modifiedBy, modifiedAt: Date(stored: modifiedAt)))
            }
            if sizes.count > count { _ = page.fitsAnother() }
            return try page.finish(recordName)
        }
    }
}

extension PostgresQuery {
    /// `SELECT columns FROM table WHERE self ORDER BY seq LIMIT limit`, with this
    /// filter's values bound as they are.
    func selecting(_ columns: String, from table: String, limit: Int, newestFirst: Bool = false) -> PostgresQuery {
        var bindings = binds
        bindings.append(limit)
        let order = newestFirst ? "DESC" : ""
        return PostgresQuery(unsafeSQL: "SELECT \(columns) FROM \(table) WHERE \(sql) ORDER BY seq \(order) LIMIT $\(bindings.count)", binds: bindings)
    }
}
