import Foundation
public import NotesModel

/// How several notesd on one database tell each other what changed: every write
/// transaction that produces change notices also runs `pg_notify(channel, payload)`, so
/// PostgreSQL delivers the payload to every instance that `LISTEN`s on the channel when,
/// and only when, the transaction commits, in commit order (see `PostgresChangeListener`).
///
/// A payload is compact JSON, `{"i":INSTANCE,"s":SEQ,"n":[[ACCOUNT,"p"|"s",OWNER,ZONE],…]}`
/// (a notice for a whole scope has no OWNER and ZONE): the instance that committed (so it
/// can skip its own echoes), the last change number the commit took (the change token's
/// number; for logs and ordering), and the notices. PostgreSQL refuses payloads of 8,000
/// bytes or more: larger sets are split into several notifications of the same
/// transaction (delivered together at commit), and past `maximumPayloads` they become one
/// "fetch everything" notice per account and scope (zone `nil`) before being split.
public struct PostgresChangeFeed: Sendable, Equatable {
    /// The channel every instance of one database uses.
    public static let defaultChannel = "notes_changes"
    /// Bytes of one payload at most (PostgreSQL: fewer than 8,000).
    public static let maximumPayloadBytes = 7_900
    /// Notifications one commit sends at most before its notices are coarsened.
    public static let maximumPayloads = 8

    public let channel: String
    /// This instance's name in payloads: its own echoes are recognised by it.
    public let instance: String

    public init(channel: String = defaultChannel, instance: String) {
        self.channel = channel
        self.instance = instance
    }

    /// A name no other running instance has: host, process and a random part.
    public static func uniqueInstanceName() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        return "\(host)-\(ProcessInfo.processInfo.processIdentifier)-\(String(UInt32.random(in: .min ... .max), radix: 36))"
    }

    /// Streams every instance must end at once: those opened with a revoked token, or by
    /// an account disabled or deleted.
    public enum Ending: Sendable, Equatable {
        case token(String)
        case account(String)
    }

    /// A decoded payload: notices, or (`{"i":…,"e":[["t",ID],["a",NAME]]}`) endings.
    public struct Message: Sendable, Equatable {
        public var instance: String
        public var seq: Int64
        public var notices: [ChangeNotice]
        public var endings: [Ending] = []
    }

    /// The payload that tells every instance to end these streams (a few ids and names:
    /// far under PostgreSQL's 8,000 bytes).
    /// How every payload this instance sends begins: its own notifications come back to
    /// its listener, and are known by this before any JSON is read.
    public var ownPrefix: String { "{\"i\":\(Self.quoted(instance))," }

    public func payload(ending: [Ending]) -> String {
        let items = ending.map { ending in
            switch ending {
            case .token(let id): "[\"t\",\(Self.quoted(id))]"
            case .account(let name): "[\"a\",\(Self.quoted(name))]"
            }
        }
        return "{\"i\":\(Self.quoted(instance)),\"e\":[\(items.joined(separator: ","))]}"
    }

    /// The payloads that announce `notices` (each under `maximumPayloadBytes`; past
    /// `maximumPayloads` of them, one notice per account and scope).
    public func payloads(for notices: some Collection<ChangeNotice>, seq: Int64, maximumPayloads: Int = Self.maximumPayloads) -> [String] {
        let sorted = notices.sorted { Self.fields($0).lexicographicallyPrecedes(Self.fields($1)) }
        let precise = pack(sorted, seq: seq)
        if precise.count <= maximumPayloads { return precise }
        // Too many to send one by one: each account fetches all it sees.
        let coarse = Set(sorted.map { ChangeNotice(account: $0.account, scope: $0.scope, zone: nil) })
        return pack(coarse.sorted { Self.fields($0).lexicographicallyPrecedes(Self.fields($1)) }, seq: seq)
    }

    /// Greedy packing: as many notices per payload as fit.
    private func pack(_ notices: [ChangeNotice], seq: Int64) -> [String] {
        let head = "{\"i\":\(Self.quoted(instance)),\"s\":\(seq),\"n\":["
        var payloads: [String] = []
        var current = head
        var count = 0
        for notice in notices {
            var item = Self.encode(notice)
            if head.utf8.count + item.utf8.count + 2 > Self.maximumPayloadBytes {
                // Names are at most 255 bytes, so this cannot happen; still, never send
                // what PostgreSQL would refuse (the commit would fail): the account fetches all.
                item = Self.encode(ChangeNotice(account: notice.account, scope: notice.scope, zone: nil))
                if head.utf8.count + item.utf8.count + 2 > Self.maximumPayloadBytes { continue }
            }
            if count > 0 && current.utf8.count + 1 + item.utf8.count + 2 > Self.maximumPayloadBytes {
                payloads.append(current + "]}")
                current = head
                count = 0
            }
            current += (count > 0 ? "," : "") + item
            count += 1
        }
        if count > 0 { payloads.append(current + "]}") }
        return payloads
    }

    /// Reads a payload; nil if it is not one of ours.
    public static func decode(_ payload: String) -> Message? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let instance = object["i"] as? String
        else { return nil }
        if let items = object["e"] as? [[String]] {
            var endings: [Ending] = []
            for item in items {
                guard item.count == 2 else { return nil }
                switch item[0] {
                case "t": endings.append(.token(item[1]))
                case "a": endings.append(.account(item[1]))
                default: return nil
                }
            }
            return Message(instance: instance, seq: 0, notices: [], endings: endings)
        }
        guard let seq = (object["s"] as? NSNumber)?.int64Value,
            let items = object["n"] as? [[String]]
        else { return nil }
        var notices: [ChangeNotice] = []
        for item in items {
            guard item.count == 2 || item.count == 4, let scope = scopes[item[1]] else { return nil }
            let zone = item.count == 4 ? ZoneID(owner: item[2], name: item[3]) : nil
            notices.append(ChangeNotice(account: item[0], scope: scope, zone: zone))
        }
        return Message(instance: instance, seq: seq, notices: notices)
    }

    private static let scopes: [String: DatabaseScope] = ["p": .private, "s": .shared]

    private static func fields(_ notice: ChangeNotice) -> [String] {
        [notice.account, notice.scope.rawValue, notice.zone?.owner ?? "", notice.zone?.name ?? ""]
    }

    private static func encode(_ notice: ChangeNotice) -> String {
        var parts = [quoted(notice.account), notice.scope == .private ? "\"p\"" : "\"s\""]
        if let zone = notice.zone { parts += [quoted(zone.owner), quoted(zone.name)] }
        return "[" + parts.joined(separator: ",") + "]"
    }

    /// A JSON string literal (names hold no control characters, but escape them anyway).
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
