#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Dispatch
import Synchronization

/// Watches the folder of notesd's Unix socket (inotify) and calls `appeared` when the
/// socket is made again, so that a mount reconnects as soon as notesd restarts rather
/// than after its pause between attempts. When the folder itself goes away with notesd
/// (a runtime folder removed by the service manager), the folder above it is watched
/// until the folder is back.
final class SocketWatch: Sendable {
    private struct Paths {
        var parent: String
        var folder: String
        var folderName: String
        var socket: String
        var socketName: String
    }
    private struct Event {
        var watch: Int32
        var mask: UInt32
        var name: String
    }
    private struct Watches {
        var folder: Int32 = -1
        var parent: Int32 = -1
    }

    private let source: Mutex<(any DispatchSourceRead)?>

    init?(socketPath: String, appeared: @escaping @Sendable () -> Void) {
        let paths = Self.paths(of: socketPath)
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { return nil }
        let watches = Mutex(Watches())
        let arrivals = UInt32(IN_CREATE | IN_MOVED_TO | IN_ATTRIB)
        /// Watches the folder, or the folder above until the folder is back; true when the
        /// socket is there already (it may have come while nothing watched).
        @Sendable func watchFolder(_ watches: inout Watches) -> Bool {
            for _ in 0..<2 {
                watches.folder = inotify_add_watch(descriptor, paths.folder, arrivals)
                if watches.folder >= 0 {
                    if watches.parent >= 0 { _ = inotify_rm_watch(descriptor, watches.parent) }
                    watches.parent = -1
                    return access(paths.socket, F_OK) == 0
                }
                // The folder may come back between these two calls: tried once more after.
                if watches.parent < 0 { watches.parent = inotify_add_watch(descriptor, paths.parent, UInt32(IN_CREATE | IN_MOVED_TO)) }
            }
            return false
        }
        watches.withLock { _ = watchFolder(&$0) }
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: DispatchQueue(label: "notes.socket-watch"))
        source.setEventHandler {
            var back = false
            for event in Self.drain(descriptor) {
                watches.withLock { watches in
                    if event.watch == watches.folder && event.mask & UInt32(IN_IGNORED) != 0 {
                        back = watchFolder(&watches) || back
                    } else if event.watch == watches.folder && event.name == paths.socketName {
                        back = true
                    } else if event.watch == watches.parent && event.name == paths.folderName {
                        back = watchFolder(&watches) || back
                    }
                }
            }
            if back { appeared() }
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        self.source = Mutex(source)
    }

    func stop() {
        source.withLock { source in
            source?.cancel()
            source = nil
        }
    }

    deinit { stop() }

    private static func paths(of socket: String) -> Paths {
        func split(_ path: String) -> (String, String) {
            guard let slash = path.lastIndex(of: "/") else { return (".", path) }
            return (slash == path.startIndex ? "/" : String(path[..<slash]), String(path[path.index(after: slash)...]))
        }
        let (folder, socketName) = split(socket)
        let (parent, folderName) = split(folder)
        return Paths(parent: parent, folder: folder, folderName: folderName, socket: socket, socketName: socketName)
    }

    /// Every event waiting on the descriptor.
    private static func drain(_ descriptor: Int32) -> [Event] {
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let header = MemoryLayout<inotify_event>.size
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return events }
            buffer.withUnsafeBytes { raw in
                var offset = 0
                while offset + header <= count {
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let start = offset + header
                    let end = min(count, start + Int(event.len))
                    let name = String(decoding: raw[start..<end].prefix { $0 != 0 }, as: UTF8.self)
                    events.append(Event(watch: event.wd, mask: event.mask, name: name))
                    offset = end
                }
            }
        }
    }
}
