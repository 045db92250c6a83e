#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import CXattr
import Foundation
import NotesModel

/// A path inside a notes mount, and what the mount says of it through extended
/// attributes (`user.notes.record`, `.zone`, `.share`, `.permission`).
struct MountedPath {
    let path: String
    let recordName: String?
    let zone: ZoneID
    let shareID: String?
    let permission: String

    init(_ given: String) throws(NotesError) {
        path = URL(fileURLWithPath: given).standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: path) else {
            throw NotesError(.unknownItem, "\(given) does not exist.")
        }
        guard let zoneText = Self.attribute(path, "zone"), let slash = zoneText.firstIndex(of: "/") else {
            throw NotesError(
                .invalidArguments, "\(given) is not a note or folder in a notes mount; give a path under the folder where `notes mount` runs (e.g. ~/Notes/private/plan.md).")
        }
        zone = ZoneID(owner: String(zoneText[..<slash]), name: String(zoneText[zoneText.index(after: slash)...]))
        recordName = Self.attribute(path, "record")
        shareID = Self.attribute(path, "share")
        permission = Self.attribute(path, "permission") ?? "readOnly"
    }

    var isOwner: Bool { permission == "owner" }
    var name: String { URL(fileURLWithPath: path).lastPathComponent }

    /// The share the path stands in, or an error that says so.
    func requireShare() throws(NotesError) -> String {
        guard let shareID else { throw NotesError(.unknownItem, "\(path) is not shared; `notes share \(path) --with NAME` shares it.") }
        return shareID
    }

    static func attribute(_ path: String, _ name: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = getxattr(path, "user.notes.\(name)", &buffer, buffer.count)
        guard count >= 0 else { return nil }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }
}

/// "3 min ago", "2 h ago", "yesterday" or a date, for terminal output.
func relativeTime(_ date: Date, now: Date = Date()) -> String {
    let seconds = now.timeIntervalSince(date)
    switch seconds {
    case ..<60: return "just now"
    case ..<3600: return "\(Int(seconds / 60)) min ago"
    case ..<86_400: return "\(Int(seconds / 3600)) h ago"
    case ..<172_800: return "yesterday"
    case ..<(30 * 86_400): return "\(Int(seconds / 86_400)) days ago"
    default:
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: date)
    }
}

/// Rows of text in columns as wide as their widest cell.
func table(_ rows: [[String]]) -> String {
    guard let width = rows.map(\.count).max() else { return "" }
    let widths = (0..<width).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
    return rows.map { row in
        row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }.joined(separator: "\n")
}
