import Foundation
import GRDB
import NotesModel
import NotesStoreRules

/// Large contents written apart from the modify that uses them (`SeparateContents`).
extension SQLiteStore {
    /// How long a content written apart may wait for its modify before the retention
    /// pass deletes it (only a crash between the two leaves one that long).
    static let abandonedContentSeconds: Double = 3_600

    /// Writes the large contents of `saves` into `contents`, each group in a transaction
    /// of its own taken in the caller's turn, and returns each record name's content id.
    /// Writes nothing for a caller who may save nothing in the zone: the modify itself
    /// then refuses them with its reason. Contents already written are deleted again if
    /// a later group fails.
    func writeApart(_ saves: [RecordSave], in zone: ZoneID, actor: String) async throws(NotesError) -> [String: Int64] {
        let groups = SeparateContents.groups(saves)
        guard !groups.isEmpty else { return [:] }
        let maySave = try await read { db in try ZoneAccess.load(db, zone: zone, actor: actor).maySaveSomething }
        guard maySave else { return [:] }
        var written: [String: Int64] = [:]
        do {
            for group in groups {
                let ids: [(String, Int64)] = try await write { context in
                    try group.map { index in
                        let save = saves[index]
                        try context.db.cachedStatement(sql: "INSERT INTO contents (owner, body, bytes, size) VALUES (?, ?, ?, ?)").execute(arguments: [
                            zone.owner, StoredRecord.storedText(save.body), save.bytes, save.contentSize,
                        ])
                        let id = context.db.lastInsertedRowID
                        try context.db.cachedStatement(sql: "INSERT INTO staged_contents (content_id, staged_at) VALUES (?, ?)").execute(arguments: [
                            id, context.now.storedValue,
                        ])
                        return (save.recordName, id)
                    }
                }
                for (name, id) in ids { written[name] = id }
            }
        } catch {
            await dropWrittenApart(Array(written.values))
            throw error
        }
        return written
    }

    /// Inside the modify's transaction: its contents are in use, and count toward
    /// `owner`'s storage (`bytes`), from now on. Throws if one of them is gone (deleted as
    /// abandoned), changing nothing.
    static func takeWrittenApart(_ db: Database, _ ids: some Collection<Int64>, charging bytes: Int64, to owner: String) throws {
        guard !ids.isEmpty else { return }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
        try db.execute(sql: "DELETE FROM staged_contents WHERE content_id IN (\(placeholders))", arguments: StatementArguments(Array(ids)))
        guard db.changesCount == ids.count else {
            throw NotesError(.serviceUnavailable, "The server dropped this request's contents while it waited; send it again.")
        }
        try db.execute(sql: "INSERT OR IGNORE INTO usage (owner, bytes) VALUES (?, 0)", arguments: [owner])
        try db.execute(sql: "UPDATE usage SET bytes = bytes + ? WHERE owner = ?", arguments: [bytes, owner])
    }

    /// Deletes contents written for a modify that did not commit, a few hundred at a time.
    func dropWrittenApart(_ ids: [Int64]) async {
        for start in stride(from: 0, to: ids.count, by: 200) {
            let chunk = Array(ids[start..<min(start + 200, ids.count)])
            do {
                try await write { context in
                    try Self.drop(context.db, where: "content_id IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ",")))", StatementArguments(chunk))
                }
            } catch {
                logger.warning("contents of a failed modify stay until the retention pass", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Deletes contents whose modify never came (notesd stopped in between), in the
    /// retention pass.
    func dropAbandonedContents() async throws(NotesError) {
        let before = clock().storedValue - Self.abandonedContentSeconds
        try await write { context in try Self.drop(context.db, where: "staged_at < ?", [before]) }
    }

    private static func drop(_ db: Database, where filter: String, _ arguments: StatementArguments) throws {
        try db.execute(sql: "DELETE FROM contents WHERE id IN (SELECT content_id FROM staged_contents WHERE \(filter))", arguments: arguments)
        try db.execute(sql: "DELETE FROM staged_contents WHERE \(filter)", arguments: arguments)
    }
}
