import Foundation
import NotesFS
import NotesModel
import NotesReplica

/// What a node in the mount stands for.
enum NodeKind: Equatable {
    /// The mount's root: holds `private/` and `shared/`.
    case root
    /// `private/`: the default zone's root records plus one folder per other zone.
    case privateRoot
    /// `shared/`: one folder per owner who shared something with this account.
    case sharedRoot
    /// `shared/<owner>/`.
    case ownerFolder(String)
    /// A zone shown as a folder: a notebook under `private/`, or a zone-wide share
    /// under `shared/<owner>/`.
    case zoneFolder(ZoneID)
    /// A record: note, folder or file.
    case record(RecordKey)
    /// A file that lives only in this mount's memory (editor swap files and backups).
    case scratch
}

/// One file or folder as the kernel sees it. Nodes live in `TreeState.nodes`, keyed by
/// inode; a node leaves the table when it is neither in a folder nor known to the
/// kernel (no lookups left, no open handles).
struct Node {
    let inode: Inode
    var parent: Inode
    var name: String
    var kind: NodeKind
    var isDirectory: Bool
    var recordType: RecordType?
    var shareID: String?
    /// The record name of the record's parent as the server knows it. Kept apart from
    /// `parent` because a shared hierarchy's root sits in `shared/<owner>/` while its
    /// parent, which the participant cannot see, stays what it was.
    var recordParent: String?
    var children: [String: Inode] = [:]
    var size: Int = 0
    /// mtime; every change of it is a change of the node, so ctime follows (POSIX:
    /// pjdfstest found truncate, write and rmdir leaving ctime as it was).
    var modified: Double {
        didSet { changed = max(changed, Date().timeIntervalSince1970) }
    }
    var changed: Double
    var accessed: Double
    /// The tree's `contents` hold writes to this file not yet saved to the replica.
    var contentDirty = false
    /// The change tag of the content the kernel last got, and whether the server's
    /// content has replaced it since: a save made from that older read must build on it,
    /// so the daemon refuses the save and the two edits are merged instead of the newer
    /// one being overwritten.
    var seenTag: String?
    var seenIsOutdated = false
    /// The version of the content held now (what `seenTag` was before a reader that is
    /// still open made it keep an older one).
    var loadedTag: String?
    /// A version the kernel's page cache may still serve: set when a newer one comes,
    /// until the kernel has been told to drop its pages (`keep_cache` keeps them across
    /// opens, and reads it serves never reach the mount).
    var kernelMayHold: String?
    /// Counts the server's changes to this node, so that an invalidation that finished
    /// clears `kernelMayHold` only if no newer change came meanwhile.
    var remoteGeneration: UInt64 = 0
    var openCount = 0
    /// References the kernel holds (lookups minus forgets).
    var lookups: UInt64 = 0
    /// In a folder of the tree (false once unlinked or removed by a remote change).
    var attached = true

    var recordKey: RecordKey? {
        if case .record(let key) = kind { return key }
        return nil
    }
}

/// What the account may do with a node.
enum Access: Equatable {
    /// The account's own notes: everything.
    case owner
    /// A read-write participant: change and create inside the share.
    case readWrite
    /// A read-only participant: nothing but reading.
    case readOnly
    /// Folders the mount makes up (`/`, `shared/`, `shared/<owner>/`): no new entries.
    case fixed

    var mayWrite: Bool { self == .owner || self == .readWrite }
}

extension Node {
    /// The change tag a save must present when the kernel read an older version than
    /// the one the replica holds now; `nil` when it read the latest.
    var staleBase: String? { seenIsOutdated ? seenTag : nil }

    /// Takes over what another node's reader saw (a file renamed over this note).
    mutating func inheritBase(_ base: String?) {
        seenTag = base
        seenIsOutdated = base != nil
    }
}
