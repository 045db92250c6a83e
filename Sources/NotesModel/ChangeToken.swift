/// The opaque change tokens handed to clients, and the checks on tokens they hand back.
///
/// A zone token names the zone's incarnation (`epoch`, so a deleted and recreated zone
/// expires old tokens), the last change sequence the client has seen, and, in the
/// shared scope, the caller's membership version (accepting another share in the same
/// zone makes older records visible, which only a full refetch can deliver).
public struct ZoneChangeToken: Equatable, Sendable {
    public var epoch: Int64
    public var seq: Int64
    public var membership: Int64

    public init(epoch: Int64, seq: Int64, membership: Int64) {
        self.epoch = epoch
        self.seq = seq
        self.membership = membership
    }

    public var encoded: String { "z1.\(epoch).\(seq).\(membership)" }

    /// Parses a token from a client; anything malformed is `invalidArguments`.
    public init(parsing text: String) throws(NotesError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "z1",
            let epoch = Int64(parts[1]), let seq = Int64(parts[2]), let membership = Int64(parts[3]),
            epoch >= 0, seq >= 0, membership >= 0
        else {
            throw NotesError(.invalidArguments, "The change token is not one this server issued; fetch without a token to start over.")
        }
        self.init(epoch: epoch, seq: seq, membership: membership)
    }
}

/// A database-scope token: the last change sequence the client has seen.
public struct DatabaseChangeToken: Equatable, Sendable {
    public var seq: Int64

    public init(seq: Int64) { self.seq = seq }

    public var encoded: String { "d1.\(seq)" }

    public init(parsing text: String) throws(NotesError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "d1", let seq = Int64(parts[1]), seq >= 0 else {
            throw NotesError(.invalidArguments, "The change token is not one this server issued; fetch without a token to start over.")
        }
        self.init(seq: seq)
    }
}
