/// The release of notes and the major version of its HTTP API, which every answer of
/// notesd names (`Notes-API-Version`) so that a client can tell an API it does not
/// know from a failure.
public enum NotesVersion {
    public static let release = "0.16.0"
    /// Bumped only by changes that break clients; additions keep it.
    public static let api = 1
    public static let apiHeader = "Notes-API-Version"
}
