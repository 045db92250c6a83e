import Foundation

/// A restore written in several turns that notesd stopped in the middle of: the
/// records it had brought back so far (still out of sight), to be taken back.
public struct UnfinishedRestore: Sendable {
    public var id: String
    public var zone: ZoneID
    public var records: [(recordName: String, parent: String?)]

    public init(id: String, zone: ZoneID, records: [(recordName: String, parent: String?)]) {
        self.id = id
        self.zone = zone
        self.records = records
    }
}

/// How a large restore from the trash is cut into turns, the same for every backend.
///
/// A folder of 10,000 notes restored in one transaction would hold the writer for
/// tens of milliseconds (everyone's saves wait) and past `Limits.maxBatchItems`. It
/// comes back in turns instead, each a modify of its own, inside a restore that hides
/// them: change pages of the zone stop before the restore's first change
/// (`ChangePage.heldAt`), lookups and public pages skip its records, and finishing it
/// is one small write. Records already restored leave the trash listing at once, since
/// a trashed record that lives again is not listed.
public enum RestoreRules {
    /// Records brought back per turn: a turn of 100 one-kilobyte notes holds the SQLite
    /// writer about 2 ms on a release build.
    public static let recordsPerTurn = 100

    /// The subtree (parents first) cut into turns: every record's parent comes back in
    /// its turn or an earlier one.
    public static func turns(_ subtree: [TrashedContent]) -> [[TrashedContent]] {
        stride(from: 0, to: subtree.count, by: recordsPerTurn).map { Array(subtree[$0..<min($0 + recordsPerTurn, subtree.count)]) }
    }

    /// The record names of a partly done restore cut into turns of deletes, deepest
    /// first: a folder goes in the same turn as its last children or after them.
    public static func undoTurns(_ records: [(recordName: String, parent: String?)]) -> [[String]] {
        let parents = Dictionary(records.map { ($0.recordName, $0.parent) }, uniquingKeysWith: { first, _ in first })
        var depths: [String: Int] = [:]
        func depth(_ name: String) -> Int {
            if let known = depths[name] { return known }
            // Iterative walk up within the restore (a parent outside it is depth 0);
            // `seen` guards against a cycle in damaged data.
            var chain: [String] = []
            var seen: Set<String> = []
            var cursor: String? = name
            while let current = cursor, depths[current] == nil, seen.insert(current).inserted, parents[current] != nil {
                chain.append(current)
                cursor = parents[current] ?? nil
            }
            var base = cursor.flatMap { depths[$0] } ?? -1
            for element in chain.reversed() {
                base += 1
                depths[element] = base
            }
            return depths[name] ?? 0
        }
        let ordered = records.map(\.recordName).sorted { (depth($0), $0) > (depth($1), $1) }
        return stride(from: 0, to: ordered.count, by: recordsPerTurn).map { Array(ordered[$0..<min($0 + recordsPerTurn, ordered.count)]) }
    }

    /// A restore begun this long ago and not finished was abandoned by an instance that
    /// stopped: another instance (on PostgreSQL) takes it back. Turns take milliseconds;
    /// 10,000 records come back in seconds.
    public static let abandonedAfterSeconds: Double = 600

    /// A new restore's id.
    public static func newID() -> String { "restore-" + UUID().uuidString.lowercased() }
}
