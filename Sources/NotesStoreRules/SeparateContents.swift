public import NotesModel

/// Which contents of a modify a store writes apart, ahead of the modify's transaction,
/// so that the transaction itself only points at them.
///
/// One store writer serves every account in turn, so what one transaction holds it for
/// is what every other account's save may wait. Written inline, a batch of 400 notes of
/// 40 KB (16 MB, and as much again for the versions it keeps) held SQLite's writer for
/// 125 to 210 ms. Written apart, in transactions of at most `bytesPerTransaction`
/// (others' saves taking their turns between them), the batch's own transaction only
/// sets references, and a version of a large note costs a reference, not a copy. A
/// group's time is mostly its commit's flush, which grows with what else the disk is
/// writing: groups of 1 MiB took 3 ms on a quiet server but 27–49 ms once a few hundred
/// MB had been imported beside other accounts' saves and restores, and another account's
/// save waited for one of them (p99 22–57 ms); at 256 KiB, 7–22 ms. Contents that the modify then does not use (it failed) are deleted.
///
/// A content counts toward its owner's storage from the modify that takes it, which adds
/// `charge(_:apart:)` to the owner's usage in its own transaction; one deleted while still
/// staged was never counted. (Counted from its writing, each group's transaction took
/// the owner's usage row on PostgreSQL, and the modify, holding the change counter,
/// waited for the owner's other groups: every account's save waited with it.) What is
/// staged and not yet counted is bounded by the caller's bytes in flight.
public enum SeparateContents {
    /// Contents from this size are written apart: below it a note fits its table's page.
    public static let minimumBytes = 4 * 1024
    /// The most content one transaction of contents writes (one larger content alone).
    public static let bytesPerTransaction = 1 << 18

    /// The indices of `saves` whose content is written apart, grouped into transactions.
    public static func groups(_ saves: [RecordSave]) -> [[Int]] {
        var groups: [[Int]] = []
        var current: [Int] = []
        var bytes = 0
        for (index, save) in saves.enumerated() where save.contentSize >= minimumBytes {
            if !current.isEmpty && bytes + save.contentSize > bytesPerTransaction {
                groups.append(current)
                current = []
                bytes = 0
            }
            current.append(index)
            bytes += save.contentSize
        }
        if !current.isEmpty { groups.append(current) }
        return groups
    }

    /// The bytes a modify adds to its owner's usage when it takes its contents written
    /// apart (`apart`: record name → content id).
    public static func charge(_ saves: [RecordSave], apart: [String: Int64]) -> Int64 {
        saves.reduce(0) { $0 + (apart[$1.recordName] == nil ? 0 : Int64($1.contentSize)) }
    }

    /// What a version keeps of a record's content written apart (SQL on a row of
    /// `records`, the same in both dialects): a note's text. A version keeps no file's
    /// bytes, as it keeps none inline.
    public static let versionContentSQL = "CASE WHEN record_type = 'note' THEN content_id END"

    /// Whether the modify's own transaction, its large contents written apart, is short
    /// enough to run on the caller's thread when the writer is free (see the stores'
    /// `write(small:)`).
    public static func isSmall(_ saves: [RecordSave], deletes: Int) -> Bool {
        let inline = saves.reduce(0) { $0 + ($1.contentSize >= minimumBytes ? 0 : $1.contentSize) }
        return saves.count + deletes <= 16 && inline <= 64 * 1024
    }
}
