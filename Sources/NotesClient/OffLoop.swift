import Dispatch

/// Runs CPU-heavy work (reading a page of thousands of records) on a Dispatch queue, off
/// the event loops that carry the HTTP connections (and, in programs that install NIO as
/// Swift concurrency's executor, every task): a loop busy reading one page could not
/// meanwhile receive the next one, which would undo the pipelining of change pages.
enum OffLoop {
    private static let queue = DispatchQueue(label: "notes.client.decoding", qos: .userInitiated, attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }
}
