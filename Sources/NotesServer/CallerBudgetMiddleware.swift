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
/// the next request gets 429 with `Retry-After` before its body is read. An answer of
/// more than 64 KiB stays charged to the same bytes until it has been written (or the
/// connection dropped it), so a caller that reads its answers slowly, or not at all,
/// cannot pile them up in notesd's memory. Event streams last as long as a mount runs:
/// they have their own bound and are not counted here.
struct CallerBudgetMiddleware: RouterMiddleware {
    typealias Context = NotesRequestContext
    let budget: CallerBudget
    let clients: ClientAddress
    let pacer: TransferPacer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let caller = Self.caller(of: request, context: context, clients: clients)
        if request.uri.path == "/v1/events" {
            return try await WorkCaller.$bound.withValue(caller) { try await next(request, context) }
        }
        // (Clamped: the header is the client's word; a body past the request limit is
        // refused anyway, and no sum of these can overflow.)
        let declared = request.headers[.contentLength].flatMap { Int($0) } ?? 0
        let bytes = min(max(declared, 0), Limits.maxRequestBytes + 1)
        try budget.enter(caller, bytes: bytes)
        defer { budget.leave(caller, bytes: bytes) }
        try await pacer.wait(caller, bytes: bytes)
        let heavy = pacer.isHeavy(caller, bytes: bytes, underWay: budget.requestsUnderWay(caller))
        var response = try await WorkCaller.$bound.withValue(caller) {
            try await WorkPace.$bound.withValue(CallerWriterPacing(caller: caller, pacer: pacer)) {
                // A caller using more than its share while others wait runs its work on
                // threads that give way to the event loops the others' requests run on.
                guard heavy else { return try await next(request, context) }
                return try await withTaskExecutorPreference(BackgroundExecutor.shared) { try await next(request, context) }
            }
        }
        if let length = response.body.contentLength, length > Self.chargedAnswerBytes {
            pacer.charge(caller, answerBytes: length)
            response.body = Self.charging(response.body, length: length, to: caller, in: budget, on: context.channel)
        }
        return response
    }

    /// Who `request` is charged to: its account once identified, else its client's address.
    static func caller(of request: Request, context: Context, clients: ClientAddress) -> String {
        if let account = context.identity?.account { return "account:\(account.name)" }
        return "client:\(context.identity?.client ?? clients.of(request, channel: context.channel) ?? "socket")"
    }

    /// Answers up to this size are not charged: their bytes are few next to a request's.
    static let chargedAnswerBytes = 64 * 1024

    /// `body`, its bytes charged to `caller` until they have left on `channel`
    /// (`DrainSignal`) or were dropped (the charge goes with the last reference to the
    /// closure that holds the bytes).
    static func charging(_ body: ResponseBody, length: Int, to caller: String, in budget: CallerBudget, on channel: any Channel) -> ResponseBody {
        let charge = AnswerCharge(caller: caller, bytes: length, budget: budget)
        return ResponseBody(contentLength: length) { writer in
            try await body.write(writer)
            await DrainSignal.drained(channel)
            charge.release()
        }
    }
}

/// Bytes of an answer charged to its caller, given back once: when it has been written,
/// or when the answer is dropped unwritten.
final class AnswerCharge: Sendable {
    let caller: String
    let bytes: Int
    let budget: CallerBudget
    private let released = Mutex(false)

    init(caller: String, bytes: Int, budget: CallerBudget) {
        self.caller = caller
        self.bytes = bytes
        self.budget = budget
        budget.hold(caller, bytes: bytes)
    }

    func release() {
        let first = released.withLock { released in
            defer { released = true }
            return !released
        }
        if first { budget.drop(caller, bytes: bytes) }
    }

    deinit { release() }
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
            // (One request alone is always let in, its body has a bound of its own; not
            // while answers of the caller's wait to be written.)
            guard now.requests < requests, now.bytes == 0 || now.bytes + size <= bytes else { return false }
            inFlight[caller] = (now.requests + 1, now.bytes + size)
            return true
        }
        guard admitted else {
            throw NotesError(
                .requestRateLimited, "You have too many requests under way at once; wait for some to finish and try again.", retryAfter: 1)
        }
    }

    /// Requests `caller` has under way now (this one included, once entered).
    func requestsUnderWay(_ caller: String) -> Int {
        inFlight.withLock { $0[caller]?.requests ?? 0 }
    }

    func leave(_ caller: String, bytes size: Int) {
        inFlight.withLock { inFlight in
            guard let now = inFlight[caller] else { return }
            Self.set(&inFlight, caller, (now.requests - 1, now.bytes - size))
        }
    }

    /// Charges an answer's bytes to `caller` (never refused: the answer exists).
    func hold(_ caller: String, bytes size: Int) {
        inFlight.withLock { inFlight in
            let now = inFlight[caller] ?? (0, 0)
            inFlight[caller] = (now.requests, now.bytes + size)
        }
    }

    /// Gives back what `hold` charged.
    func drop(_ caller: String, bytes size: Int) {
        inFlight.withLock { inFlight in
            guard let now = inFlight[caller] else { return }
            Self.set(&inFlight, caller, (now.requests, now.bytes - size))
        }
    }

    /// What `caller` has under way now (for tests and metrics).
    func underWay(_ caller: String) -> (requests: Int, bytes: Int) {
        inFlight.withLock { $0[caller] ?? (0, 0) }
    }

    private static func set(_ inFlight: inout [String: (requests: Int, bytes: Int)], _ caller: String, _ value: (requests: Int, bytes: Int)) {
        inFlight[caller] = value.requests <= 0 && value.bytes <= 0 ? nil : value
    }
}
