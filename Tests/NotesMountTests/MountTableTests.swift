#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesFS
import NotesTestSupport
import Testing

/// The kernel's mount table, read whole and parsed as the kernel writes it.
struct MountTableTests {
    @Test func linesAreParsedWithOptionalFieldsAndEscapes() {
        let table = MountTable(
            parsing: """
                22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw
                80 22 0:50 / /home/ann/My\\040Notes rw,nosuid,nodev shared:40 master:3 - fuse.notes notes rw,user_id=1000,group_id=1000
                81 22 0:51 / /var/tmp/a\\134b rw - fuse.notes notes rw,user_id=0,group_id=0
                a line the kernel never writes
                """)
        #expect(table.entries.count == 3)
        #expect(table.notesMounts(ownedBy: 1000) == ["/home/ann/My Notes"])
        #expect(table.notesMounts(ownedBy: 0) == ["/var/tmp/a\\b"])
        #expect(table.hasNotesMount(at: "/var/tmp/a\\b"))
        #expect(!table.hasNotesMount(at: "/proc"))
    }

    /// Foundation read only the first 4 KiB of the table: with a few dozen mounts, the
    /// newest (a notes mount just started) was not in it.
    @Test(.enabled(if: getuid() == 0, "mounting needs root"))
    func aTableOfManyPagesIsReadToItsLastMount() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mt-\(UUID().uuidString.prefix(8))").path
        var mounted: [String] = []
        defer {
            for path in mounted.reversed() { _ = Shell.run("umount '\(path)'") }
            try? FileManager.default.removeItem(atPath: folder)
        }
        // Given mounts with long names until the table is three pages long
        let long = String(repeating: "n", count: 200)
        while (MountTable.current()?.entries.map(\.mountPoint.utf8.count).reduce(0, +) ?? 0) < 3 * 4_096 {
            let path = "\(folder)/\(mounted.count)-\(long)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let mount = Shell.run("mount -t tmpfs -o size=64k tmpfs '\(path)'")
            try #require(mount.status == 0, "\(mount)")
            mounted.append(path)
        }
        // Then the table holds every one of them, the last one too
        let table = try #require(MountTable.current())
        let points = Set(table.entries.map(\.mountPoint))
        #expect(mounted.allSatisfy(points.contains))
    }
}
