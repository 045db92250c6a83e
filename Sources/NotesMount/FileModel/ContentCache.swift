#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import NotesFS

/// The bytes of the files a mount holds, by inode: open files, closed files kept for a
/// quick reopen, scratch files (which have nowhere else), and files whose save waits in
/// the replica's writer. It counts what it keeps in memory so that the tree can hold
/// that to a budget: past it, closed files are dropped (they are read from the replica
/// again) and open ones move to a spill file, as rclone's VFS cache keeps what is being
/// written on disk rather than in memory. Four processes writing 16 MiB files at once
/// (fsstress) would otherwise hold 64 MiB here and several copies more elsewhere.
///
/// Not thread-safe: it lives in the tree's state, under the tree's lock.
struct ContentCache {
    /// One file's bytes.
    enum Content {
        case memory([UInt8])
        /// In an unlinked file of the cache directory (it vanishes with its descriptor,
        /// or with the process): nothing is left behind by a crash.
        case spilled(SpillFile, count: Int)

        var count: Int {
            switch self {
            case .memory(let bytes): bytes.count
            case .spilled(_, let count): count
            }
        }
    }

    /// Bytes of content held in memory (spilled content not counted).
    private(set) var residentBytes = 0
    /// How many files' content is in spill files.
    private(set) var spilledCount = 0
    private var entries: [Inode: Content] = [:]
    /// Where spill files are made.
    let spillDirectory: String

    init(spillDirectory: String) {
        self.spillDirectory = spillDirectory
    }

    func has(_ inode: Inode) -> Bool { entries[inode] != nil }

    /// The content's size, `nil` when none is held.
    func count(_ inode: Inode) -> Int? { entries[inode]?.count }

    func isSpilled(_ inode: Inode) -> Bool {
        if case .spilled = entries[inode] { return true }
        return false
    }

    /// Inodes whose content is in memory, with its size.
    var resident: [(inode: Inode, count: Int)] {
        entries.compactMap { inode, content in
            if case .memory(let bytes) = content { return (inode, bytes.count) }
            return nil
        }
    }

    /// Replaces (or, with `nil`, drops) a file's content.
    mutating func set(_ inode: Inode, _ bytes: [UInt8]?) {
        remove(inode)
        guard let bytes else { return }
        entries[inode] = .memory(bytes)
        residentBytes += bytes.count
    }

    mutating func remove(_ inode: Inode) {
        switch entries.removeValue(forKey: inode) {
        case .memory(let bytes): residentBytes -= bytes.count
        case .spilled: spilledCount -= 1
        case nil: break
        }
    }

    /// The whole content (read back from its spill file if it was spilled).
    func bytes(_ inode: Inode) throws(FileSystemError) -> [UInt8]? {
        switch entries[inode] {
        case nil: return nil
        case .memory(let bytes): return bytes
        case .spilled(let file, let count): return try file.read(offset: 0, count: count)
        }
    }

    /// Up to `size` bytes from `offset` (fewer at the end, none past it).
    func read(_ inode: Inode, offset: Int, size: Int) throws(FileSystemError) -> [UInt8] {
        guard let content = entries[inode], offset < content.count, size > 0 else { return [] }
        let end = min(content.count, offset + size)
        switch content {
        case .memory(let bytes): return Array(bytes[offset..<end])
        case .spilled(let file, _): return try file.read(offset: offset, count: end - offset)
        }
    }

    /// Writes `bytes` at `offset`, filling a gap before it with zeros. A file with no
    /// content yet starts empty.
    mutating func write(_ inode: Inode, offset: Int, _ bytes: UnsafeRawBufferPointer) throws(FileSystemError) {
        let end = offset + bytes.count
        switch entries.removeValue(forKey: inode) ?? .memory([]) {
        case .memory(var content):
            residentBytes -= content.count
            // (Removed from the table first: the array is uniquely held and grows in place.)
            if content.count < end { content.append(contentsOf: repeatElement(0, count: end - content.count)) }
            content.replaceSubrange(offset..<end, with: bytes)
            residentBytes += content.count
            entries[inode] = .memory(content)
        case .spilled(let file, let count):
            entries[inode] = .spilled(file, count: count)
            try file.write(bytes, at: offset)
            entries[inode] = .spilled(file, count: max(count, end))
        }
    }

    /// Cuts or extends (with zeros) a file's content to `size` bytes.
    mutating func truncate(_ inode: Inode, to size: Int) throws(FileSystemError) {
        switch entries.removeValue(forKey: inode) ?? .memory([]) {
        case .memory(var content):
            residentBytes -= content.count
            if content.count > size {
                content.removeSubrange(size...)
            } else {
                content.append(contentsOf: repeatElement(0, count: size - content.count))
            }
            residentBytes += content.count
            entries[inode] = .memory(content)
        case .spilled(let file, let count):
            entries[inode] = .spilled(file, count: count)
            try file.truncate(to: size)
            entries[inode] = .spilled(file, count: size)
        }
    }

    /// Gives back what an array grown by appends holds beyond its bytes (up to twice
    /// them): the count would not see it, the process's memory would.
    mutating func trim(_ inode: Inode) {
        guard case .memory(let content) = entries[inode], content.capacity > content.count + content.count / 4 + 4_096 else { return }
        entries[inode] = .memory(content.withUnsafeBufferPointer { Array($0) })
    }

    /// Moves a file's content from memory to a spill file.
    mutating func spill(_ inode: Inode) throws(FileSystemError) {
        guard case .memory(let bytes) = entries[inode] else { return }
        let file = try SpillFile(in: spillDirectory)
        let written = bytes.withUnsafeBytes { buffer in Result { () throws(FileSystemError) in try file.write(buffer, at: 0) } }
        try written.get()
        entries[inode] = .spilled(file, count: bytes.count)
        residentBytes -= bytes.count
        spilledCount += 1
    }
}

/// An unlinked file in the cache directory, read and written at offsets; closed with
/// the last reference to it.
final class SpillFile: Sendable {
    let descriptor: Int32

    init(in directory: String) throws(FileSystemError) {
        var template = Array("\(directory)/.spill-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw FileSystemError(errno == ENOSPC ? ENOSPC : EIO) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = Glibc.unlink($0.baseAddress!) }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    func read(offset: Int, count: Int) throws(FileSystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw FileSystemError(EIO) }
            done += got
        }
        return bytes
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(FileSystemError) {
        var done = 0
        while done < bytes.count {
            let put = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if put < 0 && errno == EINTR { continue }
            guard put > 0 else { throw FileSystemError(errno == ENOSPC ? ENOSPC : EIO) }
            done += put
        }
    }

    func truncate(to size: Int) throws(FileSystemError) {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw FileSystemError(errno == ENOSPC ? ENOSPC : EIO) }
    }
}
