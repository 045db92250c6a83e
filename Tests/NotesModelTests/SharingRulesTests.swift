import NotesModel
import Testing

/// Every role × permission × status × operation → allowed or `permissionFailure`.
///
/// The expected column is written out here by hand from SPEC section 3, not derived
/// from the implementation, so a change to either shows up as a failure.
@Suite struct SharingRulesTests {
    typealias Op = SharingRules.Operation

    /// What an accepted read-write participant may do (SPEC: modify, delete, create
    /// inside the share, never the root's place or existence, never the share).
    static let readWriteAllowed: Set<Op> = [.read, .readParticipants, .leave, .createRecord, .modifyRecord, .modifyRoot, .deleteRecord]
    static let readOnlyAllowed: Set<Op> = [.read, .readParticipants, .leave]

    static func expected(role: ParticipantRole, permission: ParticipantPermission, status: ParticipantStatus, operation: Op) -> Bool {
        if role == .owner { return operation != .leave }
        switch status {
        case .removed: return false
        case .pending: return operation == .leave
        case .accepted: return (permission == .readWrite ? readWriteAllowed : readOnlyAllowed).contains(operation)
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var role: ParticipantRole
        var permission: ParticipantPermission
        var status: ParticipantStatus
        var operation: Op
        var testDescription: String { "\(role) \(permission) \(status) \(operation)" }
    }

    static let cases: [Case] = ParticipantRole.allCases.flatMap { role in
        ParticipantPermission.allCases.flatMap { permission in
            ParticipantStatus.allCases.flatMap { status in
                Op.allCases.map { Case(role: role, permission: permission, status: status, operation: $0) }
            }
        }
    }

    @Test(arguments: cases)
    func decision(_ c: Case) {
        let standing = SharingRules.Standing(role: c.role, permission: c.permission, status: c.status)
        let expected = Self.expected(role: c.role, permission: c.permission, status: c.status, operation: c.operation)
        #expect(SharingRules.allows(c.operation, standing: standing) == expected)
        if expected {
            #expect(throws: Never.self) { try SharingRules.check(c.operation, standing: standing, what: "plan.md") }
        } else {
            let error = #expect(throws: NotesError.self) { try SharingRules.check(c.operation, standing: standing, what: "plan.md") }
            #expect(error?.code == .permissionFailure)
            #expect(error?.message.isEmpty == false)
        }
    }

    @Test func strangerMayDoNothing() {
        for operation in Op.allCases {
            #expect(!SharingRules.allows(operation, standing: nil))
        }
    }

    @Test func publicUsersFollowThePublicPermission() {
        let user = Participant(name: "eve", email: nil, role: .publicUser, permission: .readWrite, status: .accepted)
        #expect(SharingRules.effectivePermission(of: user, publicPermission: .none) == nil)
        #expect(SharingRules.effectivePermission(of: user, publicPermission: .readOnly) == .readOnly)
        #expect(SharingRules.effectivePermission(of: user, publicPermission: .readWrite) == .readWrite)
        let invited = Participant(name: "bob", email: nil, role: .privateUser, permission: .readOnly, status: .accepted)
        #expect(SharingRules.effectivePermission(of: invited, publicPermission: .readWrite) == .readOnly)
    }
}
