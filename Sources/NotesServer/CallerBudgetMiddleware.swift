import Hummingbird
import NIOCore
import NotesModel
import NotesWork
import Synchronization

/// Charges each request to its caller, and bounds what one caller has under way.
///
/// The caller is the account (for `/v1`, once identified), else the client's address
/// (public pages; `socket` for an anonymous request on the Unix socket). The request
/// runs with `WorkCaller` bound to it, so every gate it meets deeper down (the SQLite
/// writer and readers, PostgreSQL connections, password checks, page renders) serves it
/// in its caller's turn. A caller may have `Limits.requestsInFlightPerCaller` requests
/// under way and `Limits.requestBytesInFlightPerCaller` of request bodies; past either,
/// the next request gets 429 with `Retry-After` before its body is read. Event streams
/// last as long as a mount runs: they have their own bound and are not counted here.
struct CallerBudgetMiddleware: RouterMiddleware {
    typealias Context = NotesRequestContext
    let budget: CallerBudget
    let clients: ClientAddress

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let caller: String
        if let account = context.identity?.account {
            caller = "account:\(account.name)"
        } else {
            caller = "client:\(context.identity?.client ?? clients.of(request, channel: context.channel) ?? "socket")"
        }
        if request.uri.path == "/v1/events" {
            return try await WorkCaller.$bound.withValue(caller) { try await next(request, context) }
        }
        // (Clamped: the header is the client's word; a body past the request limit is
        // refused anyway, and no sum of these can overflow.)
        let declared = request.headers[.contentLength].flatMap { Int($0) } ?? 0
        let bytes = min(max(declared, 0), Limits.maxRequestBytes + 1)
        try budget.enter(caller, bytes: bytes)
        defer { budget.leave(caller, bytes: bytes) }
        return try await WorkCaller.$bound.withValue(caller) { try await next(request, context) }
    }
}

/// Requests and request bytes under way, per caller.
final class CallerBudget: Sendable {
    private let inFlight = Mutex<[String: (requests: Int, bytes: Int)]>([:])
    let requests: Int
    let bytes: Int

    init(requests: Int = Limits.requestsInFlightPerCaller, bytes: Int = Limits.requestBytesInFlightPerCaller) {
        self.requests = requests
        self.bytes = bytes
    }

    func enter(_ caller: String, bytes size: Int) throws(NotesError) {
        let admitted = inFlight.withLock { inFlight -> Bool in
            let now = inFlight[caller] ?? (0, 0)
            // (One request alone is always let in: its body has a bound of its own.)
            guard now.requests < requests, now.requests == 0 || now.bytes + size <= bytes else { return false }
            inFlight[caller] = (now.requests + 1, now.bytes + size)
            return true
        }
        guard admitted else {
            throw NotesError(
                .requestRateLimited, "You have too many requests under way at once; wait for some to finish and try again.", retryAfter: 1)
        }
    }

    func leave(_ caller: String, bytes size: Int) {
        inFlight.withLock { inFlight in
            guard let now = inFlight[caller] else { return }
            inFlight[caller] = now.requests > 1 ? (now.requests - 1, now.bytes - size) : nil
        }
    }
}
