import Foundation
import NotesFS
import NotesModel
@testable import NotesMount
import NotesReplica
import Testing

/// The file model's smaller parts, each on its own: open handles, file contents with
/// their byte count and spill files, inode numbers, and editors' scratch names.
@Suite struct FileModelPartsTests {
    // MARK: HandleTable

    @Test func handlesCountTheirFilesWritersAndKeepTheOldestReadVersion() {
        var handles = HandleTable()
        let reader = handles.open(10, appends: false, writes: false, now: 1, mayRead: "5")
        let first = handles.open(10, appends: true, writes: true, now: 2)
        let second = handles.open(10, appends: false, writes: true, now: 3)
        #expect(handles.openCount == 3)
        #expect(handles.appends(first) && !handles.appends(second))
        #expect(handles.writes(second) && !handles.writes(reader))
        #expect(handles.writingSince(10) == 2, "writing began with the first writer")

        // A read from the start takes the version; a read further on keeps the first.
        handles.noteRead(second, tag: "7", fromStart: false)
        handles.noteRead(second, tag: "8", fromStart: false)
        #expect(handles.readTag(second) == "7")
        handles.noteRead(second, tag: "8", fromStart: true)
        #expect(handles.readTag(second) == "8")
        #expect(handles.olderRead(of: 10, than: "8") == "5", "the reader's version, the oldest other than the current")
        #expect(handles.olderRead(of: 11, than: "8") == nil)

        let closedReader = handles.close(reader)
        #expect(!closedReader, "a reader is no writer")
        let closedFirst = handles.close(first)
        #expect(!closedFirst, "another writer is still open")
        #expect(handles.writingSince(10) == 2)
        let closedSecond = handles.close(second)
        #expect(closedSecond, "the last writer")
        #expect(handles.writingSince(10) == nil && handles.openCount == 0)
        let closedAgain = handles.close(second)
        #expect(!closedAgain, "a handle closes once")
    }

    @Test func anOversizedHandleStaysOversized() {
        var handles = HandleTable()
        let handle = handles.open(10, appends: false, writes: true, now: 0)
        #expect(!handles.isOversized(handle))
        handles.markOversized(handle)
        #expect(handles.isOversized(handle))
        #expect(!handles.isOversized(handle + 1), "an unknown handle")
    }

    // MARK: ContentCache

    func cache() throws -> (ContentCache, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notes-content-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return (ContentCache(spillDirectory: folder), folder)
    }

    func write(_ cache: inout ContentCache, _ inode: Inode, at offset: Int, _ text: String) throws {
        try Array(text.utf8).withUnsafeBytes { bytes in try cache.write(inode, offset: offset, bytes) }
    }

    @Test func contentIsCountedAsWrittenCutAndDropped() throws {
        var (cache, folder) = try cache()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try write(&cache, 1, at: 0, "hello")
        try write(&cache, 1, at: 8, "!")
        #expect(try cache.bytes(1) == Array("hello".utf8) + [0, 0, 0] + Array("!".utf8), "a gap is zeros")
        #expect(cache.residentBytes == 9 && cache.count(1) == 9)
        #expect(try cache.read(1, offset: 1, size: 3) == Array("ell".utf8))
        #expect(try cache.read(1, offset: 9, size: 3).isEmpty, "nothing past the end")
        try cache.truncate(1, to: 2)
        #expect(try cache.bytes(1) == Array("he".utf8) && cache.residentBytes == 2)
        try cache.truncate(1, to: 4)
        #expect(try cache.bytes(1) == Array("he".utf8) + [0, 0])
        cache.set(2, Array("other".utf8))
        #expect(cache.residentBytes == 9)
        cache.remove(1)
        #expect(!cache.has(1) && cache.residentBytes == 5)
        cache.set(2, nil)
        #expect(!cache.has(2) && cache.residentBytes == 0)
    }

    @Test func spilledContentLeavesMemoryAndReadsWritesAndCutsTheSame() throws {
        var (cache, folder) = try cache()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try write(&cache, 1, at: 0, "line one\n")
        try cache.spill(1)
        #expect(cache.isSpilled(1) && cache.residentBytes == 0 && cache.spilledCount == 1)
        try write(&cache, 1, at: 9, "line two\n")
        #expect(try cache.bytes(1) == Array("line one\nline two\n".utf8) && cache.count(1) == 18)
        #expect(try cache.read(1, offset: 5, size: 3) == Array("one".utf8))
        try cache.truncate(1, to: 8)
        #expect(try cache.bytes(1) == Array("line one".utf8))
        // The spill file is unlinked at once: nothing is left in the folder.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        cache.remove(1)
        #expect(!cache.has(1) && cache.spilledCount == 0)
    }

    @Test func trimmingGivesBackWhatAppendsGrewBeyondTheBytes() throws {
        var (cache, folder) = try cache()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for index in 0..<2_000 { try write(&cache, 1, at: index * 64, String(repeating: "x", count: 64)) }
        let before = try cache.bytes(1)
        cache.trim(1)
        #expect(try cache.bytes(1) == before && cache.residentBytes == 128_000)
    }

    // MARK: InodeNumbers

    @Test func inodeNumbersAreStableDistinctAndClearOfTheReservedOnes() {
        let zone = ZoneID(owner: "alice", name: "Work")
        let plan = InodeNumbers.record(RecordKey(zone: zone, recordName: "plan"))
        #expect(plan == InodeNumbers.record(RecordKey(zone: ZoneID(owner: "alice", name: "Work"), recordName: "plan")), "the same record, the same number")
        var seen: Set<Inode> = []
        for index in 0..<10_000 {
            let inode = InodeNumbers.record(RecordKey(zone: zone, recordName: "r\(index)"))
            #expect(inode >= 16 && inode < InodeNumbers.localBit)
            seen.insert(inode)
        }
        #expect(seen.count == 10_000)
        // Parts are kept apart: ("ab", "c") is not ("a", "bc").
        #expect(InodeNumbers.zoneFolder(ZoneID(owner: "ab", name: "c")) != InodeNumbers.zoneFolder(ZoneID(owner: "a", name: "bc")))
        #expect(InodeNumbers.ownerFolder("alice") != InodeNumbers.zoneFolder(zone))
    }

    // MARK: ScratchNames

    @Test(arguments: [
        "plan.md~", ".#plan.md", "#plan.md#", ".~lock.plan.odt#", ".goutputstream-AB12CD", "plan.tmp", "PLAN.TMP", ".plan.md.swp", ".plan.md.swo",
        ".plan.md.swa", "4913", "5036",
    ])
    func editorsScratchFilesAreScratch(_ name: String) {
        #expect(ScratchNames.isScratch(name))
    }

    @Test(arguments: ["plan.md", "notes.txt", "swp", ".swz", "4914", "4912", "1234", "plan.md.bak", "#plan.md", "tmp"])
    func notesAreNotScratch(_ name: String) {
        #expect(!ScratchNames.isScratch(name))
    }
}
