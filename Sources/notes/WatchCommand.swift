#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesModel

/// Where a watch stands: each scope's database change token and each zone's change
/// token, as one opaque string (`w1.` and base64url JSON) that `--since` takes.
///
/// A database token moves on only once every zone it reported has been fetched, so a
/// watch resumed from any printed position misses nothing; at worst it prints again
/// the rest of the page it stopped in.
struct WatchPosition: Codable, Equatable {
    var databases: [String: String] = [:]
    var zones: [String: String] = [:]

    static func key(_ zone: ZoneID) -> String { "\(zone.owner)/\(zone.name)" }

    var encoded: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = (try? encoder.encode(self)) ?? Data()
        return "w1."
            + data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    init() {}

    init(decoding token: String) throws(NotesError) {
        let wrong = NotesError(.invalidArguments, "\(token.prefix(40)) is not a position that notes watch printed (they start with w1.).")
        guard token.hasPrefix("w1."), token.utf8.count <= 1 << 20 else { throw wrong }
        var base64 = String(token.dropFirst(3)).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let position = try? JSONDecoder().decode(WatchPosition.self, from: data) else { throw wrong }
        self = position
    }

    /// Now: nothing before this is printed.
    static func now(_ client: NotesClient) async throws(NotesError) -> WatchPosition {
        var position = WatchPosition()
        for scope in DatabaseScope.allCases {
            // The database first: a zone token taken after it can only be newer.
            var changes = try await client.databaseChanges(scope: scope, since: nil)
            while changes.moreComing { changes = try await client.databaseChanges(scope: scope, since: changes.changeToken) }
            position.databases[scope.rawValue] = changes.changeToken
            for zone in try await client.zones(scope: scope) { position.zones[key(zone.id)] = zone.changeToken }
        }
        return position
    }
}

/// One change as `notes watch --json` prints it (one JSON object a line).
struct WatchEvent: Encodable {
    /// `saved`, `deleted` (a record), `zoneAdded` or `zoneRemoved` (a zone you own, or one shared with you).
    var change: String
    var scope: DatabaseScope
    var zone: ZoneID
    var recordName: String?
    var name: String?
    var type: RecordType?
    var by: String?
    var at: Date?
    var share: String?
    var shareTitle: String?
    /// Pass it to `--since` to go on from here.
    var position: String
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print changes to your notes and to the shares you take part in, as they happen: who, what, which share, when.",
        discussion: """
            Each line ends with a position; `--since POSITION` goes on from there without a gap \
            (changes made while no watch ran are printed first). Ctrl-C ends it. Deletions say \
            what went, not who deleted it.

            Examples:
              notes watch
              notes watch --json | jq -r '.name'
              notes watch --since w1.eyJkYXRh…
            """)

    @Option(help: ArgumentHelp("Go on from a position an earlier watch printed.", valueName: "POSITION"))
    var since: String?

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let client = try options.client()
            var position: WatchPosition
            if let since { position = try WatchPosition(decoding: since) } else { position = try await WatchPosition.now(client) }
            Self.endCleanlyOnInterrupt()
            FileHandle.standardError.write(Data("notes: watching from \(position.encoded) (Ctrl-C ends)\n".utf8))
            var printer = WatchPrinter(json: options.json)
            var pause = 0.1
            while true {
                do {
                    for try await _ in client.events() {
                        // `ready` (subscribed: catch up on what came before) and every notice.
                        try await Self.catchUp(client, &position, &printer)
                        pause = 0.1
                    }
                } catch let error as NotesError where error.code == .notAuthenticated || error.code == .permissionFailure {
                    throw error
                } catch {
                    FileHandle.standardError.write(Data("notes: the event stream ended (\(error)); trying again in \(pause) s\n".utf8))
                }
                try await Task.sleep(for: .seconds(pause))
                pause = min(pause * 2, 10)
            }
        }
    }

    /// Ctrl-C ends the watch with status 0, every printed line written out.
    static func endCleanlyOnInterrupt() {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .main)
        source.setEventHandler {
            fflush(stdout)
            Glibc.exit(0)
        }
        source.resume()
        interruptSource = source
    }

    /// Prints what changed since `position`, and moves it on.
    static func catchUp(_ client: NotesClient, _ position: inout WatchPosition, _ printer: inout WatchPrinter) async throws(NotesError) {
        for scope in DatabaseScope.allCases {
            var more = true
            while more {
                let changes: DatabaseChanges
                do {
                    changes = try await client.databaseChanges(scope: scope, since: position.databases[scope.rawValue])
                } catch  where error.code == .changeTokenExpired && position.databases[scope.rawValue] != nil {
                    // (The server moved to another database: every zone is listed again,
                    // and each is fetched from its own token, which still holds.)
                    position.databases[scope.rawValue] = nil
                    continue
                }
                for zone in changes.deletedZones where position.zones[WatchPosition.key(zone)] != nil {
                    position.zones[WatchPosition.key(zone)] = nil
                    printer.print(WatchEvent(change: "zoneRemoved", scope: scope, zone: zone, position: position.encoded))
                }
                for zone in changes.changedZones {
                    try await fetch(zone, scope: scope, client, &position, &printer)
                }
                // Only now: every zone it reported is fetched.
                position.databases[scope.rawValue] = changes.changeToken
                more = changes.moreComing
            }
        }
    }

    static func fetch(_ zone: ZoneID, scope: DatabaseScope, _ client: NotesClient, _ position: inout WatchPosition, _ printer: inout WatchPrinter) async throws(NotesError) {
        let key = WatchPosition.key(zone)
        guard let since = position.zones[key] else {
            // A zone new to this watch (made, or shared with you): from its current state on.
            if let current = try await client.zones(scope: scope).first(where: { $0.id == zone }) {
                position.zones[key] = current.changeToken
                printer.print(WatchEvent(change: "zoneAdded", scope: scope, zone: zone, position: position.encoded))
            }
            return
        }
        var token = since
        var more = true
        while more {
            let page = try await client.zoneChanges(zone, since: token)
            var events =
                page.records.map { record in
                    WatchEvent(
                        change: "saved", scope: scope, zone: zone, recordName: record.recordName, name: record.name, type: record.recordType,
                        by: record.modifiedBy, at: record.modifiedAt, share: record.shareID, position: "")
                } + page.deleted.map { WatchEvent(change: "deleted", scope: scope, zone: zone, recordName: $0, position: "") }
            // Each line carries where to go on from: the page's start until its last
            // line, which carries its end (a watch stopped mid-page prints the rest again).
            let before = position.encoded
            position.zones[key] = page.changeToken
            let after = position.encoded
            for index in events.indices {
                events[index].position = index == events.count - 1 ? after : before
                if let share = events[index].share { events[index].shareTitle = await printer.title(of: share, client) }
                printer.print(events[index])
            }
            token = page.changeToken
            more = page.moreComing
        }
    }
}

/// The signal source must outlive `endCleanlyOnInterrupt`.
nonisolated(unsafe) private var interruptSource: (any DispatchSourceSignal)?

/// Prints watch events as text or JSON lines, each written out at once (a pipe would
/// otherwise hold them in a buffer), and remembers share titles.
struct WatchPrinter {
    let json: Bool
    private var titles: [String: String] = [:]
    private let encoder: JSONEncoder = {
        let encoder = NotesJSON.encoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    init(json: Bool) {
        self.json = json
    }

    mutating func title(of share: String, _ client: NotesClient) async -> String? {
        if let known = titles[share] { return known }
        guard let found = try? await client.share(id: share) else { return nil }
        titles[share] = found.title
        return found.title
    }

    func print(_ event: WatchEvent) {
        if json {
            Swift.print(String(decoding: (try? encoder.encode(event)) ?? Data(), as: UTF8.self))
        } else {
            // Where the mount shows it (the default zone's notes are at the top of private/).
            let place =
                event.scope == .shared
                ? "shared/\(event.zone.owner)/\(event.zone.name)"
                : event.zone.name == ZoneID.defaultZoneName ? "private" : "private/\(event.zone.name)"
            let when = event.at.map { ISO8601.string(from: $0) } ?? ISO8601.string(from: Date())
            var line: String
            switch event.change {
            case "saved": line = "\(when)  \(event.by ?? "?") saved \(event.name ?? event.recordName ?? "?") in \(place)"
            case "deleted": line = "\(when)  \(event.recordName ?? "?") was deleted in \(place)"
            case "zoneAdded": line = "\(when)  \(place) appeared"
            default: line = "\(when)  \(place) is gone"
            }
            if let title = event.shareTitle { line += " (share “\(title)”)" }
            Swift.print(line + "  " + event.position)
        }
        fflush(stdout)
    }
}
