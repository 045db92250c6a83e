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
    /// Most content bytes in one page of changes, past its first record: a page stops
    /// early (with `moreComing`) rather than carry 2,000 notes of 16 MiB. A page is in a
    /// mount's memory three times while it is read (the HTTP buffer, its bytes, the
    /// decoded records): at 32 MiB, the pages of its own uploads took a mount under
    /// fsstress to 241 MB. The same bound as an upload's.
    public static let maxChangesPageBytes = 8 * 1024 * 1024
    /// Most names in one lookup by record name.
    public static let maxLookupNames = 2_000
    /// Most content bytes in one lookup answer, past its first record; the names not
    /// reached are handed back to ask for again.
    public static let lookupAnswerBytes = 8 * 1024 * 1024
    /// Default page of a "changes since" fetch.
    public static let defaultChangesPage = 500
    /// Largest HTTP request body the server reads before answering 413.
    public static let maxRequestBytes = 64 * 1024 * 1024
    /// Most encoded content a client puts in one modify request (a single larger file
    /// still goes, alone). Well under the request limit: a batch is in a client's memory
    /// several times while it is read, encoded and sent (contents, their base64, the JSON
    /// body, the HTTP buffer), and a mount under fsstress peaked at 297 MB with batches
    /// of 32 MiB.
    public static let uploadBudgetBytes = 8 * 1024 * 1024
    /// Longest lifetime of anything that expires (a token, a public link): ten years.
    public static let maxLifetimeSeconds: Double = 10 * 365 * 86_400

    /// Checks a lifetime in seconds that came in as a number: finite and within
    /// `allowed`. Every such number is bounded before it is stored, because a stored
    /// value is read back on every later request.
    public static func validateLifetime(_ seconds: Double, field: String, allowsZero: Bool) throws(NotesError) {
        let lower: Double = allowsZero ? 0 : 1
        guard seconds.isFinite, seconds >= lower, seconds <= maxLifetimeSeconds else {
            let range = allowsZero ? "0 (no expiry) or 1 second to 10 years (315360000)" : "between 1 second and 10 years (315360000)"
            throw NotesError(.invalidArguments, "\(field) must be \(range); it was \(seconds).")
        }
    }

    // MARK: Guessing

    /// Wrong link passwords allowed per client address in one window; then 429 until
    /// the window ends. Counted in the store, so that several notesd share the count.
    public static let passwordFailuresPerClient = 10
    /// Wrong passwords allowed per link in one window, from everyone together: slows a
    /// guesser with many addresses, at the price of locking the link for the window.
    public static let passwordFailuresPerLink = 100
    /// The window of both counts, in seconds.
    public static let passwordWindowSeconds: Double = 15 * 60
    /// Sign-in links that failed (forged, used, expired) per client address in one
    /// password window; then 429 until it ends.
    public static let signInFailuresPerClient = 10

    // MARK: Sign-in links

    /// How long a sign-in link works when its maker does not say: a day.
    public static let signInLinkDefaultSeconds: Double = 24 * 60 * 60
    /// The longest a sign-in link may work: 30 days.
    public static let signInLinkMaxSeconds: Double = 30 * 24 * 60 * 60
    /// Sign-in links waiting to be used per account.
    public static let signInLinksPerAccount = 20
    /// Unknown or invalid bearer tokens answered per client address in one minute;
    /// then 429 until the minute ends (counted in each notesd's memory).
    public static let tokenFailuresPerClient = 30

    // MARK: Connections

    /// Requests one caller (an account, or a client address without one) may have under
    /// way at once; the next gets 429. Event streams are bounded apart.
    public static let requestsInFlightPerCaller = 32
    /// Request bodies one caller may have under way at once, by their declared length
    /// (one request alone is always let in, up to `maxRequestBytes`).
    public static let requestBytesInFlightPerCaller = 128 * 1024 * 1024

    /// While other callers use notesd, one caller's request bodies of 64 KiB or more are
    /// let in at this many bytes a second (`TransferPace`), after a first
    /// `pacedBurstSeconds` of them.
    public static let pacedUploadBytesPerSecond = 16 * 1024 * 1024
    /// As `pacedUploadBytesPerSecond`, for answers of 64 KiB or more (reading costs
    /// less than storing).
    public static let pacedDownloadBytesPerSecond = 32 * 1024 * 1024
    public static let pacedBurstSeconds = 1.0
    /// While other callers use notesd, the part of the time one caller's writes may hold
    /// a writer (`TransferPace`): a restore of 10,000 notes, or a stream of imports, then
    /// takes turns with rests between them.
    public static let pacedWriterShare = 0.25

    /// Milliseconds a refused request (429) waits before its answer: a client that
    /// ignores `Retry-After` and asks again at once can then send a few requests a
    /// second on each connection, not thousands in all (200 guesses at a time from one
    /// address, each refused at once, took a core of notesd's two to answer).
    public static let refusalDelayMilliseconds = 200
    /// Refusals one caller gets a second at most: the rest wait their turn
    /// (`RefusalPace`), so that a client asking again at once on many connections sends
    /// this many requests a second, not bursts of as many as it has connections.
    public static let refusalsPerSecondPerCaller = 100

    /// Event streams one account may hold open at once (a mount needs one).
    public static let maxEventStreamsPerAccount = 64
    /// TCP connections one client address may hold open at once.
    public static let maxConnectionsPerClient = 256
    /// Seconds a connection may sit without a request under way before notesd closes
    /// it: longer than HTTP clients keep idle pooled connections (AsyncHTTPClient: 60 s),
    /// so that notesd does not close one a client is about to use.
    public static let idleConnectionSeconds = 300

    /// Seconds a request body may take on top of the time its size earns at
    /// `minimumBodyBytesPerSecond` (Apache's mod_reqtimeout works the same way): a
    /// client that sends a body a byte a second holds a connection this long, no more.
    public static let requestBodySeconds = 30
    /// The slowest upload notesd waits for once the grace is spent: 4 KiB/s takes a
    /// 64 MiB batch in under 5 hours, so only a client that stalls is cut off.
    public static let minimumBodyBytesPerSecond = 4096

    // MARK: Public pages

    /// Largest note a public page renders as Markdown; a larger one is shown as plain
    /// text (cmark-gfm's time and memory grow with the note, and a page this long is
    /// read as text anyway).
    public static let renderedNoteBytes = 2 * 1024 * 1024

    // MARK: History

    /// Default and largest page of a record's versions; a page also stops past
    /// `maxChangesPageBytes` of text, after its first version.
    public static let defaultVersionsPage = 100
    /// Search results per page: by default, and at most.
    public static let defaultSearchPage = 20
    public static let maxSearchPage = 100
    /// Results past this many (over all pages) are not ranked: a search that matches
    /// everything costs its caller a bounded sort.
    public static let deepestSearchResult = 1_000
    /// How long a search waits for the index to take in the caller's own latest saves
    /// before it answers without them (`complete: false`).
    public static let searchIndexWaitSeconds = 2.0
    public static let maxVersionsPage = 1_000
}
