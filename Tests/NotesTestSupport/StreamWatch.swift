public import NotesClient

/// Follows an account's event stream in the background: whether it said `ready`, and
/// whether it ended.
public actor StreamWatch {
    public private(set) var isReady = false
    public private(set) var hasEnded = false

    func ready() { isReady = true }
    func ended() { hasEnded = true }

    /// Opens `client`'s event stream and follows it until it ends.
    public nonisolated static func start(_ client: NotesClient) -> StreamWatch {
        let watch = StreamWatch()
        Task {
            do {
                for try await event in client.events() where event == .ready { await watch.ready() }
            } catch {}
            await watch.ended()
        }
        return watch
    }
}
