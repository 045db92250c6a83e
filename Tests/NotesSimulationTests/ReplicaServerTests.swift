import Foundation
import NotesClient
import NotesModel
import NotesReplica
import Testing

@testable import NotesMount

/// A replica belongs to one server: bob on a team server does not mount the replica of
/// bob on this machine's notesd, whose queued saves would go up to the wrong place.
struct ReplicaServerTests {
    @Test func aReplicaIsTakenByItsOwnServerOnly() throws {
        let folder = NSTemporaryDirectory() + "notes-replica-server-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = "\(folder)/bob.replica.sqlite"
        let replica = try Replica(path: path, commitsInBackground: false)
        // A replica from before servers were recorded is taken as the current one's.
        try MountRunner.checkServer(of: replica, at: path, client: NotesClient(endpoint: .unixSocket("/run/notesd.sock")), account: "bob")
        #expect(try replica.meta("server") == "local notesd")
        try MountRunner.checkServer(of: replica, at: path, client: NotesClient(endpoint: .unixSocket("/elsewhere.sock")), account: "bob")

        let team = NotesClient(endpoint: .http("https://notes.example.com:8420"))
        #expect {
            try MountRunner.checkServer(of: replica, at: path, client: team, account: "bob")
        } throws: { error in
            (error as? NotesError)?.code == .constraintViolation && (error as? NotesError)?.message.contains("--cache-dir") == true
        }
        // Another folder holds the team server's replica.
        let teamPath = "\(folder)/team/bob.replica.sqlite"
        try FileManager.default.createDirectory(atPath: "\(folder)/team", withIntermediateDirectories: true)
        let teamReplica = try Replica(path: teamPath, commitsInBackground: false)
        try MountRunner.checkServer(of: teamReplica, at: teamPath, client: team, account: "bob")
        try MountRunner.checkServer(of: teamReplica, at: teamPath, client: NotesClient(endpoint: .http("HTTPS://notes.example.com:8420/")), account: "bob")
    }
}
