import NotesFS

/// The tree's nodes by inode, packed: the nodes sit side by side in one array and a
/// small table maps each inode to its place. A dictionary of nodes keeps a whole node in
/// every one of its buckets, and keeps up to twice as many buckets as nodes: 100,000
/// notes took 69 MB there, and take about 30 MB here.
///
/// Reads and writes look like a dictionary's (`nodes[inode]`, `nodes[inode] = nil`,
/// `nodes[inode]!.size = 0`), and a node is changed where it lies.
struct NodeTable: Sequence {
    private var places: [Node?] = []
    private var placeOf: [Inode: Int32] = [:]
    /// Places left empty by removed nodes, taken again first.
    private var free: [Int32] = []

    var count: Int { placeOf.count }
    /// Nodes the table holds before it must move them to make room.
    var capacity: Int { places.capacity }
    var isEmpty: Bool { placeOf.isEmpty }

    subscript(inode: Inode) -> Node? {
        get { placeOf[inode].flatMap { places[Int($0)] } }
        _modify {
            if let place = placeOf[inode] {
                // Changed where it lies: nothing is copied, and a folder's children stay
                // uniquely held (a copy would copy them all on the next change).
                yield &places[Int(place)]
                if case .none = places[Int(place)] {
                    placeOf[inode] = nil
                    free.append(place)
                }
            } else {
                var node: Node?
                yield &node
                if let node { insert(node, for: inode) }
            }
        }
    }

    /// Changes the node of `inode` where it lies, if there is one: found once, however
    /// many of its fields change.
    @discardableResult
    mutating func update<Result>(_ inode: Inode, _ change: (inout Node) -> Result) -> Result? {
        guard let place = placeOf[inode], places[Int(place)] != nil else { return nil }
        return change(&places[Int(place)]!)
    }

    private mutating func insert(_ node: Node, for inode: Inode) {
        if let place = free.popLast() {
            places[Int(place)] = node
            placeOf[inode] = place
        } else {
            placeOf[inode] = Int32(places.count)
            places.append(node)
        }
    }

    /// Makes room for `count` nodes in all, at once. Room grows at least twofold, as
    /// appending would: a first mount makes room page by page, and room made exactly
    /// for each page moved every node again for each (50 times for 100,000 notes).
    mutating func reserveCapacity(_ count: Int) {
        guard count > places.capacity else { return }
        places.reserveCapacity(Swift.max(count, places.capacity * 2))
        placeOf.reserveCapacity(Swift.max(count, placeOf.capacity * 2))
    }

    /// Every node, in no particular order (the same on every run), read as it goes
    /// rather than copied out first.
    var values: Values { Values(places: places) }

    struct Values: Sequence {
        fileprivate let places: [Node?]

        func makeIterator() -> some IteratorProtocol<Node> {
            places.lazy.compactMap { $0 }.makeIterator()
        }
    }

    func makeIterator() -> some IteratorProtocol<(key: Inode, value: Node)> {
        places.lazy.compactMap { $0 }.map { (key: $0.inode, value: $0) }.makeIterator()
    }
}
