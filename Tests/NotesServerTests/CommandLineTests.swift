import Foundation
import NotesModel
import NotesTestSupport
import Testing

/// `notes` and `notesd` as a person or a script meets them: help with examples,
/// readable errors on stderr, exit statuses to branch on.
@Suite(.serialized) struct CommandLineTests {
    static func binary(_ name: String) -> String {
        URL(fileURLWithPath: DaemonProcess.binary).deletingLastPathComponent().appendingPathComponent(name).path
    }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary(name))
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        let stdin = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try stdin.fileHandleForWriting.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        return Run(status: ChildExit.wait(for: process), stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
    }

    @Test(arguments: [
        ["--help"], ["whoami", "--help"], ["account", "create", "--help"], ["account", "token", "--help"],
        ["login", "--help"], ["logout", "--help"], ["account", "link", "--help"], ["account", "links", "--help"], ["account", "revoke-link", "--help"],
        ["put", "--help"], ["cat", "--help"], ["ls", "--help"], ["mount", "--help"], ["unmount", "--help"],
        ["share", "--help"], ["invitations", "--help"], ["accept", "--help"], ["participants", "--help"],
        ["unshare", "--help"], ["leave", "--help"], ["history", "--help"], ["export", "--help"], ["status", "--help"],
        ["account", "--help"], ["account", "list", "--help"], ["account", "disable", "--help"], ["account", "enable", "--help"],
        ["account", "delete", "--help"], ["token", "--help"], ["token", "create", "--help"], ["token", "list", "--help"], ["token", "revoke", "--help"],
        ["show", "--help"], ["diff", "--help"], ["restore", "--help"], ["watch", "--help"], ["search", "--help"],
    ])
    func everyCommandHelpHasAnExample(_ arguments: [String]) throws {
        let result = try Self.run("notes", arguments)
        #expect(result.status == 0)
        #expect(result.stdout.contains("Example"), "\(arguments.joined(separator: " ")) --help has no example")
    }

    @Test func bothCommandsTellTheirVersion() throws {
        let notes = try Self.run("notes", ["--version"])
        #expect(notes.status == 0 && notes.stdout == "notes \(NotesVersion.release) (API \(NotesVersion.api))\n", "\(notes)")
        let notesd = try Self.run("notesd", ["--version"])
        #expect(notesd.status == 0 && notesd.stdout == "notesd \(NotesVersion.release) (API \(NotesVersion.api))\n", "\(notesd)")
    }

    /// Mistakes a first hour brings, each with a usage status (64) and a message that
    /// says what to give instead.
    @Test func firstHourMistakesAreUsageErrorsThatSayWhatToGive() throws {
        let folder = NSTemporaryDirectory() + "notes-cli-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: "\(folder)/notes", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "# a".write(toFile: "\(folder)/notes/a.md", atomically: true, encoding: .utf8)
        try "x".write(toFile: "\(folder)/site", atomically: true, encoding: .utf8)
        let past = try Self.run("notes", ["share", "\(folder)/notes/a.md", "--public", "--expires", "-1d"])
        #expect(past.status == 64 && past.stderr.contains("in the past"), "\(past)")
        let empty = try Self.run("notes", ["accept", ""])
        #expect(empty.status == 64 && empty.stderr.contains("share URL"), "\(empty)")
        let intoFile = try Self.run("notes", ["export", "--html", "-o", "\(folder)/site", "\(folder)/notes"])
        #expect(intoFile.status == 64 && intoFile.stderr.contains("is a file"), "\(intoFile)")
        #expect((try? String(contentsOfFile: "\(folder)/site", encoding: .utf8)) == "x", "the file named by -o was changed")
    }

    /// A notesd of another major API version (played by a small HTTP server that answers
    /// with that version) is named as such, not misread.
    @Test func anotherAPIVersionIsSaidPlainly() throws {
        let port = DaemonProcess.freePort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = [
            "-c",
            """
            import http.server
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    body = b'{"name":"x","isAdmin":false,"createdAt":"2026-01-01T00:00:00Z","isDisabled":false}'
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("\(NotesVersion.apiHeader)", "\(NotesVersion.api + 1)")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *args): pass
            http.server.HTTPServer(("127.0.0.1", \(port)), H).serve_forever()
            """,
        ]
        try server.run()
        // SIGKILL: the test process blocks SIGTERM in its threads, and a child inherits that mask.
        defer {
            kill(server.processIdentifier, SIGKILL)
            _ = ChildExit.wait(for: server)
        }
        var result = try Self.run("notes", ["whoami", "--server", "http://127.0.0.1:\(port)", "--token", "t"])
        let deadline = Date().addingTimeInterval(60)
        while result.stderr.contains("Cannot reach") && Date() < deadline {
            usleep(50_000)
            result = try Self.run("notes", ["whoami", "--server", "http://127.0.0.1:\(port)", "--token", "t"])
        }
        #expect(result.status == 69 && result.stderr.contains("version \(NotesVersion.api + 1) of the API"), "\(result)")
    }

    @Test func adminsListDisableAndEnableAccountsAndEveryoneRevokesTheirTokens() async throws {
        let daemon = try await DaemonProcess.started()
        let env = ["NOTES_SOCKET": daemon.socket]
        let created = try Self.run("notes", ["account", "create", "bob", "--email", "bob@example.com", "--json"], environment: env)
        let issued = try NotesJSON.decoder().decode(API.TokenIssued.self, from: Data(created.stdout.utf8))
        let tokenID = try #require(issued.id)
        let listed = try Self.run("notes", ["account", "list"], environment: env)
        #expect(listed.status == 0 && listed.stdout.contains("bob\tbob@example.com") && listed.stdout.contains("\tadmin"), "\(listed)")
        let bob = env.merging(["NOTES_TOKEN": issued.token]) { $1 }
        #expect(try Self.run("notes", ["account", "list"], environment: bob).status == 77)

        #expect(try Self.run("notes", ["account", "disable", "bob"], environment: env).status == 0)
        let refused = try Self.run("notes", ["whoami"], environment: bob)
        #expect(refused.status == 77, "\(refused)")
        #expect(try Self.run("notes", ["account", "list"], environment: env).stdout.contains("bob\tbob@example.com\tdisabled"))
        #expect(try Self.run("notes", ["account", "enable", "bob"], environment: env).status == 0)
        #expect(try Self.run("notes", ["whoami"], environment: bob).stdout.hasPrefix("bob\n"))

        // bob's own tokens: listed, and revoked by pasting the whole token
        let tokens = try Self.run("notes", ["token", "list"], environment: bob)
        #expect(tokens.status == 0 && tokens.stdout.hasPrefix(tokenID), "\(tokens)")
        #expect(try Self.run("notes", ["token", "list", "--account", "bob"], environment: env).stdout.hasPrefix(tokenID))
        // bob makes a token of his own; one made with an expiring token expires by then too
        let made = try Self.run("notes", ["token", "create", "--label", "laptop", "--expires", "90d", "--json"], environment: bob)
        let laptop = try NotesJSON.decoder().decode(API.TokenIssued.self, from: Data(made.stdout.utf8))
        #expect(try Self.run("notes", ["whoami"], environment: env.merging(["NOTES_TOKEN": laptop.token]) { $1 }).stdout.hasPrefix("bob\n"))
        #expect(try Self.run("notes", ["token", "list"], environment: bob).stdout.contains("\tlaptop\t"))
        let longer = try Self.run("notes", ["token", "create", "--expires", "91d"], environment: env.merging(["NOTES_TOKEN": laptop.token]) { $1 })
        #expect(longer.status == 64 && longer.stderr.contains("must expire by then too"), "\(longer)")
        let forever = try Self.run("notes", ["token", "create"], environment: env.merging(["NOTES_TOKEN": laptop.token]) { $1 })
        #expect(forever.status == 64, "\(forever)")
        #expect(try Self.run("notes", ["token", "create", "--expires", "30d"], environment: env.merging(["NOTES_TOKEN": laptop.token]) { $1 }).status == 0)
        let revoked = try Self.run("notes", ["token", "revoke", issued.token], environment: bob)
        #expect(revoked.status == 0 && revoked.stdout.contains("Revoked \(tokenID)"), "\(revoked)")
        #expect(try Self.run("notes", ["whoami"], environment: bob).status == 77)
        try await daemon.stop()
    }

    @Test func anAdminDeletesAnAccountOnlyWithYesAndItsZonesSharesAndTokensGoWithIt() async throws {
        // Given bob, with a zone of his own (beside his default one) shared with carol, and a token
        let daemon = try await DaemonProcess.started()
        let env = ["NOTES_SOCKET": daemon.socket]
        let admin = daemon.client()
        var tokens: [String: String] = [:]
        for name in ["bob", "carol"] {
            let created = try Self.run("notes", ["account", "create", name, "--json"], environment: env)
            tokens[name] = try NotesJSON.decoder().decode(API.TokenIssued.self, from: Data(created.stdout.utf8)).token
        }
        let bob = daemon.client(token: tokens["bob"]!)
        let carol = daemon.client(token: tokens["carol"]!)
        let zone = try await bob.createZone(named: "Plans").id
        _ = try await bob.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "bob's plan")]))
        let share = try await bob.createShare(NewShare(zone: zone, rootRecordName: "plan", participants: [Invitee(name: "carol", permission: .readOnly)]))
        _ = try await carol.accept(url: share.urlToken)
        #expect(try await carol.zones(scope: .shared).map(\.id) == [zone])

        // When the admin asks without --yes, nothing happens and the message says what would
        let asked = try Self.run("notes", ["account", "delete", "bob"], environment: env)
        #expect(asked.status == 64 && asked.stderr.contains("--yes") && asked.stderr.contains("keep bob as their author"), "\(asked)")
        #expect(try Self.run("notes", ["whoami"], environment: env.merging(["NOTES_TOKEN": tokens["bob"]!]) { $1 }).stdout.hasPrefix("bob\n"))
        // and an admin cannot delete their own account
        let me = try await admin.whoami().name
        #expect(try Self.run("notes", ["account", "delete", me, "--yes"], environment: env).status == 64)

        // Then with --yes bob goes, with his zone, his share and his token
        let deleted = try Self.run("notes", ["account", "delete", "bob", "--yes", "--json"], environment: env)
        let summary = try NotesJSON.decoder().decode(API.AccountDeleted.self, from: Data(deleted.stdout.utf8))
        #expect(summary == API.AccountDeleted(name: "bob", zones: 2, records: 1, sharesStopped: 1, sharesLeft: 0), "\(deleted)")
        #expect(try Self.run("notes", ["whoami"], environment: env.merging(["NOTES_TOKEN": tokens["bob"]!]) { $1 }).status == 77)
        #expect(try await carol.zones(scope: .shared).isEmpty)
        #expect(!(try Self.run("notes", ["account", "list"], environment: env).stdout.contains("bob")))
        let again = try Self.run("notes", ["account", "delete", "bob", "--yes"], environment: env)
        #expect(again.status == 66, "\(again)")
        try await daemon.stop()
    }

    /// A running `notes …` whose output is read as it comes.
    final class Running: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var out = "", err = ""

        init(_ name: String, _ arguments: [String], environment: [String: String]) throws {
            process.executableURL = URL(fileURLWithPath: CommandLineTests.binary(name))
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let outPipe = Pipe()
            let errPipe = Pipe()
            process.standardOutput = outPipe
            process.standardError = errPipe
            outPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                self?.lock.withLock { self?.out += String(decoding: data, as: UTF8.self) }
            }
            errPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                self?.lock.withLock { self?.err += String(decoding: data, as: UTF8.self) }
            }
            try process.run()
        }

        var stdout: String { lock.withLock { out } }
        var stderr: String { lock.withLock { err } }
        var lines: [[String: Any]] {
            stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        /// Waits (60 s at most) until `condition` holds of what was printed.
        func wait(_ what: String, _ condition: (Running) -> Bool) async throws {
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(60)
            while !condition(self) {
                guard clock.now < deadline else { throw NotesError(.internalError, "waited 60 s for \(what); stdout: \(stdout) stderr: \(stderr)") }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    @Test func watchPrintsEachChangeWithWhoAndWhereEndsOnCtrlCAndResumesWithoutAGap() async throws {
        // Given alice (the admin here) and bob, who shares a zone with her
        let daemon = try await DaemonProcess.started()
        let env = ["NOTES_SOCKET": daemon.socket]
        let alice = daemon.client()
        let me = try await alice.whoami().name
        let created = try Self.run("notes", ["account", "create", "bob", "--json"], environment: env)
        let bob = daemon.client(token: try NotesJSON.decoder().decode(API.TokenIssued.self, from: Data(created.stdout.utf8)).token)
        let mine = ZoneID(owner: me, name: ZoneID.defaultZoneName)
        _ = try await alice.modify(ModifyRequest(zone: mine, saves: [RecordSave(recordName: "old", recordType: .note, name: "old.md", body: "before the watch")]))

        // When alice watches, saves a note, accepts bob's share and bob saves in it
        let watch = try Running("notes", ["watch", "--json"], environment: env)
        try await watch.wait("the watch to start") { $0.stderr.contains("watching from w1.") }
        _ = try await alice.modify(ModifyRequest(zone: mine, saves: [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "# Plan")]))
        let team = try await bob.createZone(named: "Team").id
        let share = try await bob.createShare(NewShare(zone: team, rootRecordName: nil, title: "Team notes", participants: [Invitee(name: me, permission: .readOnly)]))
        _ = try await alice.accept(url: share.urlToken)
        try await watch.wait("the shared zone") { $0.lines.contains { $0["change"] as? String == "zoneAdded" } }
        _ = try await bob.modify(ModifyRequest(zone: team, saves: [RecordSave(recordName: "agenda", recordType: .note, name: "agenda.md", body: "# Agenda")]))
        try await watch.wait("bob's note") { $0.lines.contains { $0["name"] as? String == "agenda.md" } }

        // Then each change is one line: who, what, where, which share, and a position
        let lines = watch.lines
        let plan = try #require(lines.first { $0["name"] as? String == "plan.md" }, "\(watch.stdout)")
        #expect(plan["change"] as? String == "saved" && plan["by"] as? String == me && plan["scope"] as? String == "private", "\(plan)")
        let agenda = try #require(lines.first { $0["name"] as? String == "agenda.md" })
        #expect(agenda["by"] as? String == "bob" && agenda["scope"] as? String == "shared" && agenda["shareTitle"] as? String == "Team notes", "\(agenda)")
        #expect(!lines.contains { $0["name"] as? String == "old.md" }, "a change from before the watch was printed")
        #expect(lines.allSatisfy { ($0["position"] as? String)?.hasPrefix("w1.") == true })
        // and Ctrl-C ends it with status 0
        kill(watch.process.processIdentifier, SIGINT)
        #expect(ChildExit.wait(for: watch.process) == 0, "\(watch.stderr)")

        // A save while no watch runs is the first thing a watch from the last position prints, and only it
        let last = try #require(lines.last?["position"] as? String)
        _ = try await bob.modify(ModifyRequest(zone: team, saves: [RecordSave(recordName: "minutes", recordType: .note, name: "minutes.md", body: "# Minutes")]))
        let resumed = try Running("notes", ["watch", "--json", "--since", last], environment: env)
        try await resumed.wait("the missed note") { $0.lines.contains { $0["name"] as? String == "minutes.md" } }
        #expect(resumed.lines.compactMap { $0["name"] as? String } == ["minutes.md"], "\(resumed.stdout)")
        kill(resumed.process.processIdentifier, SIGINT)
        #expect(ChildExit.wait(for: resumed.process) == 0)

        // A position whose database tokens are of another database (the server moved to
        // PostgreSQL) lists the zones again and goes on from each zone's own token:
        // the save made meanwhile, and only it
        let moved = try Self.position(try #require(resumed.lines.last?["position"] as? String), databaseTokens: "d2.1.5.0.")
        _ = try await bob.modify(ModifyRequest(zone: team, saves: [RecordSave(recordName: "actions", recordType: .note, name: "actions.md", body: "# Actions")]))
        let afterMove = try Running("notes", ["watch", "--json", "--since", moved], environment: env)
        try await afterMove.wait("the note saved after the move") { $0.lines.contains { $0["name"] as? String == "actions.md" } }
        #expect(afterMove.lines.compactMap { $0["name"] as? String } == ["actions.md"], "\(afterMove.stdout)")
        kill(afterMove.process.processIdentifier, SIGINT)
        #expect(ChildExit.wait(for: afterMove.process) == 0, "\(afterMove.stderr)")
        // and a position it did not print is refused, with status 64
        #expect(try Self.run("notes", ["watch", "--since", "w1.garbage"], environment: env).status == 64)
        try await daemon.stop()
    }

    /// A watch position (`w1.` and base64url JSON) with every database token replaced.
    static func position(_ printed: String, databaseTokens: String) throws -> String {
        var base64 = String(printed.dropFirst(3)).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        let data = try #require(Data(base64Encoded: base64))
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let databases = try #require(object["databases"] as? [String: Any])
        object["databases"] = databases.mapValues { _ in databaseTokens }
        let changed = try JSONSerialization.data(withJSONObject: object, options: .sortedKeys)
        return "w1."
            + changed.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func daemonHelpHasAnExample() throws {
        let result = try Self.run("notesd", ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Example"))
    }

    @Test func scriptsCanTrustOutputAndExitStatus() async throws {
        let daemon = try await DaemonProcess.started()
        let env = ["NOTES_SOCKET": daemon.socket]
        let created = try Self.run("notes", ["account", "create", "bob", "--json"], environment: env)
        #expect(created.status == 0)
        let issued = try NotesJSON.decoder().decode(API.TokenIssued.self, from: Data(created.stdout.utf8))
        #expect(issued.name == "bob")

        let again = try Self.run("notes", ["account", "create", "bob"], environment: env)
        #expect(again.status == 75)
        #expect(again.stderr.contains("already exists"))

        let bob = env.merging(["NOTES_TOKEN": issued.token]) { $1 }
        #expect(try Self.run("notes", ["whoami"], environment: bob).stdout.hasPrefix("bob\n"))
        let notAdmin = try Self.run("notes", ["account", "create", "eve"], environment: bob)
        #expect(notAdmin.status == 77)
        #expect(notAdmin.stderr.contains("Only the admin"))

        #expect(try Self.run("notes", ["put", "plan.md"], environment: bob, input: "# Plan\n").status == 0)
        #expect(try Self.run("notes", ["cat", "plan.md"], environment: bob).stdout == "# Plan\n")
        let missing = try Self.run("notes", ["cat", "nope.md"], environment: bob)
        #expect(missing.status == 66)
        let badName = try Self.run("notes", ["put", "a/b.md"], environment: bob, input: "x")
        #expect(badName.status == 64)
        #expect(badName.stderr.contains("'/'"))

        let forged = try Self.run("notes", ["whoami"], environment: env.merging(["NOTES_TOKEN": "ntk_forged"]) { $1 })
        #expect(forged.status == 77)
        let unreachable = try Self.run("notes", ["whoami"], environment: ["NOTES_SOCKET": daemon.socket + ".missing"])
        #expect(unreachable.status == 69)
        #expect(unreachable.stderr.contains("Is it running?"))
    }

    /// `notes search`, again while it says the index has not taken in the latest saves
    /// (on a busy machine its bounded wait can end first).
    static func searched(_ arguments: [String], environment: [String: String]) throws -> Run {
        let deadline = ContinuousClock.now + .seconds(300)
        while true {
            let result = try run("notes", arguments, environment: environment)
            if !result.stdout.contains("not in the index yet") || ContinuousClock.now > deadline { return result }
        }
    }

    /// `notes search` finds what `notes put` saved, says where it is, pages, and
    /// explains a query it cannot run.
    @Test func searchFindsPrintsAndPages() async throws {
        let daemon = try await DaemonProcess.started()
        let env = ["NOTES_SOCKET": daemon.socket]
        for index in 0..<3 {
            #expect(try Self.run("notes", ["put", "n\(index).md"], environment: env, input: "# Trip \(index)\n\nPacking list: boots, tent.\n").status == 0)
        }
        #expect(try Self.run("notes", ["put", "other.md"], environment: env, input: "nothing here\n").status == 0)
        let found = try Self.searched(["search", "tent"], environment: env)
        #expect(found.status == 0)
        #expect(found.stdout.contains("private/n2.md  Trip 2"))
        #expect(found.stdout.contains("Packing list: boots, tent."))
        #expect(!found.stdout.contains("other.md"))
        #expect(!found.stdout.contains("\u{1B}["), "no bold when not printing to a terminal")
        let bold = try Self.searched(["search", "tent", "--color"], environment: env)
        #expect(bold.stdout.contains("\u{1B}[1mtent\u{1B}[0m"))

        let first = try Self.run("notes", ["search", "packing", "--limit", "2", "--json"], environment: env)
        let page = try NotesJSON.decoder().decode(API.SearchResults.self, from: Data(first.stdout.utf8))
        #expect(page.results.count == 2)
        #expect(page.complete)
        let next = try #require(page.next)
        let rest = try Self.run("notes", ["search", "packing", "--limit", "2", "--cursor", next, "--json"], environment: env)
        let second = try NotesJSON.decoder().decode(API.SearchResults.self, from: Data(rest.stdout.utf8))
        #expect(second.results.count == 1)
        #expect(Set((page.results + second.results).map(\.path)) == ["private/n0.md", "private/n1.md", "private/n2.md"])

        let refused = try Self.run("notes", ["search", "a"], environment: env)
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("too short"))
    }

    /// `notesd reindex` builds the index again with notesd stopped, and notesd then
    /// finds what it found before; `--no-search` turns search off with a reason.
    @Test func reindexRebuildsAndNoSearchSaysWhy() async throws {
        let daemon = try await DaemonProcess.started()
        let env = ["NOTES_SOCKET": daemon.socket]
        #expect(try Self.run("notes", ["put", "trip.md"], environment: env, input: "Packing list: boots, tent.\n").status == 0)
        #expect(try Self.searched(["search", "tent"], environment: env).stdout.contains("private/trip.md"))
        #expect(try await daemon.stop() == 0)
        let rebuilt = try Self.run("notesd", ["reindex", "--data-dir", daemon.dataDir])
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        #expect(rebuilt.stdout.contains("holds every note"))
        try await daemon.restart()
        #expect(try Self.searched(["search", "tent"], environment: env).stdout.contains("private/trip.md"))

        let off = try await DaemonProcess.started(arguments: ["--no-search"])
        // With notesd's search off, `notes search` answers from a mount's copy if this
        // machine has one: an empty cache folder of its own, so that a mount the user
        // runs (or another test's) does not answer instead.
        let noMounts = FileManager.default.temporaryDirectory.appendingPathComponent("no-mounts-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: noMounts, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: noMounts) }
        let refused = try Self.run("notes", ["search", "tent"], environment: ["NOTES_SOCKET": off.socket, "XDG_CACHE_HOME": noMounts])
        #expect(refused.status == 69)
        #expect(refused.stderr.contains("turned off"))
    }
}
