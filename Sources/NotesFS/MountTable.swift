#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The kernel's table of mounts as this process sees it (`/proc/self/mountinfo`).
///
/// The file is read to its end with `read(2)`: Foundation's `String(contentsOfFile:)`
/// stops after the first 4 KiB of a file the kernel makes as it is read, and the newest
/// mounts come last. On a machine with a few dozen mounts a notes mount that was up
/// was missing from the table.
public struct MountTable: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// Where it is mounted, with the kernel's escapes (`\040` for a space) undone.
        public let mountPoint: String
        /// `fuse.notes` for a notes mount (FUSE names the subtype after the dot).
        public let fileSystemType: String
        /// The file system's own options (for FUSE, `user_id=` names the owner).
        public let superOptions: [String]
    }

    public let entries: [Entry]

    /// The table now, or nil when the kernel's file cannot be read.
    public static func current() -> MountTable? {
        readWhole("/proc/self/mountinfo").map(MountTable.init(parsing:))
    }

    /// Parses mountinfo text: `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPEROPTIONS`.
    public init(parsing text: String) {
        entries = text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 6, let dash = fields[6...].firstIndex(of: "-"), fields.count > dash + 3 else { return nil }
            return Entry(
                mountPoint: Self.unescape(fields[4]), fileSystemType: String(fields[dash + 1]),
                superOptions: fields[dash + 3].split(separator: ",").map(String.init))
        }
    }

    /// Mount points of notes file systems owned by `uid`, in the table's order.
    public func notesMounts(ownedBy uid: UInt32) -> [String] {
        let owner = "user_id=\(uid)"
        return entries.filter { $0.fileSystemType == "fuse.notes" && $0.superOptions.contains(owner) }.map(\.mountPoint)
    }

    /// Whether a notes file system is mounted at `path`, whoever owns it.
    public func hasNotesMount(at path: String) -> Bool {
        entries.contains { $0.fileSystemType == "fuse.notes" && $0.mountPoint == path }
    }

    /// Undoes the kernel's octal escapes of space, tab, newline and backslash.
    static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        let utf8 = Array(field.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "\\"), index + 3 < utf8.count,
                let value = UInt8(String(decoding: utf8[(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A file the kernel makes as it is read, whole: read until `read` says the end.
    static func readWhole(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
