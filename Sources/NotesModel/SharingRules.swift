/// The CloudKit sharing rules as one pure decision: may this caller do this?
///
/// Stores call `check` inside the transaction that performs the operation, with the
/// caller's standing read in that same transaction, so the decision and the write can
/// never disagree. The mount may ask too, for a fast error, but the daemon always asks.
public enum SharingRules {
    /// Everything a caller can try on a share's records or on the share itself.
    public enum Operation: String, Sendable, CaseIterable {
        /// Fetch records, changes, history.
        case read
        /// Create a record whose parent is inside the share.
        case createRecord
        /// Change a record's name, content or parent (within the share).
        case modifyRecord
        /// Change the share root's name or content.
        case modifyRoot
        /// Move the share root to another parent.
        case moveRoot
        /// Delete a record inside the share.
        case deleteRecord
        /// Delete the share root (which stops the share).
        case deleteRoot
        /// See who takes part.
        case readParticipants
        /// Invite, remove, change permissions, title, public permission or URL.
        case changeShare
        /// Stop sharing for everyone.
        case stopShare
        /// Leave the share (a participant deleting it from its shared database).
        case leave
    }

    /// A caller's standing in one share.
    public struct Standing: Sendable, Equatable {
        public var role: ParticipantRole
        public var permission: ParticipantPermission
        public var status: ParticipantStatus

        public init(role: ParticipantRole, permission: ParticipantPermission, status: ParticipantStatus) {
            self.role = role
            self.permission = permission
            self.status = status
        }

        public static let owner = Standing(role: .owner, permission: .readWrite, status: .accepted)
    }

    /// The permission a participant really has: a public user's follows the share's
    /// public permission, so turning the link off (`none`) shuts public users out.
    public static func effectivePermission(of participant: Participant, publicPermission: PublicPermission) -> ParticipantPermission? {
        switch participant.role {
        case .owner:
            return .readWrite
        case .privateUser:
            return participant.permission
        case .publicUser:
            switch publicPermission {
            case .none: return nil
            case .readOnly: return .readOnly
            case .readWrite: return participant.permission == .readWrite ? .readWrite : .readOnly
            }
        }
    }

    /// Whether `standing` allows `operation`.
    public static func allows(_ operation: Operation, standing: Standing?) -> Bool {
        guard let standing else { return false }
        if standing.role == .owner {
            return operation != .leave
        }
        switch standing.status {
        case .removed:
            return false
        case .pending:
            // An invitee may decline (leave) but sees nothing before accepting.
            return operation == .leave
        case .accepted:
            break
        }
        switch operation {
        case .read, .readParticipants, .leave:
            return true
        case .createRecord, .modifyRecord, .modifyRoot, .deleteRecord:
            return standing.permission == .readWrite
        case .moveRoot, .deleteRoot, .changeShare, .stopShare:
            return false
        }
    }

    /// Throws `permissionFailure` with a sentence that says why, unless allowed.
    public static func check(_ operation: Operation, standing: Standing?, what: String) throws(NotesError) {
        guard !allows(operation, standing: standing) else { return }
        throw NotesError(.permissionFailure, reasonText(operation, standing: standing, what: what))
    }

    public static func reasonText(_ operation: Operation, standing: Standing?, what: String) -> String {
        guard let standing else {
            return "You have no access to \(what); ask its owner to share it with you."
        }
        switch standing.status {
        case .removed:
            return "You are no longer a participant of the share that holds \(what)."
        case .pending:
            return "You have not accepted the share that holds \(what) yet; run `notes accept URL` first."
        case .accepted:
            break
        }
        switch operation {
        case .moveRoot, .deleteRoot:
            return "Only the owner may move or delete \(what), the root of the share."
        case .changeShare, .stopShare:
            return "Only the owner may change or stop the share of \(what)."
        case .leave:
            return "The owner cannot leave a share; stop sharing instead (`notes unshare`)."
        default:
            return "You have read-only access to \(what); ask the owner for read-write access."
        }
    }
}
