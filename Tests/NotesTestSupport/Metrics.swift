import Foundation
public import NotesClient

/// `GET /metrics` of a real notesd, read as Prometheus' text format.
public struct MetricsPage: Sendable {
    public let text: String

    /// Reads the page as `client` (the admin, on the socket); nil if it was refused.
    public static func read(_ client: NotesClient) async throws -> MetricsPage? {
        let (status, body) = try await client.raw("GET", "/metrics", body: nil)
        guard status == 200 else { return nil }
        return MetricsPage(text: String(decoding: body, as: UTF8.self))
    }

    /// The value of the sample named `series` exactly (name and labels, as printed).
    public func value(_ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// Whether some sample's name and labels begin with `prefix`.
    public func has(_ prefix: String) -> Bool {
        text.split(separator: "\n").contains { $0.hasPrefix(prefix) }
    }
}
