import Foundation
import NotesModel
import NotesTestSupport
import Testing

/// The whole path from a laptop to a team server, through the real CLI: notesd with
/// TLS, the admin makes sign-in links, each person runs `notes login LINK` in a fresh
/// home with nothing exported, mounts from the saved profile and shares with the
/// other, and `notes logout` revokes the token.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "mount tests need /dev/fuse, which this machine lacks"))
struct TeamServerTests {
    /// One person's machine: a home of their own, and `notes` run with only that.
    struct Person {
        let name: String
        let home: String
        var mountpoint: String { "\(home)/Notes" }
        var configFile: String { "\(home)/.config/notes/config" }

        @discardableResult
        func notes(_ arguments: [String]) -> Shell.Result {
            Shell.runAlone([MountProcess.notesBinary] + arguments, environment: ["HOME": home, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"])
        }
    }

    static func person(_ name: String, in folder: String) throws -> Person {
        let home = "\(folder)/\(name)"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        return Person(name: name, home: home)
    }

    @Test func aTeamSignsInWithLinksMountsFromTheirProfilesSharesAndLogsOut() async throws {
        let folder = NSTemporaryDirectory() + "notes-team-\(UUID().uuidString.prefix(8))"
        let certificates = try TestCertificates.make()
        defer {
            try? FileManager.default.removeItem(atPath: certificates.folder)
            try? FileManager.default.removeItem(atPath: folder)
        }
        let daemon = try await DaemonProcess.started(tcp: true, arguments: ["--tls-cert", certificates.certificate, "--tls-key", certificates.key])
        let server = "https://127.0.0.1:\(try #require(daemon.port))"
        let admin = ["NOTES_SOCKET": daemon.socket]
        let alice = try Self.person("alice", in: folder)
        let bob = try Self.person("bob", in: folder)
        defer {
            for person in [alice, bob] { Shell.run("fusermount3 -u -z '\(person.mountpoint)' 2>/dev/null") }
        }

        // The admin makes both accounts with sign-in links: no token ever shows.
        var links: [String: String] = [:]
        for person in [alice, bob] {
            let made = Shell.run("'\(MountProcess.notesBinary)' account create \(person.name) --link --json", environment: admin)
            #expect(made.status == 0, "\(made)")
            let issued = try NotesJSON.decoder().decode(API.SignInLinkIssued.self, from: Data(made.stdout.utf8))
            #expect(issued.link.hasPrefix("\(server)/sign-in#nsl_") && !made.stdout.contains("ntk_"), "\(made)")
            links[person.name] = issued.link
        }

        // Each logs in on their machine; the profile is saved readable by them only.
        for person in [alice, bob] {
            let login = person.notes(["login", links[person.name]!, "--ca-file", certificates.ca])
            #expect(login.status == 0 && login.stdout.contains("Logged in to \(server) as \(person.name)"), "\(login)")
            let info = try FileManager.default.attributesOfItem(atPath: person.configFile)
            #expect((info[.posixPermissions] as? Int) == 0o600)
            let whoami = person.notes(["whoami"])
            #expect(whoami.status == 0 && whoami.stdout == "\(person.name)\non \(server) (profile default)\n", "\(whoami)")
        }
        // The token was made on bob's machine and named after it; the admin sees its id only.
        let listed = Shell.run("'\(MountProcess.notesBinary)' token list --account bob", environment: admin)
        #expect(listed.stdout.contains("notes login on "), "\(listed)")
        // A link works once.
        let again = bob.notes(["login", links["bob"]!, "--ca-file", certificates.ca])
        #expect(again.status == 77 && again.stderr.contains("was used at"), "\(again)")

        // Both mount from their profiles; alice shares a note with bob, who edits it.
        for person in [alice, bob] {
            let mounted = person.notes(["mount", person.mountpoint])
            #expect(mounted.status == 0, "\(mounted)")
        }
        try "# Plan\n".write(toFile: "\(alice.mountpoint)/private/plan.md", atomically: false, encoding: .utf8)
        #expect(await eventually(20) { alice.notes(["cat", "plan.md"]).stdout == "# Plan\n" })
        let shared = alice.notes(["share", "\(alice.mountpoint)/private/plan.md", "--with", "bob", "--read-write"])
        #expect(shared.status == 0, "\(shared)")
        let invitations = bob.notes(["invitations", "--json"])
        let url = try #require(
            (try JSONSerialization.jsonObject(with: Data(invitations.stdout.utf8)) as? [[String: Any]])?.first?["url"] as? String, "\(invitations)")
        #expect(bob.notes(["accept", url]).status == 0)
        let bobsCopy = "\(bob.mountpoint)/shared/alice/plan.md"
        #expect(await eventually(30) { (try? String(contentsOfFile: bobsCopy, encoding: .utf8)) == "# Plan\n" })
        try "# Plan\nbob was here\n".write(toFile: bobsCopy, atomically: false, encoding: .utf8)
        #expect(await eventually(30) { (try? String(contentsOfFile: "\(alice.mountpoint)/private/plan.md", encoding: .utf8)) == "# Plan\nbob was here\n" })
        // Each profile keeps its replica in a folder of its own.
        #expect(FileManager.default.fileExists(atPath: "\(bob.home)/.cache/notes/profiles/default/bob.replica.sqlite"))
        let status = bob.notes(["status"])
        #expect(status.stdout.contains("notesd: online at \(server) (profile default), signed in as bob"), "\(status)")
        for person in [alice, bob] { #expect(person.notes(["unmount", person.mountpoint]).status == 0) }

        // bob logs out: his token is revoked on the server and his profile is gone.
        let tokenID = try #require(
            (try JSONSerialization.jsonObject(with: Data(FileManager.default.contents(atPath: bob.configFile) ?? Data())) as? [String: Any])
                .flatMap { ($0["profiles"] as? [String: [String: Any]])?["default"]?["token"] as? String }?
                .split(separator: "_")[1])
        let logout = bob.notes(["logout"])
        #expect(logout.status == 0 && logout.stdout.contains("Revoked this machine's token (\(tokenID))"), "\(logout)")
        #expect(!Shell.run("'\(MountProcess.notesBinary)' token list --account bob", environment: admin).stdout.contains(tokenID))
        let loggedOut = bob.notes(["whoami"])
        #expect(loggedOut.status == 69 && loggedOut.stderr.contains("notes login"), "\(loggedOut)")
        try await daemon.stop()
    }

    @Test func aForgedLinkAnOpenConfigAndAnUnreachableServerEachSayWhatToDo() async throws {
        let folder = NSTemporaryDirectory() + "notes-team-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let daemon = try await DaemonProcess.started(tcp: true)
        let server = "http://127.0.0.1:\(try #require(daemon.port))"
        let carol = try Self.person("carol", in: folder)
        let made = Shell.run("'\(MountProcess.notesBinary)' account create carol --link --json", environment: ["NOTES_SOCKET": daemon.socket])
        let link = try NotesJSON.decoder().decode(API.SignInLinkIssued.self, from: Data(made.stdout.utf8)).link

        // A link with its secret changed, and one cut short.
        let forged = carol.notes(["login", String(link.dropLast()) + (link.last == "A" ? "B" : "A")])
        #expect(forged.status == 77 && forged.stderr.contains("not valid"), "\(forged)")
        let cut = carol.notes(["login", String(link.dropLast(5))])
        #expect(cut.status == 64, "\(cut)")
        #expect(!FileManager.default.fileExists(atPath: carol.configFile))

        // The real one works; a config others can read is refused with the fix.
        #expect(carol.notes(["login", link]).status == 0)
        #expect(chmod(carol.configFile, 0o644) == 0)
        let open = carol.notes(["whoami"])
        #expect(open.status == 77 && open.stderr.contains("chmod 600 \(carol.configFile)"), "\(open)")
        #expect(chmod(carol.configFile, 0o600) == 0)
        #expect(carol.notes(["whoami"]).stdout.hasPrefix("carol\n"))

        // A token someone already has goes in through standard input, under a second profile.
        let issued = Shell.run("'\(MountProcess.notesBinary)' account token carol --json", environment: ["NOTES_SOCKET": daemon.socket])
        let token = try NotesJSON.decoder().decode(API.TokenIssued.self, from: Data(issued.stdout.utf8)).token
        let piped = Shell.runAlone(
            ["/bin/sh", "-c", "printf '%s\\n' '\(token)' | '\(MountProcess.notesBinary)' login \(server) --token-stdin --profile ci"],
            environment: ["HOME": carol.home, "PATH": "/usr/bin:/bin"])
        #expect(piped.status == 0 && piped.stdout.contains("profile ci"), "\(piped)")
        #expect(carol.notes(["whoami", "--profile", "ci"]).stdout == "carol\non \(server) (profile ci)\n")
        #expect(carol.notes(["logout", "--profile", "ci"]).status == 0)

        // A profile whose server is gone: exit 69, naming the server.
        try await daemon.stop()
        let away = carol.notes(["whoami"])
        #expect(away.status == 69 && away.stderr.contains(server), "\(away)")
        // Logging out needs the server to revoke the token, unless told to forget it.
        let stuck = carol.notes(["logout"])
        #expect(stuck.status == 69 && stuck.stderr.contains("--forget"), "\(stuck)")
        let forgot = carol.notes(["logout", "--forget"])
        #expect(forgot.status == 0 && forgot.stdout.contains("stays valid until revoked"), "\(forgot)")
    }
}
