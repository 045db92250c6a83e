package import NotesModel
import NotesWork
import Synchronization

/// This instance's turn at each zone's change counter: one write per zone at a time,
/// taken by accounts in turns (`FairGate`). Writes to a zone follow one another on its
/// row lock anyway; without a turn here, one account's queued batches to a zone would
/// each hold a pool connection while they waited for that lock, and stand in front of
/// another account's save to the same zone (PostgreSQL grants row locks first come,
/// first served). Writes to different zones take different turns.
///
/// A zone's gate exists while someone holds or waits for it.
package final class PostgresZoneTurns: Sendable {
    private struct Entry {
        let gate: FairGate
        var users: Int
    }
    private let entries = Mutex<[ZoneID: Entry]>([:])

    /// Waits for `zone`'s turn, charged to the caller (`WorkCaller.current`); pair it
    /// with one `release(zone)`.
    package func acquire(_ zone: ZoneID) async throws {
        let gate = entries.withLock { entries in
            let gate = entries[zone]?.gate ?? FairGate(name: "the writer of zone \(zone.name)", permits: 1)
            entries[zone] = Entry(gate: gate, users: (entries[zone]?.users ?? 0) + 1)
            return gate
        }
        do {
            try await gate.acquire()
        } catch {
            leave(zone)
            throw error
        }
    }

    package func release(_ zone: ZoneID) {
        let gate = entries.withLock { $0[zone]?.gate }
        gate?.release()
        leave(zone)
    }

    /// Zones with a gate now (for tests: none once every write has ended).
    package var count: Int { entries.withLock { $0.count } }

    /// Writes waiting for `zone`'s turn now (for tests).
    package func waiting(_ zone: ZoneID) -> Int { entries.withLock { $0[zone]?.gate }?.waiting ?? 0 }

    private func leave(_ zone: ZoneID) {
        entries.withLock { entries in
            guard var entry = entries[zone] else { return }
            entry.users -= 1
            entries[zone] = entry.users > 0 ? entry : nil
        }
    }
}
