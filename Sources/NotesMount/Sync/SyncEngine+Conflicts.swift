import Foundation
import NotesClient
import NotesMerge
import NotesModel
import NotesReplica

/// What happens when an upload meets someone else's change. No edit is ever lost: edits
/// that touch different lines merge into one version; overlapping ones leave the
/// server's version in the note and the local one in a conflict copy beside it; a delete
/// against an edit keeps the edit.
extension SyncEngine {
    /// The record changed on the server since the version the local change builds on.
    func resolveChanged(_ change: PendingChange, server: NotesModel.Record?) async throws {
        let local = change.record
        let key = local.key
        guard let server = await currentServerRecord(local, given: server) else {
            // Gone on the server after all: the next upload creates it again.
            try replica.rebase(key, onto: nil)
            return
        }
        if local.deleted {
            logger.notice("\(local.name) was deleted here but changed by \(server.modifiedBy) meanwhile: the changed note stays")
            if let row = try replica.adopt(server, dirty: local.dirty) { show([row]) }
            await refresh([key])
            return
        }
        let base = await baseVersion(of: local)
        // Names and places merge field by field: a side that kept the base's takes the other's.
        let name = base.map { local.name != $0.name ? local.name : server.name } ?? local.name
        let parent = base.map { local.parent != $0.parent ? local.parent : server.parent } ?? local.parent
        guard local.recordType != .folder else {
            if let row = try replica.rebase(key, dirty: local.dirty, onto: server, name: name, parent: parent, content: nil) { show([row]) }
            return
        }
        let ours = change.content ?? []
        let theirs = server.recordType == .file ? [UInt8](server.bytes ?? Data()) : Array((server.body ?? "").utf8)
        let merged: [UInt8]?
        if try ours == theirs
            || server.modifiedBy == tree.account
                && (local.changeTag == nil || replica.sentDigests(of: key).contains(ContentDigest.of(theirs)))
        {
            // The same text, or an upload of this mount's that went through but whose
            // answer was lost (the mount stopped, or notesd, right after the commit): the
            // server holds this mount's own earlier state, nothing of anyone else's, and
            // what is queued here came after it. (A log appended to before each SIGTERM
            // made a conflict copy of the mount with itself, beside stress-ng: the upload
            // of lines 0-3 was answered too late, and the next mount sent lines 0-4.)
            merged = ours
        } else if local.recordType == .note, server.recordType == .note, let baseBody = base?.body,
            case .merged(let result) = ThreeWayMerge.merge(
                base: Array(baseBody.utf8), ours: ours, theirs: theirs,
                markers: conflictMarkers ? ("\(tree.account) (here)", server.modifiedBy) : nil)
        {
            merged = result
        } else {
            merged = nil
        }
        if let merged {
            // The row takes the server's version: writes still open here were built on ours.
            tree.willAdopt(key, base: local.changeTag)
            if merged == theirs && name == server.name && parent == server.parent {
                // Nothing of ours is missing from the server's version.
                if let row = try replica.adopt(server, dirty: local.dirty) { show([row]) }
                await refresh([key])
            } else if let row = try replica.rebase(key, dirty: local.dirty, onto: server, name: name, parent: parent, content: merged) {
                logger.info("\(local.name): merged the edits made here with \(server.modifiedBy)'s")
                show([row])
            }
            return
        }
        try await keepAsCopy(change, beside: server)
        await refresh([key])
    }

    /// Keeps a local edit that cannot go where it was made as a new note: beside the note
    /// (`server`, whose version the note takes), or among the account's own notes when
    /// there is no such place (the note is the root of someone else's share, or gone).
    func keepAsCopy(_ change: PendingChange, beside server: NotesModel.Record?) async throws {
        let local = change.record
        var zone = local.zone
        var parent = server?.parent ?? local.parent
        var shareID = server?.shareID ?? local.shareID
        if server == nil || tree.isForeignShareRoot(local.key) {
            zone = tree.defaultZone()
            parent = nil
            shareID = nil
        }
        let content = change.content ?? []
        let now = Date()
        let copy = ReplicaRecord(
            zone: zone, recordName: tree.newRecordName(), recordType: local.recordType,
            name: ConflictNames.name(for: local.name, account: tree.account, at: now, taken: try replica.names(in: zone, parent: parent)),
            parent: parent, size: content.count, shareID: shareID, changeTag: nil,
            createdAt: now.timeIntervalSince1970, modifiedAt: now.timeIntervalSince1970, modifiedBy: tree.account)
        tree.willAdopt(local.key, base: local.changeTag)
        guard let kept = try replica.keepConflictCopy(copy, content: content, of: local.key, dirty: local.dirty, adopting: server, noteName: local.name) else {
            return
        }
        if let note = kept.note { show([note]) } else { tree.removeRecords([local.key]) }
        show([kept.copy])
        if let path = tree.path(of: kept.copy.key) { try replica.setConflictPath(kept.copy.key, path) }
        logger.warning(
            "\(local.name) was changed here and by \(server?.modifiedBy ?? "someone else") in the same places: the note has their version, yours is in \(kept.copy.name)")
        requestUpload()
    }

    /// notesd refused a note's name because another note holds it there (made elsewhere
    /// while this one waited to upload): this one takes the next free `name (2)`, in the
    /// mount at once, and goes up again; the other arrives with the zone's changes.
    func nameAside(_ change: PendingChange) throws {
        let local = change.record
        let taken = try replica.names(in: local.zone, parent: local.parent).union([local.name])
        let name = ConflictNames.aside(local.name, taken: taken)
        guard let row = try replica.rename(local.key, dirty: local.dirty, to: name) else { return }
        logger.warning("another note is called \(local.name) on notesd: the one made here is now \(name)")
        show([row])
        refetch(local.zone)
        requestUpload()
    }

    /// The version both sides share: the one the local change was made on.
    private func baseVersion(of local: ReplicaRecord) async -> RecordVersion? {
        guard let tag = local.changeTag else { return nil }
        let versions = try? await client.versions(of: local.recordName, in: local.zone)
        return versions?.first { $0.changeTag == tag }
    }

    private func currentServerRecord(_ local: ReplicaRecord, given: NotesModel.Record?) async -> NotesModel.Record? {
        if let given { return given }
        return (try? await client.records([local.recordName], in: local.zone))?.first
    }

    /// Reads records settled by hand again: a fetch running meanwhile passed over their
    /// newer versions while they still had local changes.
    func refresh(_ keys: [RecordKey]) async {
        for (zone, names) in Dictionary(grouping: keys, by: \.zone) {
            guard let records = try? await client.records(names.map(\.recordName), in: zone) else { continue }
            tree.willApplyRemote(zone, records: records)
            guard let rows = try? replica.refresh(records, in: zone), !rows.isEmpty else { continue }
            show(rows)
        }
    }

    func show(_ rows: [ReplicaRecord]) {
        var effects = RemoteEffects()
        effects.updated = rows
        tree.applyRemote(effects)
    }
}

/// Names of conflict copies: `plan (conflict, bob, 2026-11-22 14.05).md`, in local time,
/// unique in their folder and within the file name limit.
enum ConflictNames {
    /// `plan.md` split as `plan` and `.md` (a leading dot is part of the stem).
    static func split(_ name: String) -> (stem: String, suffix: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }

    /// `plan (2).md`, `plan (3).md`…: the first not in `taken`, within the name limit.
    static func aside(_ original: String, taken: Set<String>) -> String {
        var (stem, suffix) = split(original)
        var attempt = 2
        while true {
            let tag = " (\(attempt))"
            while (stem + tag + suffix).utf8.count > Limits.maxNameBytes && !stem.isEmpty { stem.removeLast() }
            if !taken.contains(stem + tag + suffix) { return stem + tag + suffix }
            attempt += 1
        }
    }

    static func name(for original: String, account: String, at date: Date, taken: Set<String>) -> String {
        let (stem, suffix) = split(original)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH.mm"
        let stamp = formatter.string(from: date)
        var attempt = 1
        while true {
            let tag = " (conflict, \(account), \(stamp)\(attempt > 1 ? " \(attempt)" : ""))"
            var shortened = stem
            while (shortened + tag + suffix).utf8.count > Limits.maxNameBytes && !shortened.isEmpty { shortened.removeLast() }
            let candidate = shortened + tag + suffix
            if !taken.contains(candidate) { return candidate }
            attempt += 1
        }
    }
}
