/// The one error type that crosses module boundaries.
///
/// Codes are CloudKit's names (SPEC sections 2–3) so that a client can branch on them;
/// each edge (HTTP, FUSE, CLI) maps `Code` exactly once with an exhaustive `switch`,
/// so adding a code makes the compiler point at every mapping to update.
public struct NotesError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// The request is malformed or names something invalid (a bad name, bad JSON).
        case invalidArguments
        /// The caller presented no valid identity.
        case notAuthenticated
        /// The caller is known but may not do this (sharing rules, admin-only calls).
        case permissionFailure
        /// The record, share or account does not exist (or is not visible to the caller).
        case unknownItem
        /// The zone does not exist.
        case zoneNotFound
        /// A save carried a stale (or missing) change tag; the server's record is attached.
        case serverRecordChanged
        /// Another item of an atomic batch failed, so this one was not applied.
        case batchRequestFailed
        /// The change token can no longer be served: fetch again from scratch.
        case changeTokenExpired
        /// The record (or one of its descendants) already belongs to a share.
        case alreadyShared
        /// A name is already taken in that folder (or an account/zone name exists).
        case constraintViolation
        /// A folder still has children that the operation would orphan.
        case folderNotEmpty
        /// A save names a parent folder that does not exist (CloudKit's
        /// `referenceViolation`): it was deleted, or has not been saved yet.
        case referenceViolation
        /// A size or count limit was exceeded (body size, batch size, participants).
        case limitExceeded
        /// The zone owner's storage is full (CloudKit's `quotaExceeded`): delete notes
        /// or old versions, or ask the admin for more.
        case quotaExceeded
        /// Too many requests; retry later.
        case requestRateLimited
        /// The service cannot answer right now (storage fault, shutting down).
        case serviceUnavailable
        /// A fault inside the server; logged, never expected.
        case internalError
    }

    public var code: Code
    /// A sentence a person can act on.
    public var message: String
    /// For `serverRecordChanged`: the record as the server has it now.
    public var serverRecord: Record?
    /// For a failed batch: the result of each item (its own error or `batchRequestFailed`).
    public var itemErrors: [ItemError]
    /// For `requestRateLimited`: seconds until a retry can succeed (HTTP `Retry-After`).
    public var retryAfter: Int?

    public init(_ code: Code, _ message: String, serverRecord: Record? = nil, itemErrors: [ItemError] = [], retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.serverRecord = serverRecord
        self.itemErrors = itemErrors
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// Why one item of a batch was not applied.
    public struct ItemError: Sendable, Equatable, Codable {
        public var recordName: String
        public var code: Code
        public var message: String
        public var serverRecord: Record?

        public init(recordName: String, code: Code, message: String, serverRecord: Record? = nil) {
            self.recordName = recordName
            self.code = code
            self.message = message
            self.serverRecord = serverRecord
        }
    }
}
