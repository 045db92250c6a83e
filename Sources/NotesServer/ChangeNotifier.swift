import Metrics
public import NotesModel
import Synchronization

/// Fans change notices out to each account's open event streams.
///
/// `publish` is synchronous so the store can call it right after a commit, in commit
/// order; a slow subscriber only grows its own buffer (bounded: the oldest hints are
/// dropped, which is safe because a hint only says "fetch changes").
public final class ChangeNotifier: Sendable {
    private struct Subscribers {
        var nextID = 0
        var byAccount: [String: [Int: AsyncStream<Event>.Continuation]] = [:]
        /// The token each stream was opened with (`nil` key: peer credentials).
        var tokens: [Int: String] = [:]
        var closed = false
    }

    /// What a subscriber receives.
    public enum Event: Sendable {
        case change(ChangeNotice)
        case heartbeat
    }

    private let state = Mutex(Subscribers())
    /// Open event streams, for `GET /metrics`.
    private let openStreams = Meter(label: "notes_event_streams_open")

    public init() {}

    /// A stream of events for `account`; it ends when the caller stops iterating or
    /// the notifier closes (daemon shutdown).
    /// - Returns: nil when the account already holds `limit` streams.
    public func subscribe(account: String, tokenID: String? = nil, limit: Int = Int.max) -> AsyncStream<Event>? {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        var full = false
        let id: Int? = state.withLock { state in
            guard !state.closed else { return nil }
            guard (state.byAccount[account]?.count ?? 0) < limit else {
                full = true
                return nil
            }
            state.nextID += 1
            state.byAccount[account, default: [:]][state.nextID] = continuation
            if let tokenID { state.tokens[state.nextID] = tokenID }
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return full ? nil : stream
        }
        openStreams.increment()
        continuation.onTermination = { [weak self] _ in
            self?.openStreams.decrement()
            self?.state.withLock { state in
                state.byAccount[account]?[id] = nil
                state.tokens[id] = nil
                if state.byAccount[account]?.isEmpty == true { state.byAccount[account] = nil }
            }
        }
        return stream
    }

    public func publish(_ notices: [ChangeNotice]) {
        let targets = state.withLock { state in
            notices.flatMap { notice in (state.byAccount[notice.account] ?? [:]).values.map { ($0, notice) } }
        }
        for (continuation, notice) in targets {
            continuation.yield(.change(notice))
        }
    }

    /// Tells every open stream to fetch all it sees (a notice per scope with no zone):
    /// for when changes may have been missed, as after the connection that hears other
    /// instances' commits was lost.
    public func askEveryoneToFetch() {
        let targets = state.withLock { state in
            state.byAccount.flatMap { account, streams in streams.values.map { ($0, account) } }
        }
        for (continuation, account) in targets {
            continuation.yield(.change(ChangeNotice(account: account, scope: .private, zone: nil)))
            continuation.yield(.change(ChangeNotice(account: account, scope: .shared, zone: nil)))
        }
    }

    /// Ends the streams of an account (disabled) at once; its clients see the stream
    /// close and are refused when they ask again.
    public func endStreams(account: String) {
        let ended = state.withLock { state in Array((state.byAccount[account] ?? [:]).values) }
        for continuation in ended { continuation.finish() }
    }

    /// Ends the streams opened with a token (revoked).
    public func endStreams(tokenID: String) {
        let ended = state.withLock { state in
            state.tokens.filter { $0.value == tokenID }.keys.compactMap { id in
                state.byAccount.values.lazy.compactMap { $0[id] }.first
            }
        }
        for continuation in ended { continuation.finish() }
    }

    /// How many streams are open (for limits and tests).
    public func streamCount(account: String) -> Int {
        state.withLock { $0.byAccount[account]?.count ?? 0 }
    }

    /// Sends a heartbeat to every stream so dead connections are noticed.
    public func heartbeat() {
        let all = state.withLock { state in state.byAccount.values.flatMap(\.values) }
        for continuation in all { continuation.yield(.heartbeat) }
    }

    /// Ends every stream; later subscriptions end at once. Called on shutdown so that
    /// open event streams do not hold the server open.
    public func close() {
        let all = state.withLock { state in
            state.closed = true
            defer { state.byAccount = [:] }
            return state.byAccount.values.flatMap(\.values)
        }
        for continuation in all { continuation.finish() }
    }
}
