package import Foundation

/// How long a deletion stays fetchable as a tombstone, the same for both stores.
///
/// A tombstone tells a client that had a record that it is gone; kept for ever, they
/// grew with every delete and cost nobody's quota. After `keptSeconds` they go, and each
/// zone remembers the last change number it lost (`pruned_seq`): a client whose copy is
/// older than that is told its token has expired and fetches the zone from scratch
/// (`ChangePage`), which drops what the server no longer has.
///
/// Tombstones carry a change number, not a time. So each retention pass marks the change
/// counter's value with the store's clock (`counter_marks`), and the tombstones that may
/// go are those at or before the newest mark taken `keptSeconds` ago or earlier.
package enum TombstoneRetention {
    /// 90 days: longer than a laptop stays offline, short enough that deletions of a busy
    /// zone do not pile up.
    package static let keptSeconds: Double = 90 * 86_400
    /// Tombstones deleted in one transaction: the writer is held for milliseconds.
    package static let rowsPerTransaction = 1_000

    /// The time before which marks count (`now` on the store's clock).
    package static func horizon(_ now: Date) -> Double { now.timeIntervalSince1970 - keptSeconds }
}
