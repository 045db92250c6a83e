package import Metrics
package import NotesModel

/// What `GET /metrics` shows of a store, the same on both backends: calls waiting for or
/// holding a database connection, connections held, the pool's size, and faults of the
/// database itself (not rule outcomes such as a stale change tag or a taken name).
///
/// Only swift-metrics' API here: notesd chooses the backend (Prometheus), and a store
/// used without one (tests, tools) records into swift-metrics' no-op default.
package struct StoreMetrics: Sendable {
    /// Store calls under way: waiting for a connection or running on one.
    package let calls: Meter
    /// Connections held by a call right now.
    package let connectionsInUse: Meter
    private let faults: Counter

    package init(backend: String, maximumConnections: Int) {
        let dimensions = [("backend", backend)]
        calls = Meter(label: "notes_store_calls_in_flight", dimensions: dimensions)
        connectionsInUse = Meter(label: "notes_store_connections_in_use", dimensions: dimensions)
        faults = Counter(label: "notes_store_faults_total", dimensions: dimensions)
        Gauge(label: "notes_store_connections_max", dimensions: dimensions).record(maximumConnections)
    }

    /// Counts `error` if it is the database failing or away, and hands it back.
    package func counted(_ error: NotesError) -> NotesError {
        if error.code == .internalError || error.code == .serviceUnavailable { faults.increment() }
        return error
    }
}
