#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
public import NotesModel
import Synchronization

/// The mount's `.notes/events`: one JSON line per change that reached the mount from
/// notesd (who saved or deleted what, where, when), appended as changes arrive, so that
/// `tail -f` follows a share's activity. The lines live in a file of the cache
/// directory, begun anew by each mount and emptied past `limit` bytes (`tail -f` says
/// the file was truncated and goes on).
public final class EventLog: Sendable {
    /// One line of the log.
    struct Event: Encodable {
        /// `saved` or `deleted`.
        var change: String
        var zone: ZoneID
        var recordName: String
        /// Where the mount shows it (from the mount's root), when it shows it.
        var path: String?
        var name: String?
        var type: RecordType?
        /// Who saved it, and when (a deletion does not say).
        var by: String?
        var at: Date?
        var share: String?
    }

    private let descriptor: Int32
    private let limit: Int
    private let lock = Mutex(())

    public init(path: String, limit: Int = 8 << 20) throws(NotesError) {
        descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw NotesError(.internalError, "Cannot open the event log \(path): \(String(cString: strerror(errno))).")
        }
        self.limit = limit
    }

    deinit { close(descriptor) }

    func append(_ events: [Event]) {
        guard !events.isEmpty else { return }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes: [UInt8] = []
        for event in events {
            guard let line = try? encoder.encode(event) else { continue }
            bytes += line
            bytes.append(0x0A)
        }
        lock.withLock { _ in
            if size + bytes.count > limit { _ = ftruncate(descriptor, 0) }
            _ = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        }
    }

    var size: Int {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
    }

    func read(offset: Int, size: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: size)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, size, off_t(offset)) }
        return count > 0 ? Array(buffer.prefix(count)) : []
    }
}
