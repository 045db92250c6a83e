import Foundation
public import Logging
import Metrics
public import NotesModel
public import NotesText
import NotesWork
import Synchronization

/// A note a store wrote since the search index last took it in.
public struct PendingNote: Sendable {
    /// The id of its `search_pending` row (grows with every write of the note).
    public var id: Int64
    public var owner: String
    public var zone: String
    public var recordName: String
    /// The note's file name, for the title of a note without a heading.
    public var name: String
    /// The note's text; nil when it is gone (deleted, trashed, or no note any more).
    public var body: String?

    public init(id: Int64, owner: String, zone: String, recordName: String, name: String, body: String?) {
        self.id = id
        self.owner = owner
        self.zone = zone
        self.recordName = recordName
        self.name = name
        self.body = body
    }
}

/// What a backend keeps of the search index: the notes waiting for it, and the
/// documents it holds. Each backend's store writes a `search_pending` row in the same
/// transaction as every note it writes (a trigger), so no path that writes a note is
/// missed; `SearchIndexer` takes them in outside those transactions.
public protocol SearchIndexStorage: Sendable {
    /// The next notes to take in, each account's oldest first, accounts in turn, at
    /// most `limit` notes and about `bytes` of text.
    func pending(limit: Int, bytes: Int) async throws(NotesError) -> [PendingNote]
    /// Keeps `documents` (nil: the note is gone) and marks the notes taken in; `urgent`:
    /// a search waits for them (work at notesd's own priority, not the background's).
    func takeIn(_ notes: [PendingNote], _ documents: [SearchDocument?], urgent: Bool) async throws(NotesError)
    /// What must be taken in before a search of `actor` sees every note saved so far
    /// in the zones it reads (per owner, the last pending id); nil when nothing is.
    func waitingMark(for actor: String) async throws(NotesError) -> [String: Int64]?
    /// Whether everything up to `mark` is taken in.
    func isTakenIn(_ mark: [String: Int64]) async throws(NotesError) -> Bool
    /// Housekeeping when nothing waits (rows of notes taken in, deleted in bulk).
    func cleanUp() async throws(NotesError)
    /// How many notes wait to be taken in.
    func waitingCount() async throws(NotesError) -> Int
    /// One step of reorganising the index for faster reads, when nothing waits;
    /// returns whether more steps are left.
    func tidy() async throws(NotesError) -> Bool
    /// Whether the store behind it is gone (the indexer then stops for good).
    var isClosed: Bool { get }
}

extension SearchIndexStorage {
    public func tidy() async throws(NotesError) -> Bool { false }
}

/// Takes the notes a store wrote into its search index, a batch at a time, off the
/// writers and on threads of the lowest priority (`Blocking.idle`); and lets a search wait, a bounded time,
/// until the notes its caller reads are in. The same for every backend.
public final class SearchIndexer: Sendable {
    /// Notes per batch, and the bytes of text past which a batch stops early.
    public static let batchNotes = 1_024
    /// Notes per write of the index: a batch is written in parts, in order (each
    /// account's progress only grows).
    static let writtenNotes = 256
    public static let batchBytes = 8 << 20
    /// How long a run started by a write waits before its first batch, so that a
    /// stream of single saves is taken in a few at a time rather than one by one (a
    /// search that waits for them starts the batch at once).
    public static let gathering: Duration = .milliseconds(500)

    private let storage: any SearchIndexStorage
    private let logger: Logger
    private let state = Mutex(State())
    /// For `GET /metrics`: runs under way (taking notes in, or merging the index once
    /// they are in; 0 when the index is idle), and notes taken in.
    private let working = Meter(label: "notes_search_indexer_working")
    private let takenIn = Counter(label: "notes_search_notes_taken_in_total")

    private struct State {
        var running = false
        /// `catchUp` runs: no run of `wake`'s starts, and one under way stops after
        /// its batch (two would take in the same notes twice).
        var catchingUp = false
        var dirty = false
        /// The run waiting out `gathering`, to be woken early by a search.
        var gatheringRun: CheckedContinuation<Void, Never>?
        var listeners: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextListener = 0
        /// Searches waiting for the index: while there are any, its work runs at notesd's
        /// own priority (a search's caller waits for it, on a busy machine too).
        var searchesWaiting = 0
    }

    public init(storage: any SearchIndexStorage, logger: Logger) {
        self.storage = storage
        self.logger = logger
    }

    /// Starts taking in what the store wrote, unless that is under way (then the run
    /// under way looks again when it is done). A write's wake gathers for a moment
    /// first; a search's (`now`) does not.
    public func wake(now: Bool = false) {
        let (start, early) = state.withLock { state in
            var early: CheckedContinuation<Void, Never>?
            if now {
                early = state.gatheringRun
                state.gatheringRun = nil
            }
            if state.running || state.catchingUp {
                state.dirty = true
                return (false, early)
            }
            state.running = true
            state.dirty = false
            return (true, early)
        }
        early?.resume()
        guard start else { return }
        working.increment()
        Task.detached {
            await self.drain(gathering: !now)
            self.working.decrement()
        }
    }

    /// Waits out `gathering`, unless a search wakes the run first.
    private func gather() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { $0.gatheringRun = continuation }
            Task {
                try? await Task.sleep(for: Self.gathering)
                let run = self.state.withLock { state in
                    defer { state.gatheringRun = nil }
                    return state.gatheringRun
                }
                run?.resume()
            }
        }
    }

    private func drain(gathering: Bool) async {
        if gathering { await gather() }
        var failures = 0
        while true {
            let yielding = state.withLock { state in
                if state.catchingUp { state.running = false }
                return state.catchingUp
            }
            if yielding { return }
            do {
                if try await takeInBatch() {
                    failures = 0
                    continue
                }
                try await storage.cleanUp()
                // A step at a time, each time only when no write came meanwhile.
                while !state.withLock({ $0.dirty || $0.catchingUp }), try await storage.tidy() {}
                failures = 0
            } catch {
                if storage.isClosed {
                    state.withLock { $0.running = false }
                    return
                }
                failures += 1
                logger.warning("the search index could not take in notes; it tries again", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(min(30, failures)))
                continue
            }
            let again = state.withLock { state in
                if state.dirty {
                    state.dirty = false
                    return true
                }
                state.running = false
                return false
            }
            if !again { return }
        }
    }

    /// Takes in one batch; false when nothing waited.
    private func takeInBatch() async throws -> Bool {
        let batch = try await storage.pending(limit: Self.batchNotes, bytes: Self.batchBytes)
        guard !batch.isEmpty else { return false }
        let urgent = state.withLock { $0.searchesWaiting > 0 }
        // The words of the next part are made while the index writes this one: the
        // two halves of the work run side by side, on two cores where there are two.
        let parts = stride(from: 0, to: batch.count, by: Self.writtenNotes).map { Array(batch[$0..<min(batch.count, $0 + Self.writtenNotes)]) }
        var making = Task { try await Self.documents(of: parts[0], urgent: urgent) }
        for (index, part) in parts.enumerated() {
            let documents = try await making.value
            if index + 1 < parts.count {
                let next = parts[index + 1]
                making = Task { try await Self.documents(of: next, urgent: urgent) }
            }
            try await storage.takeIn(part, documents, urgent: urgent)
            takenIn.increment(by: part.count)
        }
        let listeners = state.withLock { state in
            defer { state.listeners.removeAll() }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.resume() }
        return true
    }

    /// The documents of a batch's notes, made on as many threads as there are cores
    /// (each at the lowest priority, unless a search waits): making the words is most of
    /// the work.
    static func documents(of batch: [PendingNote], urgent: Bool) async throws -> [SearchDocument?] {
        let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, batch.count / 16))
        let size = (batch.count + parts - 1) / parts
        return try await withThrowingTaskGroup(of: (Int, [SearchDocument?]).self) { group in
            for start in stride(from: 0, to: batch.count, by: size) {
                let notes = batch[start..<min(batch.count, start + size)]
                let make: @Sendable () -> (Int, [SearchDocument?]) = { (start, notes.map { note in note.body.map { SearchDocument(name: note.name, body: $0) } }) }
                group.addTask { urgent ? try await Blocking.run(make) : try await Blocking.idle(make) }
            }
            var documents = [SearchDocument?](repeating: nil, count: batch.count)
            for try await (start, made) in group {
                documents.replaceSubrange(start..<start + made.count, with: made)
            }
            return documents
        }
    }

    /// Takes in everything waiting now, in this task, telling `progress` how many
    /// notes are left after each batch (`notesd reindex`).
    public func catchUp(progress: (Int) -> Void) async throws(NotesError) {
        state.withLock { $0.catchingUp = true }
        working.increment()
        defer {
            working.decrement()
            state.withLock { $0.catchingUp = false }
            // A run follows, for what was written meanwhile and to tidy the index.
            wake()
        }
        // The run under way, if any, stops after its batch.
        while state.withLock({ $0.running }) { await nextBatch(orAfter: .milliseconds(10)) }
        progress(try await storage.waitingCount())
        do {
            // (Counted every tenth batch: a count reads every note still waiting.)
            var batches = 0
            while try await takeInBatch() {
                batches += 1
                if batches % 10 == 0 { progress(try await storage.waitingCount()) }
            }
            progress(0)
            try await storage.cleanUp()
        } catch {
            throw error as? NotesError ?? NotesError(.internalError, "The search index could not be built: \(error).")
        }
    }

    /// Whether no run is under way: every note written so far is in, and the index is
    /// merged (`SearchIndexStorage.tidy`).
    public var isIdle: Bool { state.withLock { !$0.running && !$0.catchingUp } }

    /// How many notes wait to be taken in.
    public func waitingCount() async throws(NotesError) -> Int {
        try await storage.waitingCount()
    }

    /// Waits until the index took in every note saved so far in the zones `actor`
    /// reads (theirs and those of the shares they accepted), at most `seconds`;
    /// returns whether it did.
    public func waitForVisibleSaves(of actor: String, seconds: Double = Limits.searchIndexWaitSeconds) async throws(NotesError) -> Bool {
        guard let mark = try await storage.waitingMark(for: actor) else { return true }
        state.withLock { $0.searchesWaiting += 1 }
        defer { state.withLock { $0.searchesWaiting -= 1 } }
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            wake(now: true)
            if try await storage.isTakenIn(mark) { return true }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            // Another instance may take the notes in (PostgreSQL): look again after a
            // while even when this one's indexer has nothing to say.
            await nextBatch(orAfter: min(left, .milliseconds(50)))
        }
    }

    /// Returns after this indexer's next batch, or after `wait`.
    private func nextBatch(orAfter wait: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let key = state.withLock { state in
                let key = state.nextListener
                state.nextListener += 1
                state.listeners[key] = continuation
                return key
            }
            Task {
                try? await Task.sleep(for: wait)
                self.state.withLock { $0.listeners.removeValue(forKey: key) }?.resume()
            }
        }
    }
}
