import Foundation
public import Logging
public import NotesModel
import PostgresNIO
import Synchronization

/// One notesd's ear on the database: a connection of its own (outside the pool, named
/// `notesd-listen/INSTANCE` in `pg_stat_activity`) that `LISTEN`s on the change feed's channel and
/// hands what other instances committed to `heard`. Its own commits are skipped: the
/// instance already told its subscribers of them after each commit (`onChange`), which
/// keeps them flowing when this connection is down and costs no round trip.
///
/// PostgreSQL delivers nothing sent while a session was not listening, so whenever the
/// `LISTEN` is (re)established `listening` is called, and notesd then tells every
/// subscriber to fetch changes: whatever was committed elsewhere before that moment is
/// caught by the fetch, and everything after it is heard. A connection that fails, or
/// that does not answer a ping within `pingTimeout`, is closed and opened again after a
/// pause that doubles from 0.1 s up to `maximumPause` (with jitter, so that instances
/// cut off together do not come back in step).
public final class PostgresChangeListener: Sendable {
    /// The `application_name` of the listening connection (PostgreSQL keeps 63 bytes).
    public var applicationName: String { String(("notesd-listen/" + feed.instance).utf8.prefix(63)) ?? "notesd-listen" }

    let location: PostgresLocation
    let feed: PostgresChangeFeed
    /// `feed.ownPrefix`, made once.
    let ownPrefix: String
    let logger: Logger
    let heard: @Sendable ([ChangeNotice]) -> Void
    let ended: @Sendable ([PostgresChangeFeed.Ending]) -> Void
    let listening: @Sendable (_ again: Bool) -> Void
    let reachable: @Sendable (Bool) -> Void
    let pingInterval: Duration
    let pingTimeout: Duration
    let maximumPause: Duration
    private let state = Mutex(Counters())

    private struct Counters {
        var listening = false
        var connections = 0
        var heard = 0
    }

    /// - Parameters:
    ///   - heard: notices committed by other instances, in commit order.
    ///   - ended: streams another instance ended (a token revoked, an account disabled or
    ///     deleted there), for this instance to end too.
    ///   - listening: called each time the `LISTEN` is in place (`again`: not the first time).
    public init(
        location: PostgresLocation, feed: PostgresChangeFeed, logger: Logger = Logger(label: "notes.postgres.listen"),
        pingInterval: Duration = .seconds(15), pingTimeout: Duration = .seconds(10), maximumPause: Duration = .seconds(5),
        heard: @escaping @Sendable ([ChangeNotice]) -> Void, ended: @escaping @Sendable ([PostgresChangeFeed.Ending]) -> Void = { _ in },
        listening: @escaping @Sendable (_ again: Bool) -> Void, reachable: @escaping @Sendable (Bool) -> Void = { _ in }
    ) {
        self.ended = ended
        self.reachable = reachable
        self.location = location
        self.feed = feed
        self.ownPrefix = feed.ownPrefix
        self.logger = logger
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.maximumPause = maximumPause
        self.heard = heard
        self.listening = listening
    }

    /// Whether the `LISTEN` is in place now.
    public var isListening: Bool { state.withLock { $0.listening } }

    /// Listens until the task is cancelled, reconnecting as needed.
    public func run() async {
        var failures = 0
        var listenedBefore = false
        var connectionID = 0
        while !Task.isCancelled {
            connectionID += 1
            do {
                let configuration = try location.connectionConfiguration(applicationName: applicationName)
                let connection = try await PostgresConnection.connect(configuration: configuration, id: connectionID, logger: logger)
                state.withLock { $0.connections += 1 }
                do {
                    try await connection.listen(on: feed.channel) { notifications in
                        failures = 0
                        state.withLock { $0.listening = true }
                        if listenedBefore {
                            logger.notice("listening again for other instances' changes; every subscriber is told to fetch", metadata: ["channel": "\(feed.channel)"])
                        } else {
                            logger.info("listening for other instances' changes", metadata: ["channel": "\(feed.channel)", "instance": "\(feed.instance)"])
                        }
                        reachable(true)
                        listening(listenedBefore)
                        listenedBefore = true
                        try await watch(notifications, on: connection)
                    }
                } catch {
                    state.withLock { $0.listening = false }
                    try? await connection.close()
                    throw error
                }
                state.withLock { $0.listening = false }
                try? await connection.close()
            } catch {
                if Task.isCancelled { break }
                // Lost, or cannot connect: the server is taken as away until a request's
                // own check or the next LISTEN finds it back.
                reachable(false)
                failures += 1
                let pause = pauseAfter(failures)
                logger.warning(
                    "the connection listening for other instances' changes failed; reconnecting",
                    metadata: [
                        "error": "\(String(reflecting: error))", "retryIn": "\(pause)", "failures": "\(failures)",
                    ])
                try? await Task.sleep(for: pause)
                continue
            }
        }
        state.withLock { $0.listening = false }
    }

    /// 0.1 s, doubling, up to `maximumPause`, each scaled by a random 0.5…1.
    func pauseAfter(_ failures: Int) -> Duration {
        let base = min(0.1 * pow(2, Double(min(failures, 30) - 1)), Double(maximumPause.components.seconds) + Double(maximumPause.components.attoseconds) / 1e18)
        return .milliseconds(Int64(base * Double.random(in: 0.5...1) * 1_000))
    }

    private struct ListenEnded: Error, CustomStringConvertible {
        let description: String
    }

    /// Hands on every notification until the stream ends or a ping fails.
    private func watch(_ notifications: PostgresNotificationSequence, on connection: PostgresConnection) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await notification in notifications {
                    self.deliver(notification.payload)
                }
                throw ListenEnded(description: "the notification stream ended")
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: self.pingInterval)
                    try await self.ping(connection)
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// `SELECT 1` on the listening connection; a connection that does not answer in
    /// time (a peer gone without a word) is closed, which ends its notification stream.
    private func ping(_ connection: PostgresConnection) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for try await _ in try await connection.query("SELECT 1", logger: self.logger) {}
                return true
            }
            group.addTask {
                try await Task.sleep(for: self.pingTimeout)
                return false
            }
            let answered = try await group.next() ?? false
            group.cancelAll()
            if !answered {
                try? await connection.close()
                throw ListenEnded(description: "the database did not answer a ping within \(pingTimeout)")
            }
        }
    }

    func deliver(_ payload: String) {
        // This instance's own commits reached its streams directly (every save's echo
        // was parsed as JSON and then dropped).
        if payload.hasPrefix(ownPrefix) { return }
        guard let message = PostgresChangeFeed.decode(payload) else {
            // Perhaps a newer notesd's format: everyone fetches, nothing is missed.
            logger.warning("a change notification could not be read; every subscriber is told to fetch", metadata: ["payload": "\(payload.prefix(200))"])
            listening(true)
            return
        }
        guard message.instance != feed.instance else { return }
        state.withLock { $0.heard += 1 }
        logger.trace("heard changes", metadata: ["from": "\(message.instance)", "seq": "\(message.seq)", "notices": "\(message.notices.count)"])
        if message.endings.isEmpty {
            heard(message.notices)
        } else {
            ended(message.endings)
        }
    }
}
