import Dispatch

/// Runs CPU-heavy work (writing a page of thousands of records) on a Dispatch queue,
/// off NIO's event loops. In notesd those loops also run Swift concurrency; a loop busy
/// writing one page of changes cannot meanwhile send the page before it, which would
/// undo the client's pipelining (it asks for page N+1 while it reads page N).
enum OffLoop {
    private static let queue = DispatchQueue(label: "notesd.encoding", qos: .userInitiated, attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }
}
