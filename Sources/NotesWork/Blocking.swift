import Dispatch

/// Blocking work (a SQLite transaction, PBKDF2, a scan of a note) on a Dispatch thread,
/// off NIO's event loops and Swift's cooperative threads: a loop held by one request
/// holds every connection on it, and the cooperative pool has as many threads as cores.
/// Callers hold a `FairGate` permit around it, which bounds how many threads it takes.
public enum Blocking {
    private static let queue = DispatchQueue(label: "notesd.blocking", qos: .userInitiated, attributes: .concurrent)

    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
