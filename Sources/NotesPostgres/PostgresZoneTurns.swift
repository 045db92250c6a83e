package import NotesModel
package import NotesWork

/// This instance's turn at each zone's change counter: one write per zone at a time,
/// taken by accounts in turns. Writes to a zone follow one another on its row lock
/// anyway; without a turn here, one account's queued batches to a zone would each hold a
/// pool connection while they waited for that lock, and stand in front of another
/// account's save to the same zone (PostgreSQL grants row locks first come, first
/// served). Writes to different zones take different turns.
package typealias PostgresZoneTurns = KeyedTurns<ZoneID>

extension KeyedTurns<ZoneID> {
    package convenience init() {
        self.init { zone in "the writer of zone \(zone.name)" }
    }
}
