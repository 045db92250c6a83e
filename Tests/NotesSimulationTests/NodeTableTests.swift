import NotesFS
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
        table[10]!.children["x"] = 99
        #expect(table[10]?.size == 5 && table[10]?.children == ["x": 99])

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
