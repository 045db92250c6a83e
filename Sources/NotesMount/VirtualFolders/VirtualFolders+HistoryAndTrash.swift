import Dispatch
import Foundation
import NotesFS
import NotesModel
import NotesReplica
import Synchronization

/// `.history/` and `.trash/`: what they ask notesd, how long an answer is kept, and
/// how long a look waits for one (see `VirtualFolders`).
extension VirtualFolders {
    /// What notesd last said about a zone's trash or a note's versions, kept while
    /// no change to the zone has come from notesd and for at most `answerLifetime`
    /// (the trash is also emptied by time): listing a trash of 10,000 twice asks once.
    struct Answer<Value: Sendable>: Sendable {
        var value: Value
        var generation: UInt64
        var at: Double
    }

    static let answerLifetime = 30.0

    /// How long a look waits for notesd's answer.
    static let patience = 5.0

    /// What the mount asks notesd, one task at a time for each.
    enum Question: Hashable {
        case trash(ZoneID)
        case versions(RecordKey)
    }

    /// A question under way: its answer when it comes, for whoever waits.
    final class Asking: Sendable {
        let done = DispatchGroup()
        let outcome = Mutex<NotesError?>(nil)
    }

    /// A zone's trash: as notesd last said, unless the zone changed since or it is old
    /// (then that answer only if notesd does not answer in time).
    func trash(of zone: ZoneID) throws(FileSystemError) -> Answer<[TrashedRecord]> {
        let generation = tree.generation(of: zone)
        let known = table.withLock { $0.trash[zone] }
        if let known, known.generation == generation, Date().timeIntervalSince1970 - known.at < Self.answerLifetime { return known }
        try ask(.trash(zone)) { [self] () async throws(NotesError) in
            let trashed = try await service.trash(in: zone)
            let now = Date().timeIntervalSince1970
            table.withLock { table in
                table.forgetOldAnswers(now: now)
                table.trash[zone] = Answer(value: trashed, generation: generation, at: now)
            }
        }
        guard let answer = table.withLock({ $0.trash[zone] }) ?? known else { throw unanswered() }
        return answer
    }

    /// A note's versions, kept as `trash(of:)` keeps a trash.
    func versions(of key: RecordKey) throws(FileSystemError) -> [RecordVersion] {
        let generation = tree.generation(of: key.zone)
        let known = table.withLock { $0.versions[key] }
        if let known, known.generation == generation, Date().timeIntervalSince1970 - known.at < Self.answerLifetime { return known.value }
        try ask(.versions(key)) { [self] () async throws(NotesError) in
            let versions = try await service.versions(of: key.recordName, in: key.zone)
            let now = Date().timeIntervalSince1970
            table.withLock { table in
                table.forgetOldAnswers(now: now)
                table.versions[key] = Answer(value: versions, generation: generation, at: now)
            }
        }
        guard let answer = table.withLock({ $0.versions[key] }) ?? known else { throw unanswered() }
        return answer.value
    }

    /// Asks notesd `question` (`body` keeps the answer in the table) unless the same is
    /// under way, and waits at most `patience` for it. Returns on time-out too, and at
    /// once offline: the caller answers with what it has. Throws what notesd said of it.
    func ask(_ question: Question, _ body: @escaping @Sendable () async throws(NotesError) -> Void) throws(FileSystemError) {
        guard isOnline() else { return }
        let (asking, isNew) = table.withLock { table in
            if let asking = table.asking[question] { return (asking, false) }
            let asking = Asking()
            asking.done.enter()
            table.asking[question] = asking
            return (asking, true)
        }
        if isNew {
            Task { [self] in
                do throws(NotesError) { try await body() } catch { asking.outcome.withLock { $0 = error } }
                _ = table.withLock { $0.asking.removeValue(forKey: question) }
                asking.done.leave()
            }
        }
        guard asking.done.wait(timeout: .now() + Self.patience) == .success else { return }
        if let error = asking.outcome.withLock({ $0 }) { throw FileSystemError(Self.errno(for: error)) }
    }

    /// Why a look has nothing to show: notesd is away, or did not answer in time.
    func unanswered() -> FileSystemError { FileSystemError(isOnline() ? ETIMEDOUT : EAGAIN) }

    /// The trash's entries below `parent` (nil: those whose folder is not in the trash),
    /// by name; a name taken twice gets " (2)", " (3)" by age, the newest keeping it.
    func names(for trashed: [TrashedRecord], in zone: ZoneID, under parent: String?) -> [String: Inode] {
        let inTrash = Set(trashed.map(\.recordName))
        let here = trashed.filter { record in
            parent == nil ? (record.parent.map { !inTrash.contains($0) } ?? true) : record.parent == parent
        }
        var children: [String: Inode] = [:]
        children.reserveCapacity(here.count)
        table.withLock { table in
            // The zone's index taken out while it grows, so that it is not copied.
            var known = table.trashed.removeValue(forKey: zone) ?? [:]
            defer { table.trashed[zone] = known }
            for record in here {
                var name = record.name
                var copy = 2
                while children[name] != nil {
                    let base = (record.name as NSString).deletingPathExtension
                    let suffix = (record.name as NSString).pathExtension
                    name = "\(base) (\(copy))" + (suffix.isEmpty ? "" : ".\(suffix)")
                    copy += 1
                }
                let inode: Inode
                if let existing = known[record.recordName] {
                    inode = existing
                } else {
                    inode = table.newInode(.trashed(zone, recordName: record.recordName), isDirectory: record.recordType == .folder)
                    known[record.recordName] = inode
                }
                table.entries[inode]?.refresh(size: record.size, modified: record.deletedAt.timeIntervalSince1970)
                children[name] = inode
            }
        }
        return children
    }

    /// `2026-11-24T12-30-05Z`: sorts by time, and no character a shell or a file
    /// manager stumbles on.
    static func stamp(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02dT%02d-%02d-%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// Runs a call to notesd from a kernel thread, waiting at most `patience` for it
    /// (`ETIMEDOUT` past that; the call may still be carried out), and says what went
    /// wrong as an errno.
    func call<T: Sendable>(_ body: @escaping @Sendable () async throws(NotesError) -> T) throws(FileSystemError) -> T {
        guard isOnline() else { throw FileSystemError(EAGAIN) }
        let result = Outcome<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, NotesError>
            do throws(NotesError) { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.value.withLock { $0 = outcome }
            done.signal()
        }
        guard done.wait(timeout: .now() + Self.patience) == .success, let outcome = result.value.withLock({ $0 }) else { throw FileSystemError(ETIMEDOUT) }
        switch outcome {
        case .success(let value): return value
        case .failure(let error): throw FileSystemError(Self.errno(for: error))
        }
    }

    static func errno(for error: NotesError) -> Int32 {
        switch error.code {
        case .permissionFailure, .notAuthenticated: EACCES
        case .unknownItem, .zoneNotFound: ENOENT
        case .constraintViolation, .serverRecordChanged: EEXIST
        case .quotaExceeded: EDQUOT
        case .limitExceeded: E2BIG
        default: EIO
        }
    }

    /// `mv .trash/NAME FOLDER/NEW`: notesd brings the same record back there; the call
    /// returns once the mount shows it.
    func restore(parent: Inode, name: String, into folder: Inode, as newName: String) throws(FileSystemError) {
        guard let child = try load(parent)[name], case .trashed(let zone, let recordName) = try entry(child).kind else {
            throw FileSystemError(EACCES)
        }
        guard let place = tree.folderPlace(folder) else { throw FileSystemError(EACCES) }
        guard place.zone == zone else { throw FileSystemError(EXDEV) }
        guard tree.mayWrite(in: folder) else { throw FileSystemError(EACCES) }
        if tree.shows(newName, in: folder) { throw FileSystemError(EEXIST) }
        _ = try call { [service] () async throws(NotesError) in
            try await service.restoreFromTrash(recordName, in: zone, parent: .some(place.parent), name: newName)
        }
        _ = table.withLock { $0.trash.removeValue(forKey: zone) }
        requestFetch()
        // The fetch that the notice starts brings it, in milliseconds; if notesd is slow
        // to send it, the note is back all the same and shows when it comes.
        let deadline = Date().addingTimeInterval(Self.patience)
        while !tree.shows(newName, in: folder) && Date() < deadline { usleep(2_000) }
    }
}

/// What a call to notesd made from a kernel thread came to.
private final class Outcome<T: Sendable>: Sendable {
    let value = Mutex<Result<T, NotesError>?>(nil)
}
