import ArgumentParser
import Foundation
import NotesClient
import NotesModel

/// Commands on notes at the root of the default zone, for scripts and for use before
/// a mount exists. The mount is the everyday way to edit.
struct Put: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Save standard input as a note (creating it or replacing its text).",
        discussion: "Example:\n  echo '# Groceries' | notes put groceries.md")

    @Argument(help: "The note's file name, e.g. plan.md.")
    var name: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let client = try options.client()
            let zone = try await defaultZone(of: client)
            let data = FileHandle.standardInput.readDataToEndOfFile()
            guard let body = String(data: data, encoding: .utf8) else {
                throw NotesError(.invalidArguments, "Standard input is not UTF-8 text; notes hold markdown text.")
            }
            let existing = try await findNote(named: name, in: zone, client: client)
            let save = RecordSave(
                recordName: existing?.recordName ?? UUID().uuidString.lowercased(), recordType: .note, name: name,
                body: body, changeTag: existing?.changeTag)
            let result = try await client.modify(ModifyRequest(zone: zone, saves: [save]))
            guard let record = result.saved.first else {
                throw NotesError(.internalError, "notesd accepted the save of \(name) but did not return it; `notes cat \(name)` shows what it holds.")
            }
            try options.emit(record) { "Saved \(name) (\(body.utf8.count) bytes, change tag \(record.changeTag))." }
        }
    }
}

struct Cat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cat",
        abstract: "Print a note of the default zone.",
        discussion: "Example:\n  notes cat groceries.md")

    @Argument(help: "The note's file name.")
    var name: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let client = try options.client()
            guard let record = try await findNote(named: name, in: try await defaultZone(of: client), client: client) else {
                throw NotesError(.unknownItem, "There is no note named \(name); `notes ls` lists them.")
            }
            if options.json {
                try options.emit(record) { "" }
            } else {
                FileHandle.standardOutput.write(Data((record.body ?? "").utf8))
            }
        }
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List the records at the root of the default zone.",
        discussion: "Example:\n  notes ls --json")

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await runReporting {
            let client = try options.client()
            let records = try await allRecords(in: try await defaultZone(of: client), client: client)
                .filter { $0.parent == nil }.sorted { $0.name < $1.name }
            try options.emit(API.Records(records: records)) {
                records.map { "\($0.recordType == .folder ? $0.name + "/" : $0.name)\t\($0.contentSize)" }.joined(separator: "\n")
            }
        }
    }
}

/// The default zone of the account the client acts as.
func defaultZone(of client: NotesClient) async throws(NotesError) -> ZoneID {
    ZoneID(owner: try await client.whoami().name, name: ZoneID.defaultZoneName)
}

/// Every record of a zone, following `moreComing`.
func allRecords(in zone: ZoneID, client: NotesClient) async throws(NotesError) -> [Record] {
    var byName: [String: Record] = [:]
    var token: String?
    repeat {
        let page = try await client.zoneChanges(zone, since: token, limit: Limits.maxChangesPage)
        for name in page.deleted { byName[name] = nil }
        for record in page.records { byName[record.recordName] = record }
        token = page.changeToken
        if !page.moreComing { break }
    } while true
    return Array(byName.values)
}

func findNote(named name: String, in zone: ZoneID, client: NotesClient) async throws(NotesError) -> Record? {
    try await allRecords(in: zone, client: client).first { $0.parent == nil && $0.name == name }
}
