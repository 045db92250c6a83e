/// Who the work under way is for, so that gates deep in a store charge it to the caller
/// without every call passing it down: notesd's identity middleware binds it for each
/// request (`account:NAME`, or `client:ADDRESS` for a request without an account).
public enum WorkCaller {
    @TaskLocal public static var bound: String?

    /// The caller of the request under way, or `notesd` for notesd's own work (thinning
    /// versions, emptying the trash), which takes its turn like any account.
    public static var current: String { bound ?? notesd }

    /// notesd's own work: it waits its turn at a gate but is never refused there (what it
    /// does is bounded by its own design, and refusing it would only fail it).
    public static let notesd = "notesd"
}
