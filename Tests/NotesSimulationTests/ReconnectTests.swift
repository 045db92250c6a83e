#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
@testable import NotesMount
import Synchronization
import Testing

/// How a mount learns that notesd is back: the pause between attempts ends when the
/// socket is made again.
@Suite struct ReconnectTests {
    @Test func aRingEndsThePauseWhetherItComesBeforeOrDuringIt() async {
        let bell = Doorbell()
        bell.ring()
        #expect(await bell.pause(upTo: .seconds(60)), "a ring before the pause did not end it")
        let waiting = Task { await bell.pause(upTo: .seconds(60)) }
        bell.ring()
        #expect(await waiting.value, "a ring during the pause did not end it")
        #expect(await !bell.pause(upTo: .milliseconds(1)), "an unrung pause ended early")
    }

    @Test func theWatchSeesTheSocketMadeAgainEvenWhenItsFolderWasRemoved() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("notes-watch-\(UUID().uuidString)").path
        let folder = "\(root)/run"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let socket = "\(folder)/notesd.sock"
        let seen = Mutex(0)
        let watch = try #require(SocketWatch(socketPath: socket) { seen.withLock { $0 += 1 } })
        defer { watch.stop() }

        try listen(at: socket)
        #expect(await Self.eventually { seen.withLock { $0 } == 1 }, "the socket made in its folder went unseen")

        // A service manager's runtime folder goes with the service and comes back with it.
        try FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try listen(at: socket)
        #expect(await Self.eventually { seen.withLock { $0 } >= 2 }, "the socket made in a folder made again went unseen")
    }

    /// Binds a Unix socket at `path` (and closes it: the file stays, as a crashed
    /// notesd's does).
    func listen(at path: String) throws {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.prefix(bytes.count - 1).enumerated() { bytes[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind \(path): \(String(cString: strerror(errno)))")
    }

    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
}
