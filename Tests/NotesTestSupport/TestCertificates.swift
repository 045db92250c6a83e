import Foundation
import NotesModel

/// A CA, and a server certificate it signed for localhost and 127.0.0.1, in `folder`;
/// also a second key that belongs to no certificate.
public struct TestCertificates: Sendable {
    public let folder: String
    public var ca: String { "\(folder)/ca.pem" }
    public var certificate: String { "\(folder)/server.pem" }
    public var key: String { "\(folder)/server.key" }
    public var strayKey: String { "\(folder)/stray.key" }

    public static func make() throws -> TestCertificates {
        let folder = NSTemporaryDirectory() + "notes-tls-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let made = Shell.run(
            """
            set -e
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj '/CN=notes test CA' -keyout ca.key -out ca.pem
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=localhost' -keyout server.key -out server.csr
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san -out server.pem
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out stray.key
            """, in: folder)
        guard made.status == 0 else { throw NotesError(.internalError, "openssl failed: \(made.stderr)") }
        return TestCertificates(folder: folder)
    }
}
