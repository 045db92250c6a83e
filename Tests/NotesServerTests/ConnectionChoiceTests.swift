import NotesClient
import NotesModel
import Testing

/// Which notesd a command talks to: options, then environment variables, then the saved
/// profile, then the local socket.
struct ConnectionChoiceTests {
    static let config = ClientConfig(
        defaultProfile: "team",
        profiles: [
            "team": .init(server: "https://notes.example.com:8420", token: "ntk_team", caFile: "/home/bob/.config/notes/team-ca.pem", account: "bob"),
            "work": .init(server: "https://work.example.com", token: "ntk_work", account: "robert"),
        ])

    static func choose(_ asked: ConnectionChoice.Asked = .init(), _ environment: [String: String] = [:], config: ClientConfig = config) throws -> ConnectionChoice {
        try ConnectionChoice.choose(asked, environment: environment, defaultSocket: "/run/user/1000/notesd.sock", config: { config }, configPath: "/home/bob/.config/notes/config")
    }

    @Test func optionsComeBeforeTheEnvironmentWhichComesBeforeTheProfile() throws {
        // Nothing given: the default profile.
        let fromProfile = try Self.choose()
        #expect(fromProfile.server == "https://notes.example.com:8420" && fromProfile.token == "ntk_team" && fromProfile.source == .profile)
        #expect(fromProfile.caFile == "/home/bob/.config/notes/team-ca.pem")
        // NOTES_PROFILE names another; --profile beats it.
        #expect(try Self.choose(.init(), ["NOTES_PROFILE": "work"]).token == "ntk_work")
        let named = try Self.choose(.init(profile: "team"), ["NOTES_PROFILE": "work"])
        #expect(named.token == "ntk_team" && named.source == .profile && named.profile == "team")
        // NOTES_SERVER beats the profile, and borrows the token saved for that same server.
        let sameServer = try Self.choose(.init(), ["NOTES_SERVER": "https://WORK.example.com/"])
        #expect(sameServer.server == "https://WORK.example.com/" && sameServer.token == "ntk_work" && sameServer.source == .environment)
        let otherServer = try Self.choose(.init(), ["NOTES_SERVER": "http://127.0.0.1:8420", "NOTES_TOKEN": "ntk_env"])
        #expect(otherServer.token == "ntk_env" && otherServer.profile == nil)
        // --server and --token beat the environment; --socket beats everything.
        let given = try Self.choose(.init(server: "http://10.0.0.2:8420", token: "ntk_opt"), ["NOTES_SERVER": "http://127.0.0.1:8420", "NOTES_TOKEN": "ntk_env"])
        #expect(given.server == "http://10.0.0.2:8420" && given.token == "ntk_opt" && given.source == .options)
        let socket = try Self.choose(.init(socket: "/tmp/n.sock"), ["NOTES_SERVER": "http://127.0.0.1:8420"])
        #expect(socket.socket == "/tmp/n.sock" && socket.server == nil)
        // NOTES_SOCKET beats the profile, and an empty variable counts as unset.
        #expect(try Self.choose(.init(), ["NOTES_SOCKET": "/tmp/e.sock"]).socket == "/tmp/e.sock")
        #expect(try Self.choose(.init(), ["NOTES_SOCKET": "", "NOTES_SERVER": ""]).source == .profile)
    }

    @Test func withNoProfileTheLocalSocketAndAMissingProfileIsNamed() throws {
        let local = try Self.choose(config: ClientConfig())
        #expect(local.source == .localSocket && local.socket == "/run/user/1000/notesd.sock")
        // One profile and no default: that one.
        let single = ClientConfig(profiles: ["work": Self.config.profiles["work"]!])
        #expect(try Self.choose(config: single).profile == "work")
        #expect {
            try Self.choose(.init(profile: "home"))
        } throws: { error in
            let message = (error as? NotesError)?.message ?? ""
            return message.contains("no profile home") && message.contains("team, work") && message.contains("notes login URL --profile home")
        }
        // A socket given never reads the configuration (which may be unreadable).
        let unreadable: () throws(NotesError) -> ClientConfig = { () throws(NotesError) in throw NotesError(.permissionFailure, "mode 0644") }
        let chosen = try ConnectionChoice.choose(.init(socket: "/tmp/s"), environment: [:], defaultSocket: "/x", config: unreadable, configPath: "/c")
        #expect(chosen.socket == "/tmp/s")
    }
}
