public import Foundation
public import NotesModel
public import PostgresNIO
import NotesStoreRules

/// The statements every save runs, prepared once per connection: PostgreSQL then parses
/// and plans each once, not on every call. Planning the access read took longer than
/// running it (0.95 of its 1.1 ms in the statement log), and a save holds the change
/// counter while it runs.
///
/// They are public so that `notes-bench` can send the same statements straight through
/// postgres-nio, the baseline that notesd's save is measured against.
public protocol PreparedRows: PostgresPreparedStatement where Row == PostgresRow {}

extension PreparedRows {
    public func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// Takes a zone's change counter for the transaction (see `PostgresStore`): its row
/// `FOR UPDATE`, after a shared hold on the lock that `Numbering.everyZone` takes
/// whole (the function in `FROM` runs before the row lock is waited for: a zone writer
/// never waits for a row while holding out an every-zone writer that waits for it).
/// Answers the zone's owner, name and last change number; no row when there is no such
/// zone.
public struct LockZone: PreparedRows {
    /// The advisory lock's key: "notes" in ASCII.
    public static let everyZoneKey: Int64 = 0x6e_6f_74_65_73

    public static let sql = """
        SELECT z.owner, z.name, z.last_seq FROM pg_advisory_xact_lock_shared(\(everyZoneKey)) AS held, zones z
        WHERE z.owner = $1 AND z.name = $2 FOR UPDATE OF z
        """
    public static let bindingDataTypes: [PostgresDataType] = [.text, .text]
    let zone: ZoneID

    public init(_ zone: ZoneID) { self.zone = zone }

    public func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(zone.owner)
        bindings.append(zone.name)
        return bindings
    }

    /// The same for the zone of a share, by its ID or its link's token (an active share).
    static func ofShare(id: String) -> PostgresQuery {
        """
        SELECT z.owner, z.name, z.last_seq FROM pg_advisory_xact_lock_shared(\(everyZoneKey)) AS held, zones z JOIN shares s ON s.owner = z.owner AND s.zone = z.name
        WHERE s.id = \(id) FOR UPDATE OF z
        """
    }

    static func ofLink(urlToken: String) -> PostgresQuery {
        """
        SELECT z.owner, z.name, z.last_seq FROM pg_advisory_xact_lock_shared(\(everyZoneKey)) AS held, zones z JOIN shares s ON s.owner = z.owner AND s.zone = z.name
        WHERE s.url_token = \(urlToken) AND NOT s.stopped FOR UPDATE OF z
        """
    }
}

/// What a modify reads before it writes, in one statement: the zone's epoch, its active
/// shares and the caller's part in them (JSON), the bytes its owner's zones hold, the
/// accounts to tell of a change, and the metadata of the records named (JSON).
///
/// Each record named is looked up on its own (`LATERAL … LIMIT 1` keeps the planner
/// from turning the lookups into one join), by primary key whatever the statistics
/// say: with `record_name = ANY(…)` or a join, a plan made while the table was small
/// scanned the whole zone (24 ms a call at 44,000 records).
public struct ReadForModify: PreparedRows {
    public static let sql = """
        SELECT z.epoch,
            COALESCE((SELECT json_agg(json_build_object('id', s.id, 'root', s.root_record))
                      FROM shares s WHERE s.owner = z.owner AND s.zone = z.name AND NOT s.stopped), '[]')::text,
            COALESCE((SELECT json_agg(json_build_object('id', s.id, 'public', s.public_permission, 'role', p.role,
                                                        'permission', p.permission, 'status', p.status, 'seq', p.changed_seq))
                      FROM participants p JOIN shares s ON s.id = p.share_id
                      WHERE $1 AND s.owner = z.owner AND s.zone = z.name AND p.account = $2), '[]')::text,
            COALESCE((SELECT SUM(bytes) FROM usage WHERE owner = z.owner), 0)::bigint,
            ARRAY(SELECT DISTINCT p.account FROM participants p JOIN shares s ON s.id = p.share_id
                  WHERE s.owner = z.owner AND s.zone = z.name AND NOT s.stopped AND p.status = 'accepted'
                    AND p.account IS NOT NULL AND p.role != 'owner'),
            COALESCE((SELECT json_agg(json_build_object('r', r.record_name, 't', r.record_type, 'n', r.name, 'p', r.parent, 'c', r.created_at,
                                                        'm', r.modified_at, 'b', r.modified_by, 's', r.seq, 'h', r.share_id))
                      FROM unnest($3::text[]) AS named(record_name),
                           LATERAL (SELECT * FROM records WHERE owner = z.owner AND zone = z.name AND record_name = named.record_name LIMIT 1) r), '[]')::text
        FROM zones z WHERE z.owner = $4 AND z.name = $5
        """
    public static let bindingDataTypes: [PostgresDataType] = [.bool, .text, .textArray, .text, .text]
    let owner: String, zone: String, actor: String, records: [String]

    public init(owner: String, zone: String, actor: String, records: [String]) {
        self.owner = owner
        self.zone = zone
        self.actor = actor
        self.records = records
    }

    public func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(owner != actor)
        bindings.append(actor)
        bindings.append(records)
        bindings.append(owner)
        bindings.append(zone)
        return bindings
    }
}

/// A new record's row.
public struct InsertRecord: PreparedRows {
    public static let sql = """
        INSERT INTO records (owner, zone, record_name, record_type, name, parent, body, bytes, created_at, modified_at, modified_by, seq, share_id, created_seq, content_id)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $11, $13)
        """
    public static let bindingDataTypes: [PostgresDataType] = [.text, .text, .text, .text, .text, .text, .bytea, .bytea, .float8, .text, .int8, .text, .int8]
    let owner: String, zone: String, recordName: String, recordType: String, name: String, parent: String
    let body: Data?, bytes: Data?, now: Double, actor: String, seq: Int64, shareID: String?
    let contentID: Int64?

    public init(
        owner: String, zone: String, recordName: String, recordType: String, name: String, parent: String,
        body: Data?, bytes: Data?, now: Double, actor: String, seq: Int64, shareID: String?, contentID: Int64? = nil
    ) {
        self.contentID = contentID
        self.owner = owner
        self.zone = zone
        self.recordName = recordName
        self.recordType = recordType
        self.name = name
        self.parent = parent
        self.body = body
        self.bytes = bytes
        self.now = now
        self.actor = actor
        self.seq = seq
        self.shareID = shareID
    }

    public func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 13)
        bindings.append(owner)
        bindings.append(zone)
        bindings.append(recordName)
        bindings.append(recordType)
        bindings.append(name)
        bindings.append(parent)
        try bindings.append(body)
        try bindings.append(bytes)
        bindings.append(now)
        bindings.append(actor)
        bindings.append(seq)
        bindings.append(shareID)
        bindings.append(contentID)
        return bindings
    }
}

/// The last statement of a modify: the zone's counter written back and its change
/// marked, and the bytes the zone's owner holds after the write (for the quota check).
/// The other instances hear of it after the commit (`PostgresChangeAnnouncer`).
public struct FinishModify: PreparedRows {
    public static let sql = """
        WITH zone AS (UPDATE zones SET last_seq = $1, changed_seq = $1, changed_txn = pg_current_xact_id()::text::bigint
                      WHERE owner = $2 AND name = $3 RETURNING 1)
        SELECT COALESCE((SELECT SUM(bytes) FROM usage WHERE owner = $2), 0)::bigint, (SELECT count(*) FROM zone)
        """
    public static let bindingDataTypes: [PostgresDataType] = [.int8, .text, .text]
    let seq: Int64, owner: String, zone: String

    public init(seq: Int64, owner: String, zone: String) {
        self.seq = seq
        self.owner = owner
        self.zone = zone
    }

    public func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(seq)
        bindings.append(owner)
        bindings.append(zone)
        return bindings
    }
}

/// Deletes records in one statement: the last state of each kept as a version, a trash
/// entry saying who deleted it and when, the row gone, and a tombstone (at its own change
/// number) for those who sync.
struct DeleteRecords: PreparedRows {
    static let sql = """
        WITH named AS (SELECT * FROM unnest($3::text[], $4::bigint[]) AS n(record_name, deleted_seq)),
             gone AS (DELETE FROM records r USING named n WHERE r.owner = $1 AND r.zone = $2 AND r.record_name = n.record_name
                      RETURNING r.*, n.deleted_seq),
             kept AS (INSERT INTO versions (owner, zone, record_name, seq, name, parent, body, content_id, size, modified_by, modified_at, created_seq)
                      SELECT owner, zone, record_name, seq, name, parent, body, \(SeparateContents.versionContentSQL), \(PostgresRecords.size("gone")), modified_by, modified_at, created_seq FROM gone),
             trashed AS (INSERT INTO trash (owner, zone, record_name, created_seq, version_seq, deleted_seq, record_type, name, parent, share_id, size, deleted_by, deleted_at)
                         SELECT owner, zone, record_name, created_seq, seq, deleted_seq, record_type, name, parent, share_id, \(PostgresRecords.size("gone")), $5, $6 FROM gone
                         ON CONFLICT (owner, zone, record_name) DO UPDATE SET
                             created_seq = EXCLUDED.created_seq, version_seq = EXCLUDED.version_seq, deleted_seq = EXCLUDED.deleted_seq,
                             record_type = EXCLUDED.record_type, name = EXCLUDED.name, parent = EXCLUDED.parent, share_id = EXCLUDED.share_id,
                             size = EXCLUDED.size, deleted_by = EXCLUDED.deleted_by, deleted_at = EXCLUDED.deleted_at)
        INSERT INTO tombstones (owner, zone, record_name, seq, share_id, kind, deleted_at) SELECT owner, zone, record_name, deleted_seq, share_id, 'deleted', $6 FROM gone
        """
    static let bindingDataTypes: [PostgresDataType] = [.text, .text, .textArray, .int8Array, .text, .float8]
    let owner: String, zone: String, recordNames: [String], seqs: [Int64], actor: String, now: Double

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(owner)
        bindings.append(zone)
        bindings.append(recordNames)
        bindings.append(seqs)
        bindings.append(actor)
        bindings.append(now)
        return bindings
    }
}
