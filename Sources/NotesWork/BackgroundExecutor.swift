import Dispatch
import Foundation
import Synchronization

/// Where the async work of a caller that uses more than its share runs: threads that give
/// way to notesd's event loops (`Blocking.backgroundNice`).
///
/// notesd runs Swift's tasks on NIO's event loops, one per core. A request's work between
/// two awaits runs there in one piece: binding 400 notes of 40 KB into a statement,
/// decoding a page of rows, copying a 4 MiB note. Another account's small save, whose
/// next step waited on the same loop behind such pieces, took tens of milliseconds where
/// it needed one. A task that prefers this executor (`withTaskExecutorPreference`) runs
/// its pieces here instead; its I/O still goes through the event loops, a socket read or
/// write at a time.
public final class BackgroundExecutor: TaskExecutor {
    private let jobs = Mutex(Queue())
    private let ready = DispatchSemaphore(value: 0)

    /// One for notesd: as many threads as cores.
    public static let shared = BackgroundExecutor(threads: max(1, ProcessInfo.processInfo.activeProcessorCount))

    public init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in
                Blocking.lowerPriority()
                while true {
                    ready.wait()
                    let job = jobs.withLock { $0.pop() }
                    job?.runSynchronously(on: asUnownedTaskExecutor())
                }
            }
            thread.stackSize = 8 << 20
            thread.name = "notesd-bg-\(index)"
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.push(job) }
        ready.signal()
    }

    /// First in, first out, without moving what waits at each step.
    private struct Queue {
        var items: [UnownedJob] = []
        var head = 0

        mutating func push(_ job: UnownedJob) { items.append(job) }

        mutating func pop() -> UnownedJob? {
            guard head < items.count else { return nil }
            defer {
                head += 1
                if head >= 64 && head * 2 >= items.count {
                    items.removeFirst(head)
                    head = 0
                }
            }
            return items[head]
        }
    }
}
