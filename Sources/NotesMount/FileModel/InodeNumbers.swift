import NotesFS
import NotesModel
import NotesReplica

/// Inode numbers derived from what a node is, so the same note has the same number on
/// every mount and after every remount (tools that remember inodes, like rsync or
/// backup programs, see one file).
enum InodeNumbers {
    static let root: Inode = 1
    static let privateRoot: Inode = 2
    static let sharedRoot: Inode = 3
    /// Numbers of nodes that exist only in this mount's memory (scratch files, a note's
    /// second incarnation within one session) have this bit set; derived ones never do.
    static let localBit: Inode = 1 << 62

    static func record(_ key: RecordKey) -> Inode {
        derived(["record", key.zone.owner, key.zone.name, key.recordName])
    }

    static func zoneFolder(_ zone: ZoneID) -> Inode {
        derived(["zone", zone.owner, zone.name])
    }

    static func ownerFolder(_ owner: String) -> Inode {
        derived(["owner", owner])
    }

    /// FNV-1a over the parts, kept below `localBit` and above the fixed numbers.
    private static func derived(_ parts: [String]) -> Inode {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in parts {
            for byte in part.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x100_0000_01b3
            }
            // A NUL between parts (its XOR is a no-op), so ("ab", "c") and ("a", "bc") differ.
            hash &*= 0x100_0000_01b3
        }
        let value = hash & (localBit - 1)
        return value < 16 ? value + 16 : value
    }
}
