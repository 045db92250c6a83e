#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesExport
public import NotesModel
import NotesSpawn
import NotesWork
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

/// Turns a note's markdown into a page: a note that cannot be rendered in time is shown
/// as plain text. It fails only when too many renders are waiting already
/// (`serviceUnavailable`, with when to try again).
public protocol NoteRendering: Sendable {
    func render(_ markdown: String) async throws(NotesError) -> RenderedNote
}

/// cmark-gfm in this process: for tests and tools that render their own notes.
public struct InProcessRendering: NoteRendering {
    public init() {}
    public func render(_ markdown: String) async throws(NotesError) -> RenderedNote { RenderedNote.renderHere(markdown) }
}

/// cmark-gfm in a worker process with a time budget: notesd renders notes that anyone
/// may write for visitors anyone may be, with a library that has had quadratic-time and
/// out-of-bounds-read bugs (CVE-2023-22483…22486, CVE-2023-24824, fixed after Debian 12's
/// build). A bad note can then cost one worker, killed when over budget, not notesd.
/// At most `concurrency` workers run at once; more renders wait their turn, by caller
/// (`FairGate`), at most `waiting` of them in all.
///
/// A worker starts with an empty environment (notesd's may hold a PostgreSQL URL with
/// its password), and the worker itself closes every descriptor it inherited past
/// stdin, stdout and stderr and limits its memory, CPU time, files and descriptors
/// before it reads the note (`RenderWorker.confine`).
public final class WorkerRendering: NoteRendering {
    let executable: String
    let arguments: [String]
    let budget: Duration
    private let slots: FairGate

    /// - Parameters:
    ///   - executable: a program that reads markdown on stdin and writes `RenderedNote`
    ///     JSON on stdout (notesd itself, with `arguments` = `["--render-worker"]`).
    public init(executable: String, arguments: [String], budget: Duration = .seconds(5), concurrency: Int = 2, waiting: Int = 64) {
        self.executable = executable
        self.arguments = arguments
        self.budget = budget
        self.slots = FairGate(name: "page renders", permits: concurrency, waitingPerAccount: 8, waitingInAll: waiting)
    }

    public func render(_ markdown: String) async throws(NotesError) -> RenderedNote {
        do {
            try await slots.acquire()
        } catch let error as NotesError {
            throw error
        } catch {
            throw NotesError(.serviceUnavailable, "The page was not rendered: its request ended first.", retryAfter: 1)
        }
        defer { slots.release() }
        return await run(markdown) ?? .plainText(markdown)
    }

    /// nil when the worker failed, crashed or ran over its budget.
    func run(_ markdown: String) async -> RenderedNote? {
        // Started without Foundation's Process, whose start crashed its caller now and
        // then on this toolchain (`ChildProcess`).
        guard let child = try? ChildProcess.start(executable, arguments: arguments, environment: [:], pipeInput: true, pipeOutput: true),
            let input = child.input, let output = child.output
        else { return nil }
        let finished = Flag()
        let pid = child.pid
        // Kill it when over budget (SIGKILL: a parser stuck in a loop does not answer SIGTERM).
        let budget = self.budget
        let watchdog = Task {
            try? await Task.sleep(for: budget)
            if !finished.isSet { kill(pid, SIGKILL) }
        }
        defer { watchdog.cancel() }
        // Write and read on threads of their own: a 16 MiB note fills both pipes.
        let text = Array(markdown.utf8)
        let writer = Thread {
            _ = ChildProcess.write(text, to: input)
            close(input)
        }
        writer.start()
        // Reading to the end and waiting for the exit block: on a thread of their own,
        // never on one of Swift's few cooperative threads (two renders waiting out their
        // budget there would stall every request).
        let (data, succeeded): ([UInt8], Bool) = await withCheckedContinuation { continuation in
            Thread {
                let data = ChildProcess.readAll(output)
                close(output)
                let status = child.wait()
                finished.set()
                continuation.resume(returning: (data, status == 0))
            }.start()
        }
        guard succeeded else { return nil }
        return try? JSONDecoder().decode(RenderedNote.self, from: Data(data))
    }
}

/// A flag set once, read from any thread.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// Renders under way, by record version: a visitor who asks for a page being rendered
/// waits for that render instead of starting another. Each render runs in a task of its
/// own, so a visitor who leaves does not cancel it for the others.
final class RenderFlights: Sendable {
    private let running = Mutex<[String: Task<Result<RenderedNote, NotesError>, Never>]>([:])

    func once(_ key: String, _ work: @escaping @Sendable () async throws(NotesError) -> RenderedNote) async throws(NotesError) -> RenderedNote {
        let task = running.withLock { running in
            if let task = running[key] { return task }
            let task = Task { () -> Result<RenderedNote, NotesError> in
                let outcome: Result<RenderedNote, NotesError>
                do {
                    outcome = .success(try await work())
                } catch let error as NotesError {
                    outcome = .failure(error)
                } catch {
                    outcome = .failure(NotesError(.internalError, "The page could not be made."))
                }
                return outcome
            }
            running[key] = task
            return task
        }
        let outcome = await task.value
        _ = running.withLock { running in running[key] == task ? running.removeValue(forKey: key) : nil }
        return try outcome.get()
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
