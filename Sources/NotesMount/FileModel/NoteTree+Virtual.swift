import NotesFS
import NotesModel
import NotesReplica
import NotesSearch

/// What `VirtualFolders` asks of the tree: where a folder is, which notes it shows.
extension NoteTree {
    /// A real folder's zone and the record name its children have as parent (`nil` at a
    /// zone's root); `nil` for what is no folder of a zone.
    func folderPlace(_ inode: Inode) -> (zone: ZoneID, parent: String?)? {
        state.withLock { state in
            guard let node = state.nodes[inode], node.isDirectory, node.kind != .root, node.kind != .sharedRoot else { return nil }
            if case .ownerFolder = node.kind { return nil }
            return Self.container(state, inode)
        }
    }

    /// The zone whose root this folder is (`private/`, a notebook, a zone-wide share).
    func zoneRoot(_ inode: Inode) -> ZoneID? {
        state.withLock { state in
            switch state.nodes[inode]?.kind {
            case .privateRoot: ZoneID(owner: state.account, name: ZoneID.defaultZoneName)
            case .zoneFolder(let zone): zone
            default: nil
            }
        }
    }

    /// The notes a search from a folder's `.search/` looks among: `.some(nil)` at the
    /// mount's root (all of them); nil for what is no folder.
    func searchScope(_ inode: Inode) -> SearchFolder?? {
        state.withLock { state -> SearchFolder?? in
            guard let node = state.nodes[inode], node.isDirectory, node.attached else { return nil }
            switch node.kind {
            case .root: return .some(nil)
            case .privateRoot: return .owned
            case .sharedRoot: return .shared
            case .ownerFolder(let owner): return .owner(owner)
            case .zoneFolder(let zone): return .zone(zone)
            case .scratch: return nil
            case .record(let key):
                // The folder and everything below it, from the tree (no read of the replica).
                var names: [String] = []
                var folders = [inode]
                while let folder = folders.popLast(), names.count <= 1_000_000 {
                    guard let current = state.nodes[folder] else { continue }
                    if let key = current.recordKey { names.append(key.recordName) }
                    folders.append(contentsOf: current.children.inodes)
                }
                return .records(key.zone, names)
            }
        }
    }

    /// The notes (and files) a folder shows, by name.
    func notes(in inode: Inode) -> [(name: String, key: RecordKey)] {
        state.withLock { state in
            guard let folder = state.nodes[inode] else { return [] }
            return folder.children.compactMap { name, child in
                guard let node = state.nodes[child], !node.isDirectory, let key = node.recordKey else { return nil }
                return (name, key)
            }
        }
    }

    /// Whether a folder shows `name` (no lookup is counted).
    func shows(_ name: String, in inode: Inode) -> Bool {
        state.withLock { state in state.nodes[inode]?.children[name] != nil }
    }

    /// What the account may do in a folder.
    func mayWrite(in inode: Inode) -> Bool {
        state.withLock { state in Self.access(state, inode, account: account).mayWrite }
    }

    var owner: (uid: UInt32, gid: UInt32) { (uid, gid) }

    /// Counts a change of the zone on notesd that this mount made (an upload).
    func noteChanged(_ zone: ZoneID) {
        state.withLock { $0.zoneGenerations[zone, default: 0] &+= 1 }
    }

    /// How many changes to a zone on notesd the mount has seen (fetched or uploaded).
    func generation(of zone: ZoneID) -> UInt64 {
        state.withLock { $0.zoneGenerations[zone, default: 0] }
    }
}
