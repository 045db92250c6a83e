import AsyncHTTPClient
import Foundation
import NIOCore
public import NotesModel

extension NotesClient {
    /// What the event stream delivers.
    public enum StreamEvent: Sendable, Equatable {
        /// The subscription is live: nothing committed from now on will be missed.
        case ready
        case change(ChangeNotice)
    }

    /// The account's notification stream (server-sent events). It ends when the
    /// server closes it; the caller reconnects and fetches changes to catch up.
    public func events() -> AsyncThrowingStream<StreamEvent, any Error> {
        let request = request(.GET, "/v1/events")
        let endpoint = endpoint
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let response = try await http.execute(request, timeout: .hours(24 * 365))
                    try checkAPIVersion(response.headers)
                    guard response.status == .ok else {
                        let data = Data((try await response.body.collect(upTo: 1 << 20)).readableBytesView)
                        if let body = try? NotesJSON.decoder().decode(NotesJSON.ErrorBody.self, from: data) {
                            throw body.notesError
                        }
                        throw NotesError(.internalError, "notesd answered HTTP \(response.status.code) to the event stream.")
                    }
                    var parser = ServerSentEventParser()
                    for try await buffer in response.body {
                        for event in parser.feed(String(buffer: buffer)) {
                            switch event.name {
                            case "ready":
                                continuation.yield(.ready)
                            case "change":
                                if let notice = try? NotesJSON.decoder().decode(ChangeNotice.self, from: Data(event.data.utf8)) {
                                    continuation.yield(.change(notice))
                                }
                            default:
                                break
                            }
                        }
                    }
                    continuation.finish()
                } catch let error as NotesError {
                    continuation.finish(throwing: error)
                } catch {
                    continuation.finish(throwing: NotesError(.serviceUnavailable, "The event stream from notesd at \(endpoint) broke: \(error)"))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// Splits a server-sent-event byte stream into events (`event:` and `data:` lines,
/// ended by a blank line); comment lines are keep-alives and are skipped.
struct ServerSentEventParser {
    struct Event: Equatable {
        var name: String
        var data: String
    }

    private var pending = ""

    mutating func feed(_ text: String) -> [Event] {
        pending += text
        var events: [Event] = []
        while let range = pending.range(of: "\n\n") {
            let block = pending[..<range.lowerBound]
            pending.removeSubrange(..<range.upperBound)
            var name = "message"
            var data: [Substring] = []
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") { continue }
                if line.hasPrefix("event:") { name = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
                if line.hasPrefix("data:") { data.append(line.dropFirst(5).drop { $0 == " " }) }
            }
            if !data.isEmpty || name != "message" {
                events.append(Event(name: name, data: data.joined(separator: "\n")))
            }
        }
        return events
    }
}
