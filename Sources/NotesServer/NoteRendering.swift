#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesExport
import Synchronization

/// A note's markdown as a public page shows it.
public struct RenderedNote: Sendable, Codable, Equatable {
    public var title: String?
    public var html: String

    public init(title: String?, html: String) {
        self.title = title
        self.html = html
    }

    /// What a page shows when rendering failed or ran over its time: the text itself,
    /// escaped, so that the note is still readable.
    public static func plainText(_ markdown: String) -> RenderedNote {
        RenderedNote(title: nil, html: "<pre class=\"unrendered\">\(Template.escape(markdown))</pre>\n")
    }

    /// Renders in this process (tests, and the worker itself).
    public static func renderHere(_ markdown: String) -> RenderedNote {
        let page = MarkdownRenderer(rewriteLink: SiteExporter.pageLink).render(markdown)
        return RenderedNote(title: page.title, html: page.html)
    }
}

/// Turns a note's markdown into a page. It never fails: a note that cannot be rendered
/// in time is shown as plain text.
public protocol NoteRendering: Sendable {
    func render(_ markdown: String) async -> RenderedNote
}

/// cmark-gfm in this process: for tests and tools that render their own notes.
public struct InProcessRendering: NoteRendering {
    public init() {}
    public func render(_ markdown: String) async -> RenderedNote { RenderedNote.renderHere(markdown) }
}

/// cmark-gfm in a worker process with a time budget: notesd renders notes that anyone
/// may write for visitors anyone may be, with a library that has had quadratic-time and
/// out-of-bounds-read bugs (CVE-2023-22483…22486, CVE-2023-24824, fixed after Debian 12's
/// build). A bad note can then cost one worker, killed when over budget, not notesd.
/// At most `concurrency` workers run at once; more renders wait their turn.
public final class WorkerRendering: NoteRendering {
    let executable: String
    let arguments: [String]
    let budget: Duration
    private let slots: AsyncSlots

    /// - Parameters:
    ///   - executable: a program that reads markdown on stdin and writes `RenderedNote`
    ///     JSON on stdout (notesd itself, with `arguments` = `["--render-worker"]`).
    public init(executable: String, arguments: [String], budget: Duration = .seconds(5), concurrency: Int = 2) {
        self.executable = executable
        self.arguments = arguments
        self.budget = budget
        self.slots = AsyncSlots(count: concurrency)
    }

    public func render(_ markdown: String) async -> RenderedNote {
        await slots.acquire()
        defer { slots.release() }
        return await run(markdown) ?? .plainText(markdown)
    }

    /// nil when the worker failed, crashed or ran over its budget.
    func run(_ markdown: String) async -> RenderedNote? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let finished = Flag()
        do { try process.run() } catch { return nil }
        let pid = process.processIdentifier
        // Kill it when over budget (SIGKILL: a parser stuck in a loop does not answer SIGTERM).
        let budget = self.budget
        let watchdog = Task {
            try? await Task.sleep(for: budget)
            if !finished.isSet { kill(pid, SIGKILL) }
        }
        defer { watchdog.cancel() }
        // Write and read on threads of their own: a 16 MiB note fills both pipes.
        let text = Data(markdown.utf8)
        let writer = Thread {
            try? input.fileHandleForWriting.write(contentsOf: text)
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        // Reading to the end and waiting for the exit block: on a thread of their own,
        // never on one of Swift's few cooperative threads (two renders waiting out their
        // budget there would stall every request).
        let (data, succeeded): (Data, Bool) = await withCheckedContinuation { continuation in
            Thread {
                let data = (try? output.fileHandleForReading.readToEnd()) ?? Data()
                process.waitUntilExit()
                finished.set()
                continuation.resume(returning: (data, process.terminationReason == .exit && process.terminationStatus == 0))
            }.start()
        }
        guard succeeded else { return nil }
        return try? JSONDecoder().decode(RenderedNote.self, from: data)
    }
}

/// A flag set once, read from any thread.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// A counting semaphore for tasks.
final class AsyncSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    init(count: Int) { state = Mutex(State(free: max(1, count))) }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// Rendered notes by record and change tag: a page is rendered once per version, so a
/// visitor asking again and again costs a lookup, not a parse. Bounded in bytes; the
/// oldest entries go first.
final class RenderCache: Sendable {
    private struct State {
        var entries: [String: RenderedNote] = [:]
        var order: [String] = []
        var bytes = 0
    }
    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 32 << 20) { self.capacity = capacity }

    func get(_ key: String) -> RenderedNote? { state.withLock { $0.entries[key] } }

    func put(_ key: String, _ note: RenderedNote) {
        let size = note.html.utf8.count + (note.title?.utf8.count ?? 0)
        guard size <= capacity / 4 else { return }
        state.withLock { state in
            guard state.entries[key] == nil else { return }
            state.entries[key] = note
            state.order.append(key)
            state.bytes += size
            while state.bytes > capacity, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                if let gone = state.entries.removeValue(forKey: oldest) {
                    state.bytes -= gone.html.utf8.count + (gone.title?.utf8.count ?? 0)
                }
            }
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}

/// Notes' titles for public indexes, by record version (`nil`: the note has none), at
/// most `capacity` of them, the oldest forgotten first.
final class TitleCache: Sendable {
    private struct State {
        var entries: [String: String?] = [:]
        var order: [String] = []
    }
    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    func get(_ key: String) -> String?? { state.withLock { $0.entries[key] } }

    func put(_ key: String, _ title: String?) {
        state.withLock { state in
            guard state.entries[key] == nil else { return }
            state.entries[key] = .some(title)
            state.order.append(key)
            // Past the capacity the older half goes at once (one pass, not one per title).
            if state.order.count > capacity {
                let forgotten = state.order.prefix(capacity / 2)
                for key in forgotten { state.entries[key] = nil }
                state.order.removeFirst(forgotten.count)
            }
        }
    }
}
