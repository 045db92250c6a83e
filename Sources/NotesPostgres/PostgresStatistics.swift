import Logging
import NotesWork
import PostgresNIO
import Synchronization

/// Keeps the planner's statistics of `records` in step with a zone that grows fast.
///
/// notesd's statements are planned once per connection (`plan_cache_mode =
/// force_generic_plan`: planning the modify's first read cost more than running it), with
/// the statistics of when they were planned. Planned while `records` was nearly empty (a
/// new server, before its first import), a lookup by record name in a zone cost the same
/// by the primary key as by any other index that begins with the zone, and took
/// `records_by_seq`: every lookup then read the whole zone, and a first import of 10,000
/// notes slowed as it went. Autovacuum analyzes the table only after a minute or more.
/// So each instance analyzes `records` itself once the rows it wrote since the last
/// analysis reach the rows the table held then (at least 1,000): a few times while a
/// table grows from nothing, rarely after. `ANALYZE` invalidates every connection's plans
/// of the table, so they are made again with the new figures.
final class PostgresStatistics: Sendable {
    private struct State {
        var written = 0
        var tableRows = 0
        var analyzing = false
    }
    private let state = Mutex(State())
    static let minimumRows = 1_000

    /// Notes `rows` written; true when an analysis should start now (the caller runs it
    /// and calls `analyzed`).
    func wrote(_ rows: Int) -> Bool {
        state.withLock { state in
            state.written += rows
            guard !state.analyzing, state.written >= max(Self.minimumRows, state.tableRows) else { return false }
            state.analyzing = true
            return true
        }
    }

    /// The analysis ended; the table then held `tableRows` (nil: it failed, try again
    /// after as many rows again).
    func analyzed(tableRows: Int?) {
        state.withLock { state in
            state.analyzing = false
            state.written = 0
            if let tableRows { state.tableRows = tableRows }
        }
    }
}

extension PostgresStore {
    /// Counts rows a modify wrote, and analyzes `records` in the background when they
    /// are many (`PostgresStatistics`).
    func wroteRecords(_ rows: Int) {
        guard rows > 0, statistics.wrote(rows) else { return }
        let database = database
        let statistics = statistics
        let logger = logger
        Task {
            var rows: Int?
            do {
                try await database.client.withConnection { connection in
                    // The columns plans choose by, not the notes' text; paced as
                    // autovacuum paces itself, so that the analysis is not a burst of
                    // the database's CPU beside the saves it is for.
                    try await connection.query("BEGIN", logger: logger)
                    try await connection.query("SET LOCAL vacuum_cost_delay = '2ms'", logger: logger)
                    try await connection.query("ANALYZE records (owner, zone, record_name, parent, name, seq, share_id)", logger: logger)
                    try await connection.query("COMMIT", logger: logger)
                    for try await count in try await connection.query("SELECT reltuples::bigint FROM pg_class WHERE oid = 'records'::regclass", logger: logger)
                        .decode(Int64.self)
                    {
                        rows = Int(count)
                    }
                }
                logger.debug("records analyzed", metadata: ["rows": "\(rows ?? 0)"])
            } catch {
                logger.warning("analyzing records failed; autovacuum will", metadata: ["error": "\(error)"])
            }
            statistics.analyzed(tableRows: rows)
        }
    }
}
