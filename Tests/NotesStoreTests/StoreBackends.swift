import Foundation
import GRDB
import Logging
import NotesModel
@testable import NotesPostgres
import PostgresNIO

/// A `PostgresDatabase` with its pool running, for as long as this object lives: a few
/// connections at most, closed when the test lets go of it.
final class PostgresPool: Sendable {
    let database: NotesPostgres.PostgresDatabase
    private let running: Task<Void, Never>

    init(url: String, maximumConnections: Int = 4) throws {
        let database = NotesPostgres.PostgresDatabase(try PostgresLocation(url: url), maximumConnections: maximumConnections)
        self.database = database
        running = Task { await database.run() }
    }

    deinit { running.cancel() }
}

extension Fixture {
    /// Changes the stored data behind the store's back, as an older notesd would have
    /// written it: `sql` with `?` for each of `arguments`.
    func playOlderVersion(_ sql: String, _ arguments: [String]) async throws {
        switch backend {
        case .sqlite:
            try await DatabaseQueue(path: location).write { db in try db.execute(sql: sql, arguments: StatementArguments(arguments)) }
        case .postgres:
            var numbered = ""
            var bindings = PostgresBindings()
            for character in sql {
                if character == "?" {
                    bindings.append(arguments[bindings.count])
                    numbered += "$\(bindings.count)"
                } else {
                    numbered.append(character)
                }
            }
            let query = PostgresQuery(unsafeSQL: numbered, binds: bindings)
            try await pool!.database.client.withConnection { connection in
                for try await _ in try await connection.query(query, logger: Logger(label: "test")) {}
            }
        }
    }
}

extension Fixture {
    /// A number read straight from the stored data (`sql` returns one integer), to see
    /// what the store keeps behind its API.
    func storedCount(_ sql: String) async throws -> Int64 {
        switch backend {
        case .sqlite:
            return try await DatabaseQueue(path: location).read { db in try Int64.fetchOne(db, sql: sql) ?? 0 }
        case .postgres:
            return try await pool!.database.client.withConnection { connection in
                var value: Int64 = 0
                for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test")) {
                    value = try row.decode(Int64.self)
                }
                return value
            }
        }
    }
}
