import Dispatch

/// Blocking work (a SQLite transaction, PBKDF2, decoding a large body) on a thread of its
/// own, off NIO's event loops and Swift's cooperative threads: a loop held by one
/// request holds every connection on it, and the cooperative pool has as many threads as
/// cores. Callers hold a `FairGate` permit around it, which bounds how many run at once.
public enum Blocking {
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            // A serial queue of its own, which Dispatch gives a thread of its own: work
            // sent to one shared concurrent queue waited in one line as wide as the
            // cores, so a victim's read queued behind another account's decodes and
            // writes, whatever turn its gates had given it.
            DispatchQueue(label: "notesd.blocking", qos: .userInitiated).async { continuation.resume(with: Result { try body() }) }
        }
    }
}
