#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import Hummingbird
import ServiceLifecycle

/// The API application on the Unix socket. Once bound, the socket is opened to every
/// local user (mode 0666): the kernel's peer credentials, not the file mode, decide
/// who each caller is. The socket file is removed on shutdown.
struct UnixSocketServer<App: ApplicationProtocol>: Service {
    let application: App
    let path: String

    func run() async throws {
        let watcher = Task {
            for _ in 0..<200 where !FileManager.default.fileExists(atPath: path) {
                try await Task.sleep(for: .milliseconds(10))
            }
            chmod(path, 0o666)
        }
        defer {
            watcher.cancel()
            unlink(path)
        }
        try await application.run()
    }
}

/// Asks whether something accepts connections on a Unix socket path.
enum SocketProbe {
    static func isListening(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return result == 0
    }
}
