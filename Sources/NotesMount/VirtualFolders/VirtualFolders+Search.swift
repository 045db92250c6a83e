import Dispatch
import Foundation
import NotesFS
import NotesModel
public import NotesReplica
import NotesSearch
import Synchronization

/// `.search/QUERY/`: answered from the mount's own index of its replica.
extension VirtualFolders {
    /// Lets `.search/` answer from the mount's index of its replica.
    public func attach(_ search: ReplicaSearch) {
        self.search.withLock { $0 = search }
    }

    /// The matches of `query` among the notes of `folder`, by the names they show in
    /// its `.search/QUERY/`: the rank, padded so that names sort in rank order, then
    /// the note's own name; each a link relative to where it sits, so that it holds in a
    /// bind mount or a chroot too.
    func searchResults(_ query: String, from folder: Inode) throws(FileSystemError) -> [String: Inode] {
        guard let scope = tree.searchScope(folder), let folderPath = tree.path(ofInode: folder) else { throw FileSystemError(ENOENT) }
        guard let search = search.withLock({ $0 }) else { return [:] }
        let request: SearchRules.Request
        do {
            request = try SearchRules.Request(API.Search(query: query, limit: Self.mostSearchHits))
        } catch {
            throw FileSystemError(EINVAL)
        }
        // The folder scopes the search; a query of its own `in:` would be a second scope.
        if request.query.folder != nil { throw FileSystemError(EINVAL) }
        let hits: [API.SearchHit]
        do {
            hits = Array(try search.search(request, in: scope, account: tree.account).prefix(Self.mostSearchHits))
        } catch {
            throw FileSystemError(EIO)
        }
        let up = String(repeating: "../", count: folderPath.split(separator: "/").count + 2)
        let places = hits.compactMap { hit in tree.path(of: RecordKey(zone: hit.zone, recordName: hit.recordName)).map { (hit, $0) } }
        let width = String(places.count).count
        var children: [String: Inode] = [:]
        for (rank, (hit, path)) in places.enumerated() {
            let number = String(rank + 1)
            let name = String(repeating: "0", count: width - number.count) + number + " " + Self.shortened((path as NSString).lastPathComponent, to: 250 - width)
            let kind = Kind.searchHit(folder: folder, query: query, RecordKey(zone: hit.zone, recordName: hit.recordName))
            let target = up + path
            children[name] = table.withLock { table in
                let inode = table.inode(kind, isDirectory: false, size: target.utf8.count, modified: hit.modifiedAt.timeIntervalSince1970)
                table.entries[inode]?.linkTarget = target
                return inode
            }
        }
        return children
    }

    /// `name` cut to at most `bytes` of UTF-8 at a character's end, its extension kept.
    static func shortened(_ name: String, to bytes: Int) -> String {
        guard name.utf8.count > bytes else { return name }
        let suffix = (name as NSString).pathExtension.isEmpty ? "" : "." + (name as NSString).pathExtension
        var base = Substring((name as NSString).deletingPathExtension)
        while !base.isEmpty && base.utf8.count + suffix.utf8.count > bytes { base = base.dropLast() }
        return base + suffix
    }
}
