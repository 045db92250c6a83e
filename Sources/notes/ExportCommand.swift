#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import ArgumentParser
import Foundation
import NotesClient
import NotesExport
import NotesModel

/// `notes export PATH... --html -o DIR`: a static site of notes and folders.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export notes or folders of your mount as a static HTML site.",
        discussion: """
            Markdown is rendered by cmark-gfm with GitHub's extensions. Raw HTML in notes is \
            shown as text unless --allow-raw-html is given. The same notes give the same bytes.

            Examples:
              notes export ~/Notes/private/Work --html -o /tmp/work-site
              notes export --share 'http://notes.example.com/s/Xy3…' --html -o /tmp/site   # from notesd, no mount
            """)

    @Argument(help: "Notes or folders, as paths in the mount (or any folder of markdown files).")
    var paths: [String] = []

    @Option(help: "Export a share you own or accepted, by URL or id, straight from notesd.")
    var share: String?

    @Flag(help: "Write HTML (the only format so far).")
    var html = false

    @Option(name: .shortAndLong, help: "Folder to write the site into (made if missing).")
    var output: String

    @Flag(help: "Keep raw HTML in notes as HTML (only for notes you trust).")
    var allowRawHtml = false

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            guard html else { throw NotesError(.invalidArguments, "Give --html: HTML is the only export format so far.") }
            guard paths.isEmpty != (share == nil) else {
                throw NotesError(.invalidArguments, "Give paths in the mount, or --share URL, not both and not neither.")
            }
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: output, isDirectory: &isFolder), !isFolder.boolValue {
                throw NotesError(.invalidArguments, "\(output) is a file; -o names the folder to write the site into (made if missing). Give a new or existing folder.")
            }
            var sources = paths.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            var staging: String?
            defer { if let staging { try? FileManager.default.removeItem(atPath: staging) } }
            if let share {
                // Staged where only this user can read: a private share's notes pass through it.
                var template = Array((FileManager.default.temporaryDirectory.path + "/notes-export-XXXXXX").utf8CString)
                guard let made = mkdtemp(&template) else {
                    throw NotesError(.internalError, "Cannot make a private temporary folder: \(String(cString: strerror(errno))).")
                }
                let folder = String(cString: made)
                staging = folder
                sources = [try await ShareSnapshot.write(share, client: try options.client(), into: folder)]
            }
            for path in sources where !FileManager.default.fileExists(atPath: path) {
                throw NotesError(.unknownItem, "\(path) does not exist.")
            }
            let onTerminal = isatty(2) != 0 && !options.json
            let exporter = SiteExporter(allowRawHTML: allowRawHtml) { done, total in
                if onTerminal && (done % 25 == 0 || done == total) {
                    FileHandle.standardError.write(Data("\rexporting: \(done)/\(total) pages".utf8) + (done == total ? Data("\n".utf8) : Data()))
                }
            }
            let summary: SiteExporter.Summary
            do {
                summary = try exporter.export(sources, to: output)
            } catch {
                throw NotesError(.internalError, "The export stopped: \(error.localizedDescription)")
            }
            try options.emit(summary) {
                "Wrote \(summary.pages) pages, \(summary.indexes) indexes and \(summary.attachments) attachments to \(output); open \(output)/index.html."
            }
        }
    }
}

/// A share's records written out as files (as the mount would show them), so that a
/// share can be exported straight from notesd.
enum ShareSnapshot {
    /// Writes the share into `folder` and returns the path to export.
    static func write(_ reference: String, client: NotesClient, into folder: String) async throws -> String {
        let token = API.shareToken(fromURL: reference)
        guard let share = try await client.shares().first(where: { $0.id == reference || $0.urlToken == token }) else {
            throw NotesError(.unknownItem, "You neither own nor have accepted a share \(reference); `notes invitations` lists the ones waiting for you.")
        }
        var records: [Record] = []
        try await client.forEachZoneChangePage(share.zone, since: nil) { page in
            records += page.records.filter { $0.shareID == share.id }
        }
        let byName = Dictionary(records.map { ($0.recordName, $0) }, uniquingKeysWith: { a, _ in a })
        func path(of record: Record) -> String {
            guard record.recordName != share.rootRecordName, let parent = record.parent.flatMap({ byName[$0] }) else { return record.name }
            return path(of: parent) + "/" + record.name
        }
        let top = share.rootRecordName.flatMap { byName[$0] }
        let base = top?.recordType == .note ? folder : "\(folder)/\(top?.name ?? share.zone.name)"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        // Names come from notesd, which refuses "/", "." and ".."; checked again before a
        // name becomes a path.
        for record in records where (try? Names.validateComponent(record.name, what: "name")) != nil {
            let relative = top?.recordType == .folder && record.recordName != top?.recordName ? String(path(of: record).dropFirst((top?.name.count ?? 0) + 1)) : path(of: record)
            let target = record.recordName == top?.recordName && top?.recordType == .folder ? base : "\(base)/\(relative)"
            switch record.recordType {
            case .folder:
                try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
            case .note, .file:
                try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                let data = record.recordType == .note ? Data((record.body ?? "").utf8) : (record.bytes ?? Data())
                try data.write(to: URL(fileURLWithPath: target))
            }
        }
        return top?.recordType == .note ? "\(base)/\(top!.name)" : base
    }
}
