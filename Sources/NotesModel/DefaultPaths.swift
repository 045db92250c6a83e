/// The default locations of SPEC section 8, shared by `notesd` and its clients so
/// that both find the same socket without configuration.
public enum DefaultPaths {
    /// `$NOTES_DATA_DIR`, else `$XDG_DATA_HOME/notes`, else `~/.local/share/notes`.
    public static func dataDir(environment: [String: String], home: String) -> String {
        environment["NOTES_DATA_DIR"] ?? environment["XDG_DATA_HOME"].map { "\($0)/notes" } ?? "\(home)/.local/share/notes"
    }

    /// `$NOTES_SOCKET`, else `$XDG_RUNTIME_DIR/notes/notesd.sock`, else `DATA_DIR/notesd.sock`.
    public static func socket(environment: [String: String], home: String) -> String {
        environment["NOTES_SOCKET"]
            ?? environment["XDG_RUNTIME_DIR"].map { "\($0)/notes/notesd.sock" }
            ?? "\(dataDir(environment: environment, home: home))/notesd.sock"
    }
}
