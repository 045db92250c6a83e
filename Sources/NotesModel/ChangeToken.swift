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

/// A database-scope token: where in the order of the database's changes the client
/// has seen everything.
///
/// On SQLite it is a change number (`d1.N`): one writer numbers every change. On
/// PostgreSQL, where each zone numbers its own, it is the snapshot the client's last
/// read saw, in PostgreSQL's terms (`d2.DB.XMIN.SPAN.RUNNING`): every transaction
/// before `XMIN` had ended, none from `XMIN + SPAN` on had begun, and those at the
/// offsets `RUNNING` from `XMIN` were still running. A change is new to the client when
/// its transaction was not visible in that snapshot. `DB` names the PostgreSQL cluster
/// whose transaction IDs these are (a database restored elsewhere counts them again).
public struct DatabaseChangeToken: Equatable, Sendable {
    /// The cluster the position belongs to; `nil` for a change number.
    public var database: String?
    /// The change number; in a snapshot, its `xmin`.
    public var seq: Int64
    /// In a snapshot: the first transaction ID not yet begun (`xmax`).
    public var end: Int64
    /// In a snapshot: the transactions still running, between `seq` and `end`.
    public var running: [Int64]

    /// Most transactions a token names as running (PostgreSQL's connection limit is far
    /// below it; a longer list is not one this server issued).
    public static let maxRunning = 10_000

    public init(seq: Int64) {
        self.init(database: nil, seq: seq, end: seq, running: [])
    }

    public init(database: String?, seq: Int64, end: Int64, running: [Int64]) {
        self.database = database
        self.seq = seq
        self.end = end
        self.running = running
    }

    public var encoded: String {
        guard let database else { return "d1.\(seq)" }
        return "d2.\(database).\(seq).\(end - seq)." + running.map { String($0 - seq) }.joined(separator: ",")
    }

    public init(parsing text: String) throws(NotesError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        switch (parts.count, parts.first) {
        case (2, "d1"):
            guard let seq = Int64(parts[1]), seq >= 0 else { throw Self.notIssued }
            self.init(seq: seq)
        case (5, "d2"):
            guard !parts[1].isEmpty, parts[1].utf8.count <= 40, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
                let seq = Int64(parts[2]), seq >= 0, let span = Int64(parts[3]), span >= 0, span <= Int64.max - seq,
                parts[4].utf8.count <= Self.maxRunning * 21
            else { throw Self.notIssued }
            let offsets = parts[4].isEmpty ? [] : parts[4].split(separator: ",", omittingEmptySubsequences: false)
            var running: [Int64] = []
            for offset in offsets {
                guard let value = Int64(offset), value >= 0, value < span, running.last.map({ seq + value > $0 }) ?? true else { throw Self.notIssued }
                running.append(seq + value)
            }
            self.init(database: String(parts[1]), seq: seq, end: seq + span, running: running)
        default:
            throw Self.notIssued
        }
    }

    static let notIssued = NotesError(.invalidArguments, "The change token is not one this server issued; fetch without a token to start over.")
}
