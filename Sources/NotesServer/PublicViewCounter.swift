import Logging
import NotesModel
import Synchronization

/// Views of public links, counted in memory and written in batches: a page view costs
/// no write of its own. While one batch is being written the next one gathers, so a busy
/// link costs one store write per write's duration, and a quiet one a write per view.
/// (Views gathered when notesd stops are not written: the count is a guide, not a ledger.)
final class PublicViewCounter: Sendable {
    private struct State {
        var pending: [String: Int] = [:]
        var writing = false
    }

    private let state = Mutex(State())
    private let store: any RecordStore
    private let logger = Logger(label: "notes.public-pages")

    init(store: any RecordStore) {
        self.store = store
    }

    /// Counts one view of the link with this URL token.
    func count(_ urlToken: String) {
        let startWriter = state.withLock { state -> Bool in
            state.pending[urlToken, default: 0] += 1
            guard !state.writing else { return false }
            state.writing = true
            return true
        }
        if startWriter { Task { await self.write() } }
    }

    /// Writes batches until nothing is pending.
    private func write() async {
        while true {
            let batch = state.withLock { state -> [String: Int] in
                let batch = state.pending
                state.pending = [:]
                if batch.isEmpty { state.writing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try await store.countPublicViews(batch)
            } catch {
                logger.warning("Views of \(batch.count) public links were not counted: \(error.message)")
            }
        }
    }
}
