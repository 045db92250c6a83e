import Synchronization

/// One holder at a time per key, taken by callers in turns (`FairGate`), different
/// keys independent: the turns of a zone's writer, or of a link's password guesses.
/// Work that would queue on one row lock in the database waits here instead, where
/// waiting holds no connection and each caller gets its turn.
///
/// A key's gate exists while someone holds or waits for it.
public final class KeyedTurns<Key: Hashable & Sendable>: Sendable {
    private struct Entry {
        let gate: FairGate
        var users: Int
    }
    private let entries = Mutex<[Key: Entry]>([:])
    private let name: @Sendable (Key) -> String
    private let waitingPerAccount: Int

    /// - Parameter name: what a key's turn is, for refusals ("the writer of zone x").
    /// - Parameter waitingPerAccount: calls of one caller that may wait for one key;
    ///   past it, 429.
    public init(waitingPerAccount: Int = 64, name: @escaping @Sendable (Key) -> String) {
        self.name = name
        self.waitingPerAccount = waitingPerAccount
    }

    /// Waits for `key`'s turn, charged to the caller (`WorkCaller.current`); pair it
    /// with one `release(key)`.
    public func acquire(_ key: Key) async throws {
        let gate = entries.withLock { entries in
            let gate = entries[key]?.gate ?? FairGate(name: name(key), permits: 1, waitingPerAccount: waitingPerAccount)
            entries[key] = Entry(gate: gate, users: (entries[key]?.users ?? 0) + 1)
            return gate
        }
        do {
            try await gate.acquire()
        } catch {
            leave(key)
            throw error
        }
    }

    public func release(_ key: Key) {
        let gate = entries.withLock { $0[key]?.gate }
        gate?.release()
        leave(key)
    }

    /// Runs `body` in `key`'s turn.
    public func withTurn<T: Sendable>(_ key: Key, _ body: () async throws -> T) async throws -> T {
        try await acquire(key)
        defer { release(key) }
        return try await body()
    }

    /// Keys with a gate now (for tests: none once every holder has ended).
    public var count: Int { entries.withLock { $0.count } }

    /// Calls waiting for `key`'s turn now (for tests).
    public func waiting(_ key: Key) -> Int { entries.withLock { $0[key]?.gate }?.waiting ?? 0 }

    private func leave(_ key: Key) {
        entries.withLock { entries in
            guard var entry = entries[key] else { return }
            entry.users -= 1
            entries[key] = entry.users > 0 ? entry : nil
        }
    }
}
