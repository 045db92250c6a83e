import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// notesd's TCP listener with `--tls-cert` and `--tls-key`, reached by the real client
/// and the real `notes` over `https://`, with a CA of the test's own made by openssl.
@Suite struct TLSTests {
    typealias Certificates = TestCertificates

    /// What a call gives: the account's name, or the error's message.
    static func whoami(_ client: NotesClient) async -> Result<String, NotesError> {
        do {
            return .success(try await client.whoami().name)
        } catch {
            return .failure(error)
        }
    }

    @Test func theListenerSpeaksTLSToClientsThatTrustItsCA() async throws {
        let certificates = try Certificates.make()
        defer { try? FileManager.default.removeItem(atPath: certificates.folder) }
        let daemon = try await DaemonProcess.started(tcp: true, arguments: ["--tls-cert", certificates.certificate, "--tls-key", certificates.key])
        let port = try #require(daemon.port)
        let token = try await daemon.client().createAccount(name: "tina", email: nil).token

        // The client with the CA: every kind of call, the event stream included.
        let trusting = NotesClient(endpoint: .http("https://localhost:\(port)"), token: token, caFile: certificates.ca, timeoutSeconds: 30)
        let name = try await Self.whoami(trusting).get()
        #expect(name == "tina")
        let zone = ZoneID(owner: "tina", name: ZoneID.defaultZoneName)
        var stream = trusting.events().makeAsyncIterator()
        let first = try await stream.next()
        #expect(first == .ready)

        // Share URLs name https:// when notesd speaks TLS and no --public-url is given.
        _ = try await trusting.modify(ModifyRequest(zone: zone, saves: [RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "p")]))
        let share = try await trusting.createShare(NewShare(zone: zone, rootRecordName: "plan", publicPermission: .readOnly))
        #expect(share.url?.hasPrefix("https://127.0.0.1:\(port)/s/") == true, "\(share.url ?? "no URL")")

        // Without the CA the handshake fails, and the message names the option.
        let untrusting = NotesClient(endpoint: .http("https://localhost:\(port)"), token: token, timeoutSeconds: 30)
        let refused = await Self.whoami(untrusting)
        guard case .failure(let untrusted) = refused else {
            Issue.record("a client without the CA was let through")
            return
        }
        #expect(untrusted.code == .serviceUnavailable && untrusted.message.contains("--ca-file") && untrusted.message.contains("not signed by a CA"), "\(untrusted.message)")

        // Plain HTTP to the TLS port: told to use https://.
        let plain = await Self.whoami(NotesClient(endpoint: .http("http://127.0.0.1:\(port)"), token: token, timeoutSeconds: 30))
        guard case .failure(let inClear) = plain else {
            Issue.record("plain HTTP was answered on the TLS port")
            return
        }
        #expect(inClear.message.contains("https://"), "\(inClear.message)")

        // The real CLI: --ca-file, and NOTES_CA_FILE.
        let byOption = Shell.run("\(MountProcess.notesBinary) whoami --server https://localhost:\(port) --ca-file \(certificates.ca) --token \(token)")
        #expect(byOption.status == 0 && byOption.stdout.contains("tina"), "\(byOption.stdout) \(byOption.stderr)")
        let byEnvironment = Shell.run(
            "\(MountProcess.notesBinary) whoami --server https://127.0.0.1:\(port)",
            environment: ["NOTES_CA_FILE": certificates.ca, "NOTES_TOKEN": token])
        #expect(byEnvironment.status == 0 && byEnvironment.stdout.contains("tina"), "\(byEnvironment.stdout) \(byEnvironment.stderr)")
        let withoutCA = Shell.run("\(MountProcess.notesBinary) whoami --server https://localhost:\(port) --token \(token)")
        #expect(withoutCA.status == 69 && withoutCA.stderr.contains("--ca-file"), "\(withoutCA.status) \(withoutCA.stderr)")

        // curl agrees that this is TLS with that certificate.
        let curl = Shell.run("curl -s --cacert \(certificates.ca) https://localhost:\(port)/healthz")
        #expect(curl.stdout.contains(#""status":"ok""#), "\(curl.stdout) \(curl.stderr)")
        // Listening beyond loopback with TLS is not warned of.
        let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
        #expect(!log.contains("without TLS"))
        _ = try await daemon.stop()
    }

    /// A wrong or missing file stops notesd at start with its name, not at a client's
    /// handshake.
    @Test func badCertificateOptionsStopNotesdAtStart() async throws {
        let certificates = try Certificates.make()
        defer { try? FileManager.default.removeItem(atPath: certificates.folder) }
        let port = DaemonProcess.freePort()
        let folder = certificates.folder
        let cases: [(arguments: String, says: String)] = [
            ("--listen 127.0.0.1:\(port) --tls-cert \(certificates.certificate)", "go together"),
            ("--tls-cert \(certificates.certificate) --tls-key \(certificates.key)", "--listen"),
            ("--listen 127.0.0.1:\(port) --tls-cert \(folder)/missing.pem --tls-key \(certificates.key)", "missing.pem"),
            ("--listen 127.0.0.1:\(port) --tls-cert \(certificates.key) --tls-key \(certificates.key)", "must be PEM"),
            ("--listen 127.0.0.1:\(port) --tls-cert \(certificates.certificate) --tls-key \(certificates.strayKey)", "does not go with"),
        ]
        for (arguments, says) in cases {
            let run = Shell.run("\(DaemonProcess.binary) --data-dir \(folder)/data --socket \(folder)/s.sock \(arguments)")
            #expect(run.status != 0 && run.stderr.contains(says), "notesd \(arguments): \(run.status) \(run.stderr)")
        }
    }
}
