import Foundation
import Hummingbird
import NotesModel

/// The per-account notification stream, as server-sent events.
///
/// The first event is `ready` (the subscription is live, so nothing committed after
/// it is missed); then one `change` event per notice, JSON of `ChangeNotice`. Clients
/// treat each as a hint and fetch changes. Comment lines keep idle connections alive.
struct EventController {
    let notifier: ChangeNotifier

    func addRoutes(to group: RouterGroup<NotesRequestContext>) {
        group.get("events") { _, context in
            let account = try context.account().name
            guard let stream = notifier.subscribe(account: account, tokenID: context.identity?.tokenID, limit: Limits.maxEventStreamsPerAccount) else {
                throw NotesError(
                    .requestRateLimited,
                    "\(account) already has \(Limits.maxEventStreamsPerAccount) event streams open (each mount holds one); close some and try again.",
                    retryAfter: 30)
            }
            // A stream ends when the token it was opened with expires, as every request
            // made with that token is refused from then on.
            let expiry = context.identity?.tokenExpiresAt.map { date in
                Task { [notifier] in
                    try await Task.sleep(for: .milliseconds(Int64(max(0, date.timeIntervalSinceNow) * 1000)))
                    if let id = context.identity?.tokenID { notifier.endStreams(tokenID: id) }
                }
            }
            let body = ResponseBody { writer in
                defer { expiry?.cancel() }
                try await writer.write(ByteBuffer(string: "event: ready\ndata: {}\n\n"))
                let encoder = NotesJSON.encoder()
                for await event in stream {
                    switch event {
                    case .change(let notice):
                        let json = String(decoding: try encoder.encode(notice), as: UTF8.self)
                        try await writer.write(ByteBuffer(string: "event: change\ndata: \(json)\n\n"))
                    case .heartbeat:
                        try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    }
                }
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: body)
        }
    }
}
