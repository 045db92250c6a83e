import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Blocking work (a SQLite transaction, PBKDF2, decoding a large body) on a thread of its
/// own, off NIO's event loops and Swift's cooperative threads: a loop held by one
/// request holds every connection on it, and the cooperative pool has as many threads as
/// cores. Callers hold a `FairGate` permit around it, which bounds how many run at once.
public enum Blocking {
    /// Work that others wait for (a transaction holding the writer, a read): at notesd's
    /// own priority.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            // A serial queue of its own, which Dispatch gives a thread of its own: work
            // sent to one shared concurrent queue waited in one line as wide as the
            // cores, so a victim's read queued behind another account's decodes and
            // writes, whatever turn its gates had given it.
            DispatchQueue(label: "notesd.blocking", qos: Self.quality).async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// The quality of service of blocking work's threads. On Linux libdispatch turns a
    /// quality into a nice value that it sets on the thread (user-initiated: -2), which
    /// only succeeds for root: notesd as root (its tests and benchmarks) ran its writer
    /// and readers above its own event loops, and as its service user beside them.
    /// Default sets 0, notesd's own, whoever runs it.
    static let quality = DispatchQoS.default

    /// The nice value of `background` threads: the kernel gives a thread at nice 0 about
    /// nine times the CPU of one at 10 when both want it.
    public static let backgroundNice: Int32 = 10

    /// CPU-heavy work that only its own caller waits for (decoding a 16 MB batch, a
    /// password hash, encoding a large answer), on a new thread that gives way to every
    /// other thread of notesd (`backgroundNice`). Gates bound how many run at once and
    /// take turns by caller; this decides who gets the cores meanwhile: on two cores,
    /// one account's decodes and hashes at notesd's own priority stretched another
    /// account's small save, which needs a core for a millisecond, to tens of them.
    public static func background<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await onOwnThread(nice: backgroundNice, body)
    }

    /// The nice value of `idle` threads: the lowest.
    public static let idleNice: Int32 = 19

    /// Work that nobody waits for (taking notes into the search index): on a thread at
    /// the lowest priority, below `background` work too (a password hash that its caller
    /// waits for must not share the core evenly with a backlog of indexing).
    ///
    /// Not Linux's idle class (`SCHED_IDLE`): a thread there gets next to no CPU while
    /// others want it, and every thread takes locks nobody sees (malloc's arenas, the
    /// Swift runtime's caches): under a full load, an idle-class thread holding one stalls
    /// the threads serving requests, and a process told to stop cannot end before each of
    /// its idle-class threads gets a turn.
    public static func idle<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await onOwnThread(nice: idleNice, body)
    }

    private static func onOwnThread<T: Sendable>(nice: Int32, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                lowerPriority(to: nice)
                continuation.resume(with: Result { try body() })
            }
            // (Deep JSON and Markdown recurse: the size Dispatch's threads have.)
            thread.stackSize = 8 << 20
            thread.name = "notesd-heavy"

            thread.start()
        }
    }

    /// Lowers the calling thread's priority (on Linux the nice value belongs to the
    /// thread, and `who` 0 names the calling one); the thread keeps it until it ends.
    public static func lowerPriority(to nice: Int32 = backgroundNice) {
        #if os(Linux)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
        #endif
    }
}
