import NotesModel
import NotesFS

/// The rights policy of the mount, as pure functions of the tree's state: what an account
/// may do with a node follows from the zone's owner and the share that covers it (modes,
/// `EACCES` for read-only participants, share roots a participant may not move).
extension NoteTree {
    /// What the account may do with a node: its own zones are its own; in others' it
    /// has the permission of the share that covers the node.
    static func access(_ state: State, _ inode: Inode, account: String) -> Access {
        guard let node = state.nodes[inode] else { return .fixed }
        return access(state, node, account: account)
    }

    /// The same, for a node already found.
    static func access(_ state: State, _ node: Node, account: String) -> Access {
        switch node.kind {
        case .root, .sharedRoot, .ownerFolder:
            return .fixed
        case .privateRoot:
            return .owner
        case .scratch:
            return node.parent == 0 ? .owner : access(state, node.parent, account: account)
        case .zoneFolder(let zone):
            if zone.owner == account { return .owner }
            let share = state.shares.values.first { $0.zone == zone && $0.isZoneWide }
            return permission(share, account: account)
        case .record(let key):
            if key.zone.owner == account { return .owner }
            return permission(node.shareID.flatMap { state.shares[$0] }, account: account)
        }
    }

    static func permission(_ share: Share?, account: String) -> Access {
        guard let share, let participant = share.participant(named: account), participant.status == .accepted else { return .readOnly }
        return participant.permission == .readWrite ? .readWrite : .readOnly
    }

    /// A participant may not delete or move the root of a share it takes part in.
    static func isShareRootForParticipant(_ state: State, _ inode: Inode, account: String) -> Bool {
        guard let node = state.nodes[inode] else { return false }
        switch node.kind {
        case .record(let key):
            return key.zone.owner != account && state.shares.values.contains { $0.zone == key.zone && $0.rootRecordName == key.recordName }
        case .zoneFolder(let zone):
            return zone.owner != account
        default:
            return false
        }
    }
}
