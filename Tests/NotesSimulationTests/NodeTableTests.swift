import NotesFS
import NotesModel
import NotesReplica
@testable import NotesMount
import Testing

/// The packed node table reads and writes as a dictionary would.
@Suite struct NodeTableTests {
    func node(_ inode: Inode, _ name: String) -> Node {
        Node(inode: inode, parent: 1, name: name, kind: .scratch, isDirectory: false, modified: 0, changed: 0, accessed: 0)
    }

    @Test func nodesAreFoundChangedInPlaceAndRemoved() {
        var table = NodeTable()
        table[10] = node(10, "a.md")
        table[20] = node(20, "b.md")
        #expect(table.count == 2)
        #expect(table[10]?.name == "a.md")
        #expect(table[30] == nil)

        table[10]!.size = 5
        table[10]!.children.insert("x", 99, isFolder: true)
        #expect(table[10]?.size == 5 && table[10]?.children["x"] == 99 && table[10]?.children.folders == 1)

        table[10] = nil
        #expect(table[10] == nil && table.count == 1)
        // A removed node's place is taken by the next one; nothing else moves.
        table[30] = node(30, "c.md")
        #expect(table[30]?.name == "c.md" && table[20]?.name == "b.md" && table.count == 2)
        #expect(Set(table.map(\.key)) == [20, 30])
        #expect(Set(table.values.map(\.name)) == ["b.md", "c.md"])
    }

    @Test func settingNilThroughAChangeRemovesAndAMissingNodeStaysMissing() {
        var table = NodeTable()
        table[10] = node(10, "a.md")
        func drop(_ node: inout Node?) { node = nil }
        drop(&table[10])
        #expect(table.isEmpty)
        table[40]?.size = 1
        #expect(table[40] == nil && table.isEmpty)
    }

    @Test func roomGrowsTwofoldWhenMadePageByPage() {
        var table = NodeTable()
        var moves = 0
        for page in 0..<10 {
            let before = table.capacity
            table.reserveCapacity(table.count + 2_000)
            if table.capacity != before { moves += 1 }
            for index in 0..<2_000 {
                let inode = Inode(16 + page * 2_000 + index)
                table[inode] = node(inode, "\(inode).md")
            }
        }
        #expect(table.count == 20_000)
        #expect(moves <= 5, "room made for each page moved every node \(moves) times")
        #expect(table[16]?.name == "16.md" && table[20_015]?.name == "20015.md")
    }
}

/// A node's size is the mount's memory per note; the fields seldom set live apart.
@Suite struct NodeLayoutTests {
    @Test func aNodeStaysWithinTwoHundredBytes() {
        #expect(MemoryLayout<Node>.stride <= 200, "a node takes \(MemoryLayout<Node>.stride) bytes")
        #expect(MemoryLayout<Node?>.stride <= 200, "a place in the table takes \(MemoryLayout<Node?>.stride) bytes")
    }

    @Test func seldomFieldsReadBackAndCopiesStayApart() {
        var node = Node(inode: 5, parent: 1, name: "a.md", kind: .scratch, isDirectory: false, shareID: "share-1", modified: 0, changed: 0, accessed: 0)
        #expect(node.shareID == "share-1" && node.kernelMayHold == nil && node.remoteGeneration == 0)
        let copy = node
        node.kernelMayHold = "7"
        node.remoteGeneration &+= 1
        node.shareID = nil
        #expect(node.shareID == nil && node.kernelMayHold == "7" && node.remoteGeneration == 1)
        #expect(copy.shareID == "share-1" && copy.kernelMayHold == nil && copy.remoteGeneration == 0)
        node.kernelMayHold = nil
        node.remoteGeneration = 0
        #expect(node.kernelMayHold == nil && node.remoteGeneration == 0)
    }
}

/// The record index reads and writes as a dictionary keyed by `RecordKey` would.
@Suite struct RecordIndexTests {
    @Test func recordsAreFoundPerZoneAndCounted() {
        let mine = ZoneID(owner: "alice", name: "_defaultZone")
        let theirs = ZoneID(owner: "bob", name: "_defaultZone")
        var index = RecordIndex()
        index[RecordKey(zone: mine, recordName: "n1")] = 10
        index[RecordKey(zone: theirs, recordName: "n1")] = 20
        index[RecordKey(zone: mine, recordName: "n2")] = 30
        #expect(index.count == 3)
        #expect(index[RecordKey(zone: mine, recordName: "n1")] == 10 && index[RecordKey(zone: theirs, recordName: "n1")] == 20)
        index[RecordKey(zone: mine, recordName: "n1")] = 11
        #expect(index.count == 3 && index[RecordKey(zone: mine, recordName: "n1")] == 11)
        index[RecordKey(zone: theirs, recordName: "n1")] = nil
        index[RecordKey(zone: theirs, recordName: "missing")] = nil
        #expect(index.count == 2 && index[RecordKey(zone: theirs, recordName: "n1")] == nil)
    }
}

/// A folder's entries and its count of subfolders, which its link count shows.
struct FolderEntriesTests {
    @Test func theCountFollowsEveryEntryThatComesGoesOrIsReplaced() {
        var entries = FolderEntries()
        entries.insert("a.md", 10, isFolder: false)
        entries.insert("Work", 11, isFolder: true)
        entries.insert("Home", 12, isFolder: true)
        #expect(entries.count == 3 && entries.folders == 2)
        // A folder's name taken by a note (rename over), and a note's by a folder
        entries.insert("Home", 13, isFolder: false)
        #expect(entries["Home"] == 13 && entries.folders == 1)
        entries.insert("a.md", 14, isFolder: true)
        #expect(entries.folders == 2)
        #expect(entries.remove("Work") == 11 && entries.folders == 1)
        #expect(entries.remove("Work") == nil && entries.folders == 1)
        #expect(Set(entries.inodes) == [13, 14])
        #expect(Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.inode) }) == ["Home": 13, "a.md": 14])
        #expect(entries.remove("a.md") == 14 && entries.remove("Home") == 13)
        #expect(entries.isEmpty && entries.folders == 0)
    }

    @Test func inodesKeepEveryBitBelowTheFolderMark() {
        var entries = FolderEntries()
        let large: Inode = (1 << 63) - 1
        entries.insert("x", large, isFolder: true)
        #expect(entries["x"] == large && entries.folders == 1)
    }
}
