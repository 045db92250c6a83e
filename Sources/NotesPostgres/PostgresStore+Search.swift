public import NotesModel

extension PostgresStore {
    public func search(_ request: API.Search, actor: String) async throws(NotesError) -> API.SearchResults {
        throw NotesError(.serviceUnavailable, "Search is not available on PostgreSQL yet; it is on the embedded SQLite store.")
    }
}
