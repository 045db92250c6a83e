/// Hard limits of the service; each one is enforced by the server, answered with
/// `limitExceeded` (HTTP 413) or `invalidArguments`, and leaves the data unchanged.
public enum Limits {
    /// Largest note body or file attachment, in bytes.
    public static let maxBodyBytes = 16 * 1024 * 1024
    /// Largest modify operation: saves plus deletes (CloudKit's limit).
    public static let maxBatchItems = 400
    /// Largest record, zone or account name, in UTF-8 bytes (a POSIX file name).
    public static let maxNameBytes = 255
    /// Most participants in one share, the owner included.
    public static let maxParticipants = 100
    /// Largest page of a "changes since" fetch.
    public static let maxChangesPage = 2_000
    /// Default page of a "changes since" fetch.
    public static let defaultChangesPage = 500
    /// Largest HTTP request body the server reads before answering 413.
    public static let maxRequestBytes = 64 * 1024 * 1024
}
