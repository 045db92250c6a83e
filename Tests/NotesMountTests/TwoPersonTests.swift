import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// The whole CloudKit flow lived by two people (and a third with a public link),
/// through the `notes` commands and two real mounts.
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "mount tests need /dev/fuse, which this machine lacks"))
struct TwoPersonTests {
    /// Runs `notes ARGS` as the account behind `token`.
    static func notes(_ arguments: String, token: String, daemon: DaemonProcess) -> Shell.Result {
        daemon.cli(token)(arguments)
    }

    static func json(_ result: Shell.Result) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
    }

    @Test func aliceSharesWithBobFromReadOnlyToGone() async throws {
        let people = try await TwoMounts(mountBob: true)
        let daemon = people.daemon
        let alice = people.cli(people.aliceToken)
        let bob = people.cli(people.bobToken)
        let aliceWork = people.aliceMount.path("private/Work")
        let bobShared = people.bobMount!.path("shared/alice")

        // Alice writes private/Work/plan.md and shares it read-only with Bob
        #expect(Shell.run("mkdir '\(aliceWork)' && printf 'the plan\\n' > '\(aliceWork)/plan.md'").status == 0)
        let uploaded = await eventually {
            let count = (try? await people.alice.zoneChanges(ZoneID(owner: "alice", name: "Work"), since: nil).records.count) ?? 0
            return count == 1 && xattr("\(aliceWork)/plan.md", "record") != nil
        }
        #expect(uploaded)
        let shared = alice("share '\(aliceWork)/plan.md' --with bob --read-only --json")
        #expect(shared.status == 0, "\(shared)")
        let url = (Self.json(shared) as? [String: Any])?["url"] as? String
        #expect(url?.contains("/s/") == true)

        // → Bob's invitations list it
        let invitations = bob("invitations --json")
        #expect((Self.json(invitations) as? [[String: Any]])?.first?["url"] as? String == url, "\(invitations)")
        #expect(bob("invitations").stdout.contains("alice"))

        // → Bob accepts → shared/alice/plan.md appears in his mount with Alice's text
        let accepted = bob("accept '\(url ?? "")' --json")
        #expect((Self.json(accepted) as? [String: Any])?["owner"] as? String == "alice", "\(accepted)")
        #expect(await eventually { fileText("\(bobShared)/plan.md") == "the plan\n" })

        // (and he can export it straight from notesd, without a mount)
        let site = "/tmp/share-site-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: site) }
        let exported = bob("export --share '\(url ?? "")' --html -o \(site) --json")
        #expect(exported.status == 0 && exported.stdout.contains("\"pages\" : 1"), "\(exported)")
        #expect(fileText("\(site)/plan.html")?.contains("<p>the plan</p>") == true)

        // → Bob's writes fail with EACCES
        #expect(errnos(bobShared, [("write", "open('plan.md', 'w')")]) == ["write": "EACCES"])

        // → Alice makes Bob read-write → Bob edits with vim → Alice's cat shows it, history names Bob
        #expect(alice("share '\(aliceWork)/plan.md' --with bob --read-write").status == 0)
        #expect(await eventually { Shell.run("stat -c %a '\(bobShared)/plan.md'").stdout == "644\n" })
        let vim = Shell.run("vim -es -N -u NONE -c 'set backupcopy=no' -c 'normal Goby bob' -c wq plan.md", in: bobShared)
        #expect(vim.status == 0, "\(vim)")
        #expect(await eventually { fileText("\(aliceWork)/plan.md") == "the plan\nby bob\n" })
        let history = alice("history '\(aliceWork)/plan.md' --json")
        #expect((Self.json(history) as? [[String: Any]])?.first?["modifiedBy"] as? String == "bob", "\(history)")
        #expect(alice("participants '\(aliceWork)/plan.md'").stdout.contains("readWrite"))

        // → Alice removes Bob → the share leaves his mount at once, his API calls get permissionFailure
        let record = xattr("\(aliceWork)/plan.md", "record") ?? ""
        #expect(alice("unshare '\(aliceWork)/plan.md' --with bob").status == 0)
        #expect(await eventually { !FileManager.default.fileExists(atPath: "\(bobShared)/plan.md") })
        let refused = await #expect(throws: NotesError.self) {
            _ = try await people.bob.modify(
                ModifyRequest(
                    zone: ZoneID(owner: "alice", name: "Work"),
                    saves: [
                        RecordSave(recordName: record, recordType: .note, name: "plan.md", body: "sneaky")
                    ]))
        }
        #expect(refused?.code == .permissionFailure)
        #expect(fileText("\(aliceWork)/plan.md") == "the plan\nby bob\n")

        // → a zone-wide share of private/Work: a note added later reaches Bob
        #expect(alice("unshare '\(aliceWork)/plan.md'").status == 0)
        let zoneShare = alice("share '\(aliceWork)' --with bob --read-write --json")
        #expect(zoneShare.status == 0, "\(zoneShare)")
        let zoneURL = (Self.json(zoneShare) as? [String: Any])?["url"] as? String ?? ""
        #expect(bob("accept '\(zoneURL)'").status == 0)
        #expect(Shell.run("printf 'later\\n' > '\(aliceWork)/later.md'").status == 0)
        #expect(await eventually { fileText("\(bobShared)/Work/later.md") == "later\n" })
        // Bob creates a note inside the share and Alice sees it; he cannot remove the share's root
        #expect(Shell.run("printf 'from bob\n' > '\(bobShared)/Work/idea.md'").status == 0)
        #expect(await eventually { fileText("\(aliceWork)/idea.md") == "from bob\n" })
        #expect(errnos(bobShared, [("rmdir root", "os.rmdir('Work')"), ("rename root", "os.rename('Work', 'Mine')")]) == ["rmdir root": "EACCES", "rename root": "EACCES"])

        // → Bob leaves → it goes from his mount; Alice keeps her notes
        #expect(bob("leave '\(bobShared)/Work/later.md'").status == 0)
        #expect(await eventually { !FileManager.default.fileExists(atPath: "\(bobShared)/Work") })
        #expect(fileText("\(aliceWork)/later.md") == "later\n")

        // → Alice stops sharing, makes plan.md public read-only → a third account accepts the link
        #expect(alice("unshare '\(aliceWork)'").status == 0)
        let publicShare = alice("share '\(aliceWork)/plan.md' --public --read-only --json")
        let publicURL = (Self.json(publicShare) as? [String: Any])?["url"] as? String ?? ""
        #expect(publicShare.status == 0, "\(publicShare)")
        // notesd here has no --listen: the link is for `notes accept`, and the CLI says so
        #expect(publicShare.stderr.contains("reaches no one yet") && publicShare.stderr.contains("--listen"), "\(publicShare)")
        let carolToken = try await daemon.client().createAccount(name: "carol").token
        let carol = Self.notes("accept '\(publicURL)' --json", token: carolToken, daemon: daemon)
        #expect((Self.json(carol) as? [String: Any])?["owner"] as? String == "alice", "\(carol)")
        let carolShares = try await daemon.client(token: carolToken).shares()
        #expect(carolShares.first?.participant(named: "carol")?.role == .publicUser)
    }

    @Test func badInputGetsAClearMessageAndNothingChanges() async throws {
        let people = try await TwoMounts(mountBob: true)
        let daemon = people.daemon
        let alice = people.cli(people.aliceToken)
        let bob = people.cli(people.bobToken)
        let aliceNote = people.aliceMount.path("private/plan.md")
        #expect(Shell.run("printf 'x' > '\(aliceNote)'").status == 0)
        #expect(await eventually { xattr(aliceNote, "record") != nil })

        let unknown = alice("share '\(aliceNote)' --with nobody")
        #expect(unknown.status != 0 && unknown.stderr.contains("notes account create nobody"), "\(unknown)")
        #expect(alice("share /tmp --with bob").stderr.contains("not a note or folder in a notes mount"))
        let forged = bob("accept http://localhost/s/forged-token")
        #expect(forged.status != 0 && forged.stderr.contains("No share has this URL"), "\(forged)")
        let notShared = bob("leave '\(aliceNote)'")
        #expect(notShared.status != 0)

        let shared = alice("share '\(aliceNote)' --with bob --json")
        let url = (Self.json(shared) as? [String: Any])?["url"] as? String ?? ""
        #expect(bob("accept '\(url)'").status == 0)
        let twice = bob("accept '\(url)'")
        #expect(twice.status != 0, "\(twice)")
        // an email invitation to someone without an account waits for that account
        #expect(alice("share '\(aliceNote)' --with dora@example.com").status == 0)
        _ = try await daemon.client().createAccount(name: "dora", email: "dora@example.com")
        let doraToken = try await daemon.client().issueToken(for: "dora").token
        let dora = Self.notes("invitations --json", token: doraToken, daemon: daemon)
        #expect((Self.json(dora) as? [[String: Any]])?.first?["owner"] as? String == "alice", "\(dora)")
        let bobPath = people.bobMount!.path("shared/alice/plan.md")
        #expect(await eventually { fileText(bobPath) == "x" })
        let participantUnshares = bob("unshare '\(bobPath)'")
        #expect(participantUnshares.status != 0 && participantUnshares.stderr.contains("notes leave"), "\(participantUnshares)")
        let sharesShared = bob("share '\(bobPath)' --with carol")
        #expect(sharesShared.status != 0 && sharesShared.stderr.contains("only the owner"), "\(sharesShared)")
        // nothing changed: bob is still the one accepted participant
        let share = try await people.alice.shares().first
        #expect(share?.participants.filter { $0.status == .accepted }.compactMap(\.name).sorted() == ["alice", "bob"])
        // a removed participant's URL no longer lets him in
        #expect(alice("unshare '\(aliceNote)' --with bob").status == 0)
        let again = bob("accept '\(url)'")
        #expect(again.status != 0, "\(again)")
    }
}

extension TwoPersonTests {
    @Test func publicLinkWithPasswordExpiryAndRotation() async throws {
        let people = try await TwoMounts()
        let daemon = people.daemon
        let alice = people.cli(people.aliceToken)
        let note = people.aliceMount.path("private/open.md")
        #expect(Shell.run("printf 'open' > '\(note)'").status == 0)
        let uploaded = await eventually {
            let count = (try? await people.alice.zoneChanges(people.aliceDefault, since: nil).records.count) ?? 0
            return count == 1 && xattr(note, "record") != nil
        }
        #expect(uploaded)

        // a password: without it or with a wrong one nobody gets in; with it, they do
        let shared = Shell.run(
            "printf 's3cret\\n' | '\(MountProcess.notesBinary)' share '\(note)' --public --password --json",
            environment: ["NOTES_TOKEN": people.aliceToken, "NOTES_SOCKET": daemon.socket])
        #expect(shared.status == 0, "\(shared)")
        let url = (Self.json(shared) as? [String: Any])?["url"] as? String ?? ""
        #expect((Self.json(shared) as? [String: Any])?["passwordProtected"] as? Bool == true)
        let accept = { (token: String, input: String?) in
            Shell.run(
                (input.map { "printf '\($0)\\n' | " } ?? "") + "'\(MountProcess.notesBinary)' accept '\(url)'" + (input == nil ? "" : " --password"),
                environment: ["NOTES_TOKEN": token, "NOTES_SOCKET": daemon.socket])
        }
        let bob = accept(people.bobToken, nil)
        #expect(bob.status != 0 && bob.stderr.contains("needs a password"), "\(bob)")
        let wrong = accept(people.bobToken, "guess")
        #expect(wrong.status != 0 && wrong.stderr.contains("not the link's password"), "\(wrong)")
        #expect(accept(people.bobToken, "s3cret").status == 0)

        // an expiry is set from the command line (its effect is tested on the store's
        // clock: SharingStoreTests.anExpiredLinkAnswersLikeAnUnknownOneOnTheStoresClock)
        let expiring = alice("share '\(note)' --expires 7d --json")
        #expect(expiring.status == 0, "\(expiring)")
        let expiry = ((Self.json(expiring) as? [String: Any])?["publicExpiresAt"] as? String).flatMap(ISO8601.date(from:))
        #expect(expiry.map { abs($0.timeIntervalSinceNow - 7 * 86_400) < 60 } == true, "\(expiring)")
        let carolToken = try await daemon.client().createAccount(name: "carol").token

        // a rotated URL is revoked: the old one is unknown, the new one works
        #expect(alice("share '\(note)' --expires 0").status == 0)
        let rotated = alice("share '\(note)' --rotate-url --json")
        let newURL = (Self.json(rotated) as? [String: Any])?["url"] as? String ?? ""
        #expect(!newURL.isEmpty && newURL != url)
        #expect(accept(carolToken, "s3cret").stderr.contains("No share has this URL"))
        let fresh = Shell.run(
            "printf 's3cret\\n' | '\(MountProcess.notesBinary)' accept '\(newURL)' --password",
            environment: ["NOTES_TOKEN": carolToken, "NOTES_SOCKET": daemon.socket])
        #expect(fresh.status == 0, "\(fresh)")
        #expect(alice("share '\(note)' --duration").status != 0)
    }
}
