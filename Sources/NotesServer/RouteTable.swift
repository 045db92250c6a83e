import HTTPTypes
import Hummingbird
import Synchronization

/// The methods each routed path answers, so that a known path asked with another method
/// gets 405 with `Allow` (RFC 9110 §15.5.6) instead of the router's 404. Filled once,
/// after every route is added; read on each unmatched request.
final class RouteTable: Sendable {
    private struct Route: Sendable {
        let pattern: [Substring]
        let methods: Set<HTTPRequest.Method>
    }

    private let routes = Mutex<[Route]>([])

    /// Takes the routes of a finished router.
    func fill(from descriptions: [Router<NotesRequestContext>.RouteDescription]) {
        var byPath: [String: Set<HTTPRequest.Method>] = [:]
        for route in descriptions { byPath[route.path.description, default: []].insert(route.method) }
        let table = byPath.map { Route(pattern: Self.segments($0.key), methods: $0.value) }
        routes.withLock { $0 = table }
    }

    /// The methods allowed on `path`, or nil when no route has that path at all.
    func methods(for path: String) -> Set<HTTPRequest.Method>? {
        let segments = Self.segments(path)
        let allowed = routes.withLock { routes in
            routes.filter { Self.matches($0.pattern, segments) }.reduce(into: Set<HTTPRequest.Method>()) { $0.formUnion($1.methods) }
        }
        return allowed.isEmpty ? nil : allowed
    }

    private static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    /// Literal segments match themselves, `{name}` any one segment, `**` the rest.
    private static func matches(_ pattern: [Substring], _ segments: [Substring]) -> Bool {
        for (index, element) in pattern.enumerated() {
            if element == "**" { return segments.count > index }
            guard index < segments.count else { return false }
            if element.hasPrefix("{") && element.hasSuffix("}") { continue }
            if element != segments[index] { return false }
        }
        return pattern.count == segments.count
    }
}
