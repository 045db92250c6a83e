/// What `StoreTransfer` copies: every table of the store, its columns and how each
/// column's values cross from SQLite's types to PostgreSQL's. Tables come in the order
/// their foreign keys need.
///
/// A column that a later migration adds on one side and this list lacks stops the copy
/// before it starts (`StoreTransfer.checkColumns`), so nothing is silently left behind.
struct TransferTable: Sendable {
    enum Kind: Sendable {
        case text, integer, real, blob
        /// SQLite's 0/1, PostgreSQL's BOOLEAN.
        case boolean
        /// Note text: TEXT in SQLite (read as its bytes, NULs included), BYTEA in PostgreSQL.
        case textBytes
        /// SQLite's rowid, kept in a PostgreSQL identity column (`tokens.issued`) so that
        /// the order of issue survives.
        case rowid
    }

    struct Column: Sendable {
        let name: String
        let kind: Kind
    }

    let name: String
    let columns: [Column]
    /// What PostgreSQL's side of the comparison reads from, when not the table itself.
    let postgresSource: String

    init(_ name: String, _ columns: [(String, Kind)], postgresSource: String? = nil) {
        self.name = name
        self.columns = columns.map { Column(name: $0.0, kind: $0.1) }
        self.postgresSource = postgresSource ?? name
    }

    /// What SQLite selects for each column.
    var sqliteSelection: String {
        columns.map { column in
            switch column.kind {
            case .textBytes: "CAST(\(column.name) AS BLOB)"
            case .rowid: "rowid"
            default: column.name
            }
        }.joined(separator: ", ")
    }

    var columnList: String { columns.map(\.name).joined(separator: ", ") }

    /// Whether PostgreSQL must be told to take the given values for an identity column.
    var overridesIdentity: Bool { columns.contains { $0.kind == .rowid } }

    static let copied: [TransferTable] = [
        TransferTable("accounts", [("name", .text), ("email", .text), ("is_admin", .boolean), ("created_at", .real), ("disabled_at", .real)]),
        TransferTable(
            "tokens",
            [
                ("id", .text), ("account", .text), ("secret_hash", .blob), ("created_at", .real), ("expires_at", .real), ("label", .text),
                ("issued", .rowid),
            ]),
        // Links waiting to be used keep working after the move; used ones keep saying when.
        TransferTable(
            "sign_in_links",
            [
                ("id", .text), ("account", .text), ("secret_hash", .blob), ("created_by", .text), ("created_at", .real), ("expires_at", .real),
                ("used_at", .real),
            ]),
        TransferTable("zones", [("owner", .text), ("name", .text), ("epoch", .integer), ("changed_seq", .integer), ("pruned_seq", .integer)]),
        TransferTable("zone_tombstones", [("owner", .text), ("name", .text), ("seq", .integer)]),
        // (Staged contents first: a content counts toward usage once it is no longer staged,
        // which `StoreTransfer.copy` charges with each group of contents it copies.)
        TransferTable("staged_contents", [("content_id", .integer), ("staged_at", .real)]),
        TransferTable("contents", [("id", .integer), ("owner", .text), ("body", .blob), ("bytes", .blob), ("size", .integer)]),
        TransferTable(
            "records",
            [
                ("owner", .text), ("zone", .text), ("record_name", .text), ("record_type", .text), ("name", .text), ("parent", .text),
                ("body", .textBytes), ("bytes", .blob), ("created_at", .real), ("modified_at", .real), ("modified_by", .text),
                ("seq", .integer), ("created_seq", .integer), ("share_id", .text), ("content_id", .integer), ("restore_id", .text),
            ]),
        TransferTable("restores", [("id", .text), ("owner", .text), ("zone", .text), ("since_seq", .integer), ("started_at", .real)]),
        TransferTable(
            "tombstones",
            [
                ("owner", .text), ("zone", .text), ("record_name", .text), ("seq", .integer), ("share_id", .text), ("kind", .text),
            ]),
        TransferTable(
            "versions",
            [
                ("owner", .text), ("zone", .text), ("record_name", .text), ("seq", .integer), ("created_seq", .integer), ("name", .text),
                ("parent", .text), ("body", .textBytes), ("size", .integer), ("modified_by", .text), ("modified_at", .real),
                ("content_id", .integer),
            ]),
        TransferTable(
            "shares",
            [
                ("id", .text), ("owner", .text), ("zone", .text), ("root_record", .text), ("title", .text), ("public_permission", .text),
                ("url_token", .text), ("created_at", .real), ("stopped", .boolean), ("public_expires_at", .real),
                ("password_salt", .blob), ("password_hash", .blob), ("public_views", .integer),
            ]),
        TransferTable(
            "participants",
            [
                ("share_id", .text), ("position", .integer), ("account", .text), ("email", .text), ("role", .text),
                ("permission", .text), ("status", .text), ("changed_seq", .integer),
            ]),
        TransferTable("password_attempts", [("key", .text), ("window_start", .real), ("failures", .integer)]),
        TransferTable(
            "trash",
            [
                ("owner", .text), ("zone", .text), ("record_name", .text), ("created_seq", .integer), ("version_seq", .integer),
                ("deleted_seq", .integer), ("record_type", .text), ("name", .text), ("parent", .text), ("share_id", .text),
                ("size", .integer), ("deleted_by", .text), ("deleted_at", .real),
            ]),
    ]

    /// Compared after the copy but not copied: PostgreSQL's triggers fill it from the
    /// rows above, and it must come out equal (PostgreSQL keeps it per zone: compared as
    /// each owner's sum). `counters` is set once, at the end.
    static let checkedOnly: [TransferTable] = [
        TransferTable("usage", [("owner", .text), ("bytes", .integer)], postgresSource: "(SELECT owner, SUM(bytes) AS bytes FROM usage GROUP BY owner) AS usage"),
        TransferTable("counters", [("name", .text), ("value", .integer)]),
    ]

    /// SQLite tables that PostgreSQL has no use for: the marks that time SQLite's
    /// tombstones (PostgreSQL's tombstones carry their own time; those moved count
    /// from the move), and the notes waiting for SQLite's search index (PostgreSQL
    /// indexes every note it is given).
    static let leftBehind: Set<String> = ["counter_marks", "search_pending"]
}

/// One value on its way between the databases, in a form both sides compare alike.
enum TransferValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bytes([UInt8])

    /// Adds the value to a row's digest: the tag keeps `"1"` and `1` apart.
    func feed(_ hasher: inout RowDigest) {
        switch self {
        case .null: hasher.add([0])
        case .integer(let value):
            hasher.add([1])
            hasher.add(withUnsafeBytes(of: value.littleEndian, Array.init))
        case .real(let value):
            hasher.add([2])
            hasher.add(withUnsafeBytes(of: value.bitPattern.littleEndian, Array.init))
        case .text(let value):
            hasher.add([3])
            hasher.addCounted(Array(value.utf8))
        case .bytes(let value):
            hasher.add([4])
            hasher.addCounted(value)
        }
    }

    var byteCount: Int {
        switch self {
        case .text(let value): value.utf8.count
        case .bytes(let value): value.count
        default: 8
        }
    }
}
