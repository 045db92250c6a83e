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
///
/// A mount holds one node per note, so its size is the mount's memory: the fields are
/// laid out so that the small ones share what the large ones leave over (Swift keeps
/// the declared order), and those that stay empty for almost every note (the share,
/// a change on its way to the kernel) live in a box made only when one is set (200
/// bytes a node instead of 256; `NodeTableTests` holds the size).
struct Node {
    let inode: Inode
    var parent: Inode
    var name: String
    var kind: NodeKind
    var isDirectory: Bool
    var recordType: RecordType?
    /// The tree's `contents` hold writes to this file not yet saved to the replica.
    var contentDirty = false
    /// Whether the server's content has replaced `seenTag` since the kernel got it.
    var seenIsOutdated = false
    /// In a folder of the tree (false once unlinked or removed by a remote change).
    var attached = true
    /// The record name of the record's parent as the server knows it. Kept apart from
    /// `parent` because a shared hierarchy's root sits in `shared/<owner>/` while its
    /// parent, which the participant cannot see, stays what it was.
    var recordParent: String?
    /// (Its count of subfolders is 4 bytes: `openCount` takes the 4 after it.)
    var children = FolderEntries()
    var openCount: Int32 = 0
    var size: Int = 0
    /// mtime; every change of it is a change of the node, so ctime follows (POSIX:
    /// pjdfstest found truncate, write and rmdir leaving ctime as it was).
    var modified: Double {
        didSet { changed = max(changed, Date().timeIntervalSince1970) }
    }
    var changed: Double
    var accessed: Double
    /// The change tag of the content the kernel last got: a save made from that older
    /// read must build on it, so the daemon refuses the save and the two edits are
    /// merged instead of the newer one being overwritten.
    var seenTag: String?
    /// The version of the content held now (what `seenTag` was before a reader that is
    /// still open made it keep an older one).
    var loadedTag: String?
    /// References the kernel holds (lookups minus forgets).
    var lookups: UInt64 = 0
    private var seldom: Box<Seldom>?

    init(
        inode: Inode, parent: Inode, name: String, kind: NodeKind, isDirectory: Bool, recordType: RecordType? = nil, shareID: String? = nil,
        recordParent: String? = nil, size: Int = 0, modified: Double, changed: Double, accessed: Double, attached: Bool = true
    ) {
        self.inode = inode
        self.parent = parent
        self.name = name
        self.kind = kind
        self.isDirectory = isDirectory
        self.recordType = recordType
        self.attached = attached
        self.recordParent = recordParent
        self.size = size
        self.modified = modified
        self.changed = changed
        self.accessed = accessed
        self.shareID = shareID
    }

    var recordKey: RecordKey? {
        if case .record(let key) = kind { return key }
        return nil
    }

    /// The share the record belongs to, if it is shared.
    var shareID: String? {
        get { seldom?.value.shareID }
        set { updateSeldom { $0.shareID = newValue } }
    }

    /// A version the kernel's page cache may still serve: set when a newer one comes,
    /// until the kernel has been told to drop its pages (`keep_cache` keeps them across
    /// opens, and reads it serves never reach the mount).
    var kernelMayHold: String? {
        get { seldom?.value.kernelMayHold }
        set { updateSeldom { $0.kernelMayHold = newValue } }
    }

    /// Counts the server's changes to this node, so that an invalidation that finished
    /// clears `kernelMayHold` only if no newer change came meanwhile.
    var remoteGeneration: UInt64 {
        get { seldom?.value.remoteGeneration ?? 0 }
        set { updateSeldom { $0.remoteGeneration = newValue } }
    }

    private mutating func updateSeldom(_ change: (inout Seldom) -> Void) {
        var value = seldom?.value ?? Seldom()
        change(&value)
        seldom = value.isEmpty ? nil : Box(value)
    }

    /// The fields almost every node leaves empty.
    private struct Seldom {
        var shareID: String?
        var kernelMayHold: String?
        var remoteGeneration: UInt64 = 0
        var isEmpty: Bool { shareID == nil && kernelMayHold == nil && remoteGeneration == 0 }
    }
}

/// A value kept behind one reference, so that a struct holding it stays small while it
/// is empty. Never changed in place: a new box replaces it, so copies stay apart.
private final class Box<Value>: Sendable where Value: Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
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
