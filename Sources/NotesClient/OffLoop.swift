import Dispatch
import NotesModel

/// Runs CPU-heavy work (reading a page of thousands of records) on a Dispatch queue, off
/// the event loops that carry the HTTP connections (and, in programs that install NIO as
/// Swift concurrency's executor, every task): a loop busy reading one page could not
/// meanwhile receive the next one, which would undo the pipelining of change pages.
/// Request and answer bodies past `inlineBytes` are encoded and decoded here too: a
/// batch of 400 notes takes tens of milliseconds to encode, and every other request of
/// the program waits for its loop meanwhile.
enum OffLoop {
    /// Below this, a body is encoded or decoded where it is: the hop costs more.
    static let inlineBytes = 64 << 10

    /// Whether a request body is large enough to encode here (only saves carry content).
    static func isLarge(_ body: (some Encodable)?) -> Bool {
        guard let modify = body as? ModifyRequest else { return false }
        return modify.saves.reduce(0) { $0 + $1.contentSize } > inlineBytes
    }

    private static let queue = DispatchQueue(label: "notes.client.decoding", qos: .userInitiated, attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }
}
