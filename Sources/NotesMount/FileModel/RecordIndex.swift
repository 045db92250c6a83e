import NotesModel
import NotesReplica
import NotesFS

/// Which inode shows each record, by zone and then by record name. A dictionary keyed by
/// the whole `RecordKey` keeps the zone's two names again in every bucket (56 bytes a
/// bucket, 15 MB for 100,000 notes); here a zone's names are kept once and a bucket holds
/// the record name and the inode (24 bytes).
///
/// Reads and writes look like a dictionary's: `index[key]`, `index[key] = inode`,
/// `index[key] = nil`.
struct RecordIndex {
    private var zones: [ZoneID: [String: Inode]] = [:]
    private(set) var count = 0

    subscript(key: RecordKey) -> Inode? {
        get { zones[key.zone]?[key.recordName] }
        set {
            if let newValue {
                let old = zones[key.zone, default: [:]].updateValue(newValue, forKey: key.recordName)
                if old == nil { count += 1 }
            } else if zones[key.zone]?.removeValue(forKey: key.recordName) != nil {
                count -= 1
                if zones[key.zone]?.isEmpty == true { zones[key.zone] = nil }
            }
        }
    }

}
