import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// Two people on one real daemon, each with a real mount: alice owns notes, bob is
/// the one she shares with.
final class TwoMounts: @unchecked Sendable {
    let daemon: DaemonProcess
    let alice: NotesClient
    let bob: NotesClient
    let aliceToken: String
    let bobToken: String
    var aliceMount: MountProcess!
    var bobMount: MountProcess?

    init(mountBob: Bool = false) async throws {
        daemon = try await DaemonProcess.started()
        aliceToken = try await daemon.client().createAccount(name: "alice", email: "alice@example.com").token
        bobToken = try await daemon.client().createAccount(name: "bob", email: "bob@example.com").token
        alice = daemon.client(token: aliceToken)
        bob = daemon.client(token: bobToken)
        aliceMount = try MountProcess(daemon: daemon, token: aliceToken)
        if mountBob { bobMount = try MountProcess(daemon: daemon, token: bobToken) }
    }

    func mountBob() throws -> MountProcess {
        if let bobMount { return bobMount }
        let mount = try MountProcess(daemon: daemon, token: bobToken)
        bobMount = mount
        return mount
    }

    /// `notes ARGS` as the account behind `token`, against this daemon.
    func cli(_ token: String) -> @Sendable (String) -> Shell.Result { daemon.cli(token) }

    var aliceDefault: ZoneID { ZoneID(owner: "alice", name: ZoneID.defaultZoneName) }

    /// Saves a note through the API (as the owner would from another machine).
    @discardableResult
    func saveNote(_ client: NotesClient, zone: ZoneID, name: String, body: String, parent: String? = nil, recordName: String? = nil, changeTag: String? = nil) async throws
        -> Record
    {
        let save = RecordSave(recordName: recordName ?? UUID().uuidString.lowercased(), recordType: .note, name: name, parent: parent, body: body, changeTag: changeTag)
        return try await client.modify(ModifyRequest(zone: zone, saves: [save])).saved[0]
    }

    func saveFolder(_ client: NotesClient, zone: ZoneID, name: String, parent: String? = nil) async throws -> Record {
        let save = RecordSave(recordName: UUID().uuidString.lowercased(), recordType: .folder, name: name, parent: parent)
        return try await client.modify(ModifyRequest(zone: zone, saves: [save])).saved[0]
    }

    /// Shares `record` with bob and has bob accept it.
    @discardableResult
    func shareWithBob(zone: ZoneID, root: String?, permission: ParticipantPermission) async throws -> Share {
        let share = try await alice.createShare(NewShare(zone: zone, rootRecordName: root, participants: [Invitee(name: "bob", permission: permission)]))
        _ = try await bob.accept(url: share.url ?? share.urlToken)
        return share
    }
}

/// Reads a `user.notes.*` extended attribute the way scripts do; `nil` when it is missing.
func xattr(_ path: String, _ name: String) -> String? {
    let result = Shell.run("getfattr --only-values -n user.notes.\(name) '\(path)'")
    return result.status == 0 ? result.stdout : nil
}

func fileText(_ path: String) -> String? {
    try? String(contentsOfFile: path, encoding: .utf8)
}

/// Waits until `mount` has nothing left to upload (its replica's queue is empty): the
/// condition to wait for before asserting what is *not* on notesd.
func queueDrained(_ mount: MountProcess, _ seconds: Double = 20) async -> Bool {
    let replicas = ((try? FileManager.default.contentsOfDirectory(atPath: mount.cacheDir)) ?? []).filter { $0.hasSuffix(".replica.sqlite") }
    guard let replica = replicas.first else { return false }
    return await eventually(seconds) {
        Shell.run("sqlite3 '\(mount.cacheDir)/\(replica)' 'SELECT COUNT(*) FROM records WHERE dirty > 0'").stdout == "0\n"
    }
}

/// Polls `condition` until it holds or `seconds` pass.
func eventually(_ seconds: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Runs file operations in Python and reports each one's errno name (or "ok"), so a
/// test can assert the exact error an editor or script would see.
func errnos(_ directory: String, _ operations: [(String, String)]) -> [String: String] {
    var script = "import os, errno\n"
    script += "def t(name, f):\n    try:\n        f(); print(name + ':ok')\n    except OSError as e:\n        print(name + ':' + errno.errorcode[e.errno])\n"
    for (name, code) in operations {
        script += "t('\(name)', lambda: \(code))\n"
    }
    let path = "/tmp/errnos-\(UUID().uuidString.prefix(8)).py"
    try? script.write(toFile: path, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let result = Shell.run("python3 \(path)", in: directory)
    var answers: [String: String] = [:]
    for line in result.stdout.split(separator: "\n") {
        let parts = line.split(separator: ":", maxSplits: 1)
        if parts.count == 2 { answers[String(parts[0])] = String(parts[1]) }
    }
    return answers
}

extension DaemonProcess {
    /// `notes ARGS` as the account behind `token`, against this daemon.
    func cli(_ token: String) -> @Sendable (String) -> Shell.Result {
        let socket = self.socket
        return { arguments in
            Shell.run("'\(MountProcess.notesBinary)' \(arguments)", environment: ["NOTES_TOKEN": token, "NOTES_SOCKET": socket])
        }
    }
}
