import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Who may do what, as one table: every operation of `docs/openapi.yaml` × every kind of
/// caller × the record it acts on (inside the share, or beside it in the owner's zone),
/// through a real notesd over TCP. Each cell runs against a fresh share, so one cell's
/// change cannot decide the next. A route in the document without a row fails the test.
@Suite struct RightsMatrixTests {
    enum Caller: String, CaseIterable {
        case owner, readWrite, readOnly, linkJoiner, removed, pending, stranger, anonymous, expired
    }

    enum Object: String {
        case shared, outside, none
    }

    /// One world per cell: alice's zone holding `shared` (shared: bob read-write, carol
    /// read-only, dave removed, erin invited and pending, gina joined through its public
    /// read-only link) and `outside` (not shared).
    struct World {
        var zone: ZoneID
        var share: Share
        var tokens: [Caller: String]
        var aliceToken: String
        /// The change tags of `shared` and `outside`, for saves that change them.
        var tags: [Object: String]
    }

    /// What a cell expects: a status and, for reads, whether the object's content may show.
    struct Expected: Equatable, CustomStringConvertible {
        var status: Int
        var reveals: Bool = false
        var description: String { "\(status)\(reveals ? "+" : "")" }
    }

    struct Operation: Sendable {
        var id: String
        var objects: [Object]
        /// The request: method, path, JSON body.
        var request: @Sendable (World, Object) -> (String, String, String?)
        var expected: @Sendable (Caller, Object) -> Expected
    }

    static let accountCallers: [Caller] = [.owner, .readWrite, .readOnly, .linkJoiner, .removed, .pending, .stranger]

    static func json(_ value: some Encodable) -> String {
        String(decoding: try! NotesJSON.encoder().encode(value), as: UTF8.self)
    }

    /// The rows. Rules: no identity → 401; admin calls → 403 for every account; a thing
    /// the caller may not see → 403 when it names a zone or share they have no part in,
    /// and reads leave out what is outside their share.
    static let operations: [Operation] = {
        func any(_ ok: Int) -> @Sendable (Caller, Object) -> Expected {
            { caller, _ in Expected(status: [.anonymous, .expired].contains(caller) ? 401 : ok) }
        }
        func admin() -> @Sendable (Caller, Object) -> Expected {
            { caller, _ in Expected(status: [.anonymous, .expired].contains(caller) ? 401 : 403) }
        }
        let record: @Sendable (Object) -> String = { object in object == .shared ? "shared" : "outside" }
        return [
            Operation(id: "health", objects: [.none], request: { _, _ in ("GET", "/healthz", nil) }, expected: { _, _ in Expected(status: 200) }),
            Operation(id: "ready", objects: [.none], request: { _, _ in ("GET", "/readyz", nil) }, expected: { _, _ in Expected(status: 200) }),
            Operation(id: "metrics", objects: [.none], request: { _, _ in ("GET", "/metrics", nil) }, expected: admin()),
            // The share's public link is read-only: its page is the same for everyone,
            // token or none.
            Operation(id: "publicPage", objects: [.none], request: { w, _ in ("GET", "/s/\(w.share.urlToken)", nil) }, expected: { _, _ in Expected(status: 200) }),
            Operation(id: "publicSitePath", objects: [.none], request: { w, _ in ("GET", "/s/\(w.share.urlToken)/shared.html", nil) }, expected: { _, _ in Expected(status: 200) }),
            // ... and a link without a password has nothing to unlock: back to the page.
            Operation(id: "unlockPublicPage", objects: [.none], request: { w, _ in ("POST", "/s/\(w.share.urlToken)", "password=x") }, expected: { _, _ in Expected(status: 303) }),
            Operation(
                id: "unlockPublicSitePath", objects: [.none], request: { w, _ in ("POST", "/s/\(w.share.urlToken)/shared.html", "password=x") },
                expected: { _, _ in Expected(status: 303) }),
            Operation(id: "whoami", objects: [.none], request: { _, _ in ("GET", "/v1/whoami", nil) }, expected: any(200)),
            Operation(id: "listAccounts", objects: [.none], request: { _, _ in ("GET", "/v1/accounts", nil) }, expected: admin()),
            Operation(
                id: "createAccount", objects: [.none], request: { _, _ in ("POST", "/v1/accounts", #"{"name":"x\#(UInt32.random(in: 0...UInt32.max))"}"#) }, expected: admin()),
            Operation(id: "updateAccount", objects: [.none], request: { _, _ in ("PATCH", "/v1/accounts/frank", #"{"disabled":true}"#) }, expected: admin()),
            Operation(id: "deleteAccount", objects: [.none], request: { _, _ in ("DELETE", "/v1/accounts/frank", nil) }, expected: admin()),
            Operation(id: "listAccountTokens", objects: [.none], request: { _, _ in ("GET", "/v1/accounts/alice/tokens", nil) }, expected: admin()),
            Operation(id: "issueToken", objects: [.none], request: { _, _ in ("POST", "/v1/accounts/alice/tokens", "{}") }, expected: admin()),
            Operation(id: "listSignInLinks", objects: [.none], request: { _, _ in ("GET", "/v1/accounts/alice/sign-in-links", nil) }, expected: admin()),
            Operation(id: "makeSignInLink", objects: [.none], request: { _, _ in ("POST", "/v1/accounts/alice/sign-in-links", "{}") }, expected: admin()),
            Operation(id: "revokeSignInLink", objects: [.none], request: { _, _ in ("DELETE", "/v1/sign-in-links/0123456789abcdef", nil) }, expected: admin()),
            // Needs no identity: a token presented or not, what is not a link is refused alike.
            Operation(
                id: "signIn", objects: [.none], request: { _, _ in ("POST", "/v1/sign-in", #"{"link":"not a link"}"#) }, expected: { _, _ in Expected(status: 400) }),
            Operation(id: "signInPage", objects: [.none], request: { _, _ in ("GET", "/sign-in", nil) }, expected: { _, _ in Expected(status: 200) }),
            Operation(id: "usage", objects: [.none], request: { _, _ in ("GET", "/v1/usage", nil) }, expected: any(200)),
            Operation(id: "listTokens", objects: [.none], request: { _, _ in ("GET", "/v1/tokens", nil) }, expected: any(200)),
            Operation(id: "createToken", objects: [.none], request: { _, _ in ("POST", "/v1/tokens", #"{"label":"matrix"}"#) }, expected: any(201)),
            // Alice's token: hers to revoke; anyone else's is "no such token".
            Operation(
                id: "revokeToken", objects: [.none], request: { w, _ in ("DELETE", "/v1/tokens/\(w.aliceToken)", nil) },
                expected: { caller, _ in
                    Expected(status: [.anonymous, .expired].contains(caller) ? 401 : caller == .owner ? 200 : 404)
                }),
            Operation(id: "listZones", objects: [.none], request: { _, _ in ("GET", "/v1/zones?scope=shared", nil) }, expected: any(200)),
            Operation(id: "createZone", objects: [.none], request: { _, _ in ("POST", "/v1/zones", #"{"name":"z\#(UInt32.random(in: 0...UInt32.max))"}"#) }, expected: any(201)),
            Operation(
                id: "deleteZone", objects: [.none], request: { w, _ in ("POST", "/v1/zones/delete", json(API.ZoneRef(zone: w.zone))) },
                expected: { caller, _ in
                    Expected(status: [.anonymous, .expired].contains(caller) ? 401 : caller == .owner ? 200 : 403)
                }),
            Operation(
                id: "modifyRecords", objects: [.shared, .outside],
                request: { w, object in
                    (
                        "POST", "/v1/records/modify",
                        json(
                            ModifyRequest(
                                zone: w.zone,
                                saves: [
                                    RecordSave(
                                        recordName: record(object), recordType: .note, name: "\(record(object)).md", body: "changed by the caller", changeTag: w.tags[object])
                                ]))
                    )
                },
                expected: { caller, object in
                    switch caller {
                    case .anonymous, .expired: Expected(status: 401)
                    case .owner: Expected(status: 200)
                    case .readWrite: Expected(status: object == .shared ? 200 : 403)
                    default: Expected(status: 403)
                    }
                }),
            Operation(
                id: "lookupRecords", objects: [.shared, .outside],
                request: { w, object in
                    ("POST", "/v1/records/lookup", json(API.Lookup(zone: w.zone, recordNames: [record(object)])))
                }, expected: readRule),
            Operation(
                id: "zoneChanges", objects: [.shared, .outside],
                request: { w, _ in
                    ("POST", "/v1/records/changes", json(API.ZoneChangesQuery(zone: w.zone)))
                }, expected: readRule),
            Operation(
                id: "recordVersions", objects: [.shared, .outside],
                request: { w, object in
                    ("POST", "/v1/records/versions", json(API.VersionsQuery(zone: w.zone, recordName: record(object))))
                },
                expected: { caller, object in
                    let rule = readRule(caller, object)
                    // A record outside the share is, for a participant, a record that does not exist.
                    return rule.status == 200 && !rule.reveals ? Expected(status: 404) : rule
                }),
            // The trash: read like the zone (it holds no text to reveal); restoring a record
            // that is not in it is "not in the trash" for whoever may read the zone.
            Operation(
                id: "zoneTrash", objects: [.none], request: { w, _ in ("POST", "/v1/records/trash", json(API.ZoneRef(zone: w.zone))) },
                expected: { caller, object in
                    Expected(status: readRule(caller, object).status)
                }),
            Operation(
                id: "restoreFromTrash", objects: [.none],
                request: { w, _ in
                    ("POST", "/v1/records/restore", json(API.Restore(zone: w.zone, recordName: "outside")))
                },
                expected: { caller, object in
                    let rule = readRule(caller, object)
                    return rule.status == 200 ? Expected(status: 404) : rule
                }),
            // Search decides rights inside its query: a filter-only query lists every note
            // the caller may read (newest first: this cell's world comes first), and the
            // text of the other one must not show.
            Operation(
                id: "search", objects: [.shared, .outside], request: { _, _ in ("POST", "/v1/search", json(API.Search(query: "by:alice"))) },
                expected: { caller, object in
                    switch caller {
                    case .anonymous, .expired: Expected(status: 401)
                    case .owner: Expected(status: 200, reveals: true)
                    case .readWrite, .readOnly, .linkJoiner: Expected(status: 200, reveals: object == .shared)
                    default: Expected(status: 200)
                    }
                }),
            Operation(id: "databaseChanges", objects: [.none], request: { _, _ in ("POST", "/v1/changes", #"{"scope":"shared"}"#) }, expected: any(200)),
            Operation(id: "listShares", objects: [.none], request: { _, _ in ("GET", "/v1/shares", nil) }, expected: any(200)),
            Operation(
                id: "createShare", objects: [.shared, .outside],
                request: { w, object in
                    ("POST", "/v1/shares", json(NewShare(zone: w.zone, rootRecordName: record(object))))
                },
                expected: { caller, object in
                    switch caller {
                    case .anonymous, .expired: Expected(status: 401)
                    case .owner: Expected(status: object == .shared ? 409 : 201)
                    default: Expected(status: 403)
                    }
                }),
            Operation(
                id: "getShare", objects: [.none], request: { w, _ in ("GET", "/v1/shares/\(w.share.id)", nil) },
                expected: { caller, _ in
                    switch caller {
                    case .anonymous, .expired: Expected(status: 401)
                    case .owner, .readWrite, .readOnly, .linkJoiner, .pending: Expected(status: 200)
                    default: Expected(status: 404)
                    }
                }),
            Operation(id: "updateShare", objects: [.none], request: { w, _ in ("PATCH", "/v1/shares/\(w.share.id)", #"{"title":"Renamed"}"#) }, expected: ownerOnly),
            Operation(id: "stopShare", objects: [.none], request: { w, _ in ("DELETE", "/v1/shares/\(w.share.id)", nil) }, expected: ownerOnly),
            Operation(
                id: "addParticipants", objects: [.none],
                request: { w, _ in
                    ("POST", "/v1/shares/\(w.share.id)/participants", #"{"participants":[{"name":"frank","permission":"readWrite"}]}"#)
                }, expected: ownerOnly),
            Operation(id: "removeParticipant", objects: [.none], request: { w, _ in ("DELETE", "/v1/shares/\(w.share.id)/participants/carol", nil) }, expected: ownerOnly),
            Operation(
                id: "leaveShare", objects: [.none], request: { w, _ in ("POST", "/v1/shares/\(w.share.id)/leave", nil) },
                expected: { caller, _ in
                    switch caller {
                    case .anonymous, .expired: Expected(status: 401)
                    case .owner: Expected(status: 403)
                    case .readWrite, .readOnly, .linkJoiner, .pending: Expected(status: 200)
                    default: Expected(status: 404)
                    }
                }),
            Operation(id: "invitations", objects: [.none], request: { _, _ in ("GET", "/v1/invitations", nil) }, expected: any(200)),
            Operation(
                id: "acceptShare", objects: [.none], request: { w, _ in ("POST", "/v1/accept", json(API.Accept(url: w.share.urlToken))) },
                expected: { caller, _ in
                    switch caller {
                    case .anonymous, .expired: Expected(status: 401)
                    case .owner: Expected(status: 400)
                    case .pending: Expected(status: 200)
                    case .readWrite, .readOnly, .linkJoiner: Expected(status: 409)
                    // The share has a public link: anyone with an account may join through it,
                    // someone the owner removed included (as with any "anyone with the link"
                    // share: to keep a person out, the owner takes the link down).
                    case .stranger, .removed: Expected(status: 200)
                    }
                }),
            Operation(id: "events", objects: [.none], request: { _, _ in ("GET", "/v1/events", nil) }, expected: any(200)),
        ]
    }()

    /// Reads in the zone: the owner sees both records, participants the shared one only,
    /// and those with no part in the share are refused.
    static func readRule(_ caller: Caller, _ object: Object) -> Expected {
        switch caller {
        case .anonymous, .expired: Expected(status: 401)
        case .owner: Expected(status: 200, reveals: true)
        case .readWrite, .readOnly, .linkJoiner: Expected(status: 200, reveals: object == .shared)
        default: Expected(status: 403)
        }
    }

    static func ownerOnly(_ caller: Caller, _ object: Object) -> Expected {
        switch caller {
        case .anonymous, .expired: Expected(status: 401)
        case .owner: Expected(status: 200)
        case .readWrite, .readOnly, .linkJoiner, .pending: Expected(status: 403)
        default: Expected(status: 404)
        }
    }

    @Test func everyOperationByEveryCallerOnEveryObject() async throws {
        // Every operation of the document has a row.
        let document = try String(
            contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../docs/openapi.yaml").standardized.path, encoding: .utf8)
        let documented = Set(
            document.split(separator: "\n").compactMap { line -> String? in
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                return trimmed.hasPrefix("operationId: ") ? String(trimmed.dropFirst("operationId: ".count)) : nil
            })
        #expect(
            documented == Set(Self.operations.map(\.id)),
            "rows missing for \(documented.subtracting(Self.operations.map(\.id)).sorted()); rows for no route: \(Set(Self.operations.map(\.id)).subtracting(documented).sorted())")

        // Each cell comes from an address of its own (behind a trusted proxy), so that the
        // expired token's refusals never add up to the bad-token limit.
        let daemon = try await DaemonProcess.started(tcp: true, arguments: ["--trusted-proxy", "127.0.0.1"])
        let admin = daemon.client()
        var base: [Caller: String] = [:]
        for (caller, name) in [
            (Caller.owner, "alice"), (.readWrite, "bob"), (.readOnly, "carol"), (.linkJoiner, "gina"), (.removed, "dave"), (.pending, "erin"), (.stranger, "frank"),
        ] {
            base[caller] = try await admin.createAccount(name: name).token
        }
        let shortLived = try await admin.issueToken(for: "bob", expiresIn: 1).token
        let expired = await Self.eventually { (try? await daemon.tcpClient(token: shortLived).whoami()) == nil }
        #expect(expired)
        base[.expired] = shortLived

        var mismatches: [String] = []
        var table: [String] = []
        var worlds = 0
        for operation in Self.operations {
            for object in operation.objects {
                var row: [String] = []
                for caller in Caller.allCases {
                    worlds += 1
                    let world = try await Self.world(daemon, tokens: base, index: worlds)
                    let (method, path, body) = operation.request(world, object)
                    let token = caller == .anonymous ? nil : base[caller]
                    let (status, answer) = Self.send(daemon, method, path, body: body, token: token, from: "10.\(worlds / 65_536 % 256).\(worlds / 256 % 256).\(worlds % 256)")
                    let reveals = answer.contains("\(object == .shared ? "shared" : "outside") text")
                    let got = Expected(status: status, reveals: reveals)
                    var want = operation.expected(caller, object)
                    if !want.reveals && got.status == want.status && object == .none { want.reveals = got.reveals }
                    row.append("\(caller.rawValue)=\(got)")
                    if got != want { mismatches.append("\(operation.id) [\(object.rawValue)] as \(caller.rawValue): expected \(want), got \(got) \(answer.prefix(160))") }
                }
                table.append("\(operation.id) [\(object.rawValue)]: " + row.joined(separator: " "))
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) cells differ:\n\(mismatches.joined(separator: "\n"))\n\nthe whole table:\n\(table.joined(separator: "\n"))")
        // Nobody's refused attempt changed the records of a world that stayed untouched.
        let last = try await Self.world(daemon, tokens: base, index: worlds + 1)
        #expect(try await daemon.tcpClient(token: base[.owner]).records(["shared", "outside"], in: last.zone).compactMap(\.body).sorted() == ["outside text", "shared text"])
    }

    /// A fresh zone of alice's with its share, for one cell.
    static func world(_ daemon: DaemonProcess, tokens: [Caller: String], index: Int) async throws -> World {
        let alice = daemon.tcpClient(token: tokens[.owner])
        let zone = try await alice.createZone(named: "w\(index)").id
        _ = try await alice.modify(
            ModifyRequest(
                zone: zone,
                saves: [
                    RecordSave(recordName: "shared", recordType: .note, name: "shared.md", body: "shared text"),
                    RecordSave(recordName: "outside", recordType: .note, name: "outside.md", body: "outside text"),
                ]))
        var share = try await alice.createShare(
            NewShare(
                zone: zone, rootRecordName: "shared", publicPermission: .readOnly,
                participants: [
                    Invitee(name: "bob", permission: .readWrite), Invitee(name: "carol", permission: .readOnly),
                    Invitee(name: "dave", permission: .readOnly), Invitee(name: "erin", permission: .readOnly),
                ]))
        for caller in [Caller.readWrite, .readOnly, .linkJoiner, .removed] {
            _ = try await daemon.tcpClient(token: tokens[caller]).accept(url: share.urlToken)
        }
        share = try await alice.removeParticipant(shareID: share.id, name: "dave")
        let revocable = try await daemon.client().issueToken(for: "alice", label: "cell \(index)")
        var tags: [Object: String] = [:]
        for record in try await alice.records(["shared", "outside"], in: zone) {
            tags[record.recordName == "shared" ? .shared : .outside] = record.changeTag
        }
        return World(zone: zone, share: share, tokens: tokens, aliceToken: revocable.id ?? "", tags: tags)
    }

    static func send(_ daemon: DaemonProcess, _ method: String, _ path: String, body: String?, token: String?, from address: String) -> (Int, String) {
        let wait = path == "/v1/events" ? 1 : 10
        var command = "curl -s -S --max-time \(wait) -o - -w '\\n%{http_code}' -X \(method) 'http://127.0.0.1:\(daemon.port ?? 0)\(path)'"
        command += " -H 'X-Forwarded-For: \(address)'"
        if let token { command += " -H 'Authorization: Bearer \(token)'" }
        if let body {
            command += " -H 'Content-Type: application/json' --data-binary @-"
            let file = "/tmp/matrix-\(UUID().uuidString.prefix(8)).json"
            try? body.write(toFile: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: file) }
            command = command.replacingOccurrences(of: "@-", with: "@\(file)")
            return parse(Shell.run(command).stdout)
        }
        return parse(Shell.run(command).stdout)
    }

    /// curl's output: the body, then the status on the last line (an event stream is
    /// cut by --max-time after its first bytes; its status still counts).
    static func parse(_ output: String) -> (Int, String) {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    static func eventually(_ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return await condition()
    }
}
