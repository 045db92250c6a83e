public import NotesModel

/// The order in which a modify's items are written, the same on every backend, and
/// which item a failure is charged to.
///
/// Deletes go first when they can: a folder whose children are gone already or deleted
/// by this operation. A folder whose children this operation's saves move out waits
/// until the saves are written (`waitForSaves`). The saves come parents first, those with
/// a change tag before new ones (`RecordRules.ordered`); a backend that writes saves
/// together writes what is left when it is told `savesDone`. Then the deletes that
/// waited. An error stops the run and names the item under way (`failure`), every other
/// item `batchRequestFailed`.
///
/// A backend drives it with its own writer, synchronous (SQLite, inside its transaction)
/// or not (PostgreSQL):
///
///     var run = ModifyRun(request, saves: ordered)
///     while let step = run.next() {
///         switch step {
///         case .delete(let delete, let savedParents):
///             if try !writer.delete(delete, deleting: run.deleting, savedParents: savedParents) { run.waitForSaves(delete) }
///         case .save(let save): saved.append(try writer.save(save))
///         case .savesDone: try writer.finish()
///         }
///     }
public struct ModifyRun: Sendable {
    public enum Step: Sendable {
        /// A delete, with the parents the operation's saves give records (empty once the
        /// saves are written: the database then holds them).
        case delete(RecordDelete, savedParents: [String: String])
        case save(RecordSave)
        /// Every save is decided: a backend writes what it holds back.
        case savesDone
    }

    public let deletes: [RecordDelete]
    public let saves: [RecordSave]
    /// The record names the operation deletes.
    public let deleting: Set<String>
    private let savedParents: [String: String]
    private var waiting: [RecordDelete] = []
    private var position = 0
    private var phase = Phase.deletes
    /// The record the step under way is about (the last save, for `savesDone`).
    public private(set) var current = ""

    private enum Phase {
        case deletes, saves, savesDone, waited, done
    }

    /// - Parameter saves: the request's saves in the order they are written
    ///   (`RecordRules.ordered`).
    public init(_ request: ModifyRequest, saves: [RecordSave]) {
        deletes = request.deletes
        self.saves = saves
        deleting = Set(request.deletes.map(\.recordName))
        savedParents = RecordRules.savedParents(saves)
    }

    public mutating func next() -> Step? {
        while true {
            switch phase {
            case .deletes:
                if position < deletes.count {
                    defer { position += 1 }
                    current = deletes[position].recordName
                    return .delete(deletes[position], savedParents: savedParents)
                }
                (phase, position) = (.saves, 0)
            case .saves:
                if position < saves.count {
                    defer { position += 1 }
                    current = saves[position].recordName
                    return .save(saves[position])
                }
                phase = .savesDone
            case .savesDone:
                phase = .waited
                position = 0
                current = saves.last?.recordName ?? current
                return .savesDone
            case .waited:
                if position < waiting.count {
                    defer { position += 1 }
                    current = waiting[position].recordName
                    return .delete(waiting[position], savedParents: [:])
                }
                phase = .done
            case .done:
                return nil
            }
        }
    }

    /// The delete just stepped cannot go yet: its folder still holds records that the
    /// saves move out. It comes again after the saves.
    public mutating func waitForSaves(_ delete: RecordDelete) {
        // (Once the saves are written a folder cannot wait again: without the saves'
        // parents, a delete of a folder that still holds records is refused.)
        guard phase == .deletes else { return }
        waiting.append(delete)
    }

    /// `error` charged to the item under way, every other item not applied.
    public func failure(_ error: NotesError) -> NotesError {
        RecordRules.batchFailure(error, at: current, deletes: deletes, saves: saves)
    }
}
