import Metrics
import Prometheus

/// The daemon's metrics backend (Prometheus' text format, served at `GET /metrics`),
/// and the metrics that only the wiring sees: change notices made here or heard from
/// other instances, and the state of the listening connection.
///
/// The libraries record through swift-metrics alone: Hummingbird's request counts and
/// latencies by route and status, the stores' connections and faults, the notifier's
/// open event streams.
struct DaemonMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    /// Change notices committed through this instance.
    let noticesCommittedHere: Metrics.Counter
    /// Change notices heard from other instances (PostgreSQL's NOTIFY).
    let noticesHeard: Metrics.Counter
    /// 1 while the listening connection is in place, else 0 (PostgreSQL only).
    let listening: Metrics.Gauge
    /// Times the listening connection was established again after a loss.
    let listenerReconnects: Metrics.Counter

    /// Makes Prometheus swift-metrics' backend; once per process.
    static func bootstrap() -> DaemonMetrics {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Libraries name metrics with dots (OpenTelemetry style); Prometheus takes
        // [a-zA-Z_:][a-zA-Z0-9_:]* for names and no colons in label names.
        factory.nameAndLabelSanitizer = { name, labels in
            (prometheusName(name), labels.map { (prometheusName($0.0, colons: false), $0.1) })
        }
        // Requests here take from under a millisecond to seconds (a page of 10,000 changes).
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
            .seconds(5), .seconds(10),
        ]
        MetricsSystem.bootstrap(factory)
        return DaemonMetrics(
            registry: registry,
            noticesCommittedHere: Metrics.Counter(label: "notes_change_notices_total", dimensions: [("source", "this_instance")]),
            noticesHeard: Metrics.Counter(label: "notes_change_notices_total", dimensions: [("source", "other_instances")]),
            listening: Metrics.Gauge(label: "notes_change_listener_connected"),
            listenerReconnects: Metrics.Counter(label: "notes_change_listener_reconnects_total"))
    }

    /// The whole registry in Prometheus' text exposition format.
    var exposition: @Sendable () -> [UInt8] {
        { [registry] in
            var buffer: [UInt8] = []
            buffer.reserveCapacity(16 * 1024)
            registry.emit(into: &buffer)
            return buffer
        }
    }

    /// `name` with every character Prometheus does not take made `_`; label names
    /// (`colons: false`) take no colon either.
    static func prometheusName(_ name: String, colons: Bool = true) -> String {
        var scalars = String.UnicodeScalarView()
        for (index, scalar) in name.unicodeScalars.enumerated() {
            let letter = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_" || (colons && scalar == ":")
            let digit = index > 0 && ("0"..."9").contains(scalar)
            scalars.append(letter || digit ? scalar : "_")
        }
        return String(scalars)
    }
}
