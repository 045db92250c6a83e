import Foundation
import NotesModel
@testable import NotesMount
import NotesReplica
import NotesStore
import Testing

/// A small seeded generator (SplitMix64): one number replays a whole run.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Three accounts, four mounts (alice on two machines, bob read-write and carol
/// read-only on alice's shared zone Team) and the real store, in one process, driven by
/// a seed: editor and shell operations, uploads, fetches, mounts going offline and being
/// killed, in an order the seed picks. Then everything reconnects and settles, and the
/// invariants are checked (see `check`).
final class Simulation {
    let seed: UInt64
    var random: SeededRandom
    let folder: String
    let store: SQLiteStore
    var mounts: [SimulatedMount] = []
    /// What happened, one line a step, for the report of a failing seed.
    var log: [String] = []
    let team = ZoneID(owner: "alice", name: "Team")
    /// The simulation's clock: a quarter of a second a step.
    let clock = SimulatedClock()
    /// What POSIX says the files at the top of `private/` must be, for each mount that
    /// is the only one writing there (bob's and carol's): files by identity, so that a
    /// rename moves one and a file written through a handle after it was replaced or
    /// removed shows nowhere. A mount killed starts a new model from what it shows (a
    /// `kill -9` may undo its last rename or delete). An earlier simulation could
    /// not see a file that came back after its delete (fsstress found one): both the
    /// mount and notesd showed it, so they agreed.
    var models: [String: PosixModel] = [:]
    /// The model's file behind each file a mount holds open.
    var heldFiles: [String: [HeldFile]] = [:]
    /// Editors' saves that gave a note a new record.
    var identityLost: [String] = []
    enum HeldFile {
        case outside
        case file(Int)
        case unknown
    }

    /// The model of a mount started again from what it shows (after a kill, or an
    /// operation that failed part-way). Its files get new numbers; what handles held
    /// is no longer known, and a write through one starts the model again too.
    func restartModel(_ mount: SimulatedMount) -> PosixModel {
        heldFiles[mount.label] = (heldFiles[mount.label] ?? []).map { if case .outside = $0 { .outside } else { .unknown } }
        return PosixModel(shown: Self.modelled(mount.snapshot(["private"])), after: models[mount.label]?.lastFile ?? 0)
    }

    init(seed: UInt64) async throws {
        self.seed = seed
        random = SeededRandom(seed: seed)
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("notes-sim-\(seed)-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        store = try SQLiteStore(path: "\(folder)/notes.sqlite")
        for name in ["alice", "bob", "carol"] { _ = try await store.createAccount(name: name, email: nil, isAdmin: false) }
        _ = try await store.createZone(team, actor: "alice")
        _ = try await store.modify(
            ModifyRequest(
                zone: team,
                saves: [
                    RecordSave(recordName: "plan", recordType: .note, name: "plan.md", body: "the plan\n"),
                    RecordSave(recordName: "d", recordType: .folder, name: "d"),
                ]), actor: "alice")
        let share = try await store.createShare(
            NewShare(
                zone: team, rootRecordName: nil,
                participants: [
                    Invitee(name: "bob", permission: .readWrite), Invitee(name: "carol", permission: .readOnly),
                ]), actor: "alice")
        for name in ["bob", "carol"] {
            _ = try await store.acceptShare(urlToken: share.urlToken, actor: name)
            _ = try await store.createZone(ZoneID(owner: name, name: "Work"), actor: name)
        }
        for (label, account) in [("alice-1", "alice"), ("alice-2", "alice"), ("bob", "bob"), ("carol", "carol")] {
            mounts.append(try SimulatedMount(label: label, account: account, store: store, folder: "\(folder)/\(label)", clock: { [clock] in clock.now() }))
        }
        for mount in mounts { await mount.engine.fetchAll() }
        for mount in mounts where mount.account != "alice" {
            models[mount.label] = PosixModel(shown: Self.modelled(mount.snapshot(["private"])), after: 0)
            heldFiles[mount.label] = []
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
    func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }

    /// The folders of a mount where its notes live: its own default zone, and Team.
    func places(_ mount: SimulatedMount) -> [[String]] {
        let team = mount.account == "alice" ? ["private", "Team"] : ["shared", "alice", "Team"]
        let own = mount.account == "alice" ? [] : [["private", "Work"], ["private", "Work", "d"], ["private", "Work", "e"]]
        return [["private"], team, team + ["d"], team + ["e"]] + own
    }

    /// Where in the POSIX model of a modelled mount a path lies: relative to private/,
    /// at its top (the default zone) or in its zone Work (which has folders); `nil`
    /// elsewhere (zones made by `mkdir private/d`, shares).
    func modelPath(_ mount: SimulatedMount, _ path: [String]) -> String? {
        guard models[mount.label] != nil, path.first == "private", path.count >= 2 else { return nil }
        guard path.count == 2 || path[1] == "Work" else { return nil }
        return path.dropFirst().joined(separator: "/")
    }

    /// What a modelled mount shows of the model's part of private/.
    static func modelled(_ shown: [String: [UInt8]]) -> [String: [UInt8]] {
        shown.filter { !$0.key.contains("/") || $0.key.hasPrefix("Work/") }
    }

    static let names = ["a.md", "b.md", "plan.md", "n.md"]

    // MARK: Steps

    func step(_ index: Int) async throws {
        clock.advance(by: 0.25)
        let mount = pick(mounts)
        let roll = random.next() % 100
        if roll < 60 {
            fileOperation(mount, index)
        } else if roll < 75 {
            log.append("\(mount.label): upload")
            await mount.engine.uploadPending()
        } else if roll < 90 {
            log.append("\(mount.label): fetch")
            await mount.engine.fetchAll()
        } else if roll < 94 {
            log.append("\(mount.label): moved-aside notes expire")
            _ = mount.engine.deleteMovedAside(olderThan: -1)
        } else if roll < 98 {
            mount.service.online.toggle()
            log.append("\(mount.label): \(mount.service.online ? "back online" : "offline")")
        } else {
            log.append("\(mount.label): killed and mounted again")
            try mount.restart()
            if models[mount.label] != nil {
                heldFiles[mount.label] = []
                models[mount.label] = restartModel(mount)
            }
        }
    }

    func fileOperation(_ mount: SimulatedMount, _ index: Int) {
        let place = pick(places(mount))
        let name = pick(Self.names)
        let target = place + [name]
        let text = Array("\(mount.label) step \(index)\n".utf8)
        let kind = random.next() % 16
        // The record the note under `target` is now: an editor's save must keep it.
        let record = mount.recordName(target)
        var outcome: Int32?
        let description: String
        // The model follows what succeeded in a modelled mount's own private/ and Work.
        let path = modelPath(mount, target)
        /// Whether this step touches the model (its outcome then decides the model's).
        var touches = path != nil
        var model = models[mount.label] ?? PosixModel(shown: [:], after: 0)
        switch kind {
        case 0, 1:
            description = "printf > \(target.joined(separator: "/"))"
            outcome = mount.write(place, name, text)
            if let path { model.write(path, text) }
        case 2:
            description = "printf >> \(target.joined(separator: "/"))"
            outcome = mount.write(place, name, text, append: true)
            if let path { model.append(path, text) }
        case 3:
            // sed -i, Python's atomic write: a temporary file renamed over the note.
            let temporary = "sed\(index)"
            description = "write \(temporary) and rename it over \(target.joined(separator: "/"))"
            outcome = mount.write(place, temporary, text) ?? mount.rename(place + [temporary], target)
            if let path { model.replace(path, text) }
        case 4:
            // vim: rename the note to a backup, probe with 4913, write anew, drop the backup.
            description = "vim's backup-and-rename save of \(target.joined(separator: "/"))"
            let backup = place + [name + "~"]
            if mount.inode(target) != nil { outcome = mount.rename(target, backup) }
            if outcome == nil { outcome = mount.write(place, "4913", []) ?? mount.unlink(place + ["4913"]) }
            if outcome == nil { outcome = mount.write(place, name, text) }
            if outcome == nil, mount.inode(backup) != nil { outcome = mount.unlink(backup) }
            if let path { model.replace(path, text) }
            if outcome == nil { keptIdentity(mount, target, record, description) }
        case 5:
            // GNU mv from another file system: unlink, then create.
            description = "mv from another disk over \(target.joined(separator: "/"))"
            if mount.inode(target) != nil { outcome = mount.unlink(target) }
            if outcome == nil { outcome = mount.write(place, name, text) }
            if let path { model.replace(path, text) }
            if outcome == nil { keptIdentity(mount, target, record, description) }
        case 6:
            let other = pick(Self.names)
            description = "mv \(target.joined(separator: "/")) \(other)"
            outcome = mount.rename(target, place + [other])
            if let path, let to = modelPath(mount, place + [other]) { model.move(path, to) }
        case 7:
            description = "rm \(target.joined(separator: "/"))"
            outcome = mount.unlink(target)
            if let path { model.remove(path) }
        case 8:
            let folder = place.last == "d" ? place : place + ["d"]
            description = "mkdir \(folder.joined(separator: "/"))"
            outcome = mount.mkdir(folder)
            // (A folder made at the top of private/ is a zone, outside the model.)
            touches = folder.count > 2 && modelPath(mount, folder) != nil
            if touches, let path = modelPath(mount, folder) { model.makeFolder(path) }
        case 9:
            let folder = place.last == "d" ? place : place + ["d"]
            description = "rm -r \(folder.joined(separator: "/"))"
            outcome = mount.removeTree(folder)
            touches = folder.count > 2 && modelPath(mount, folder) != nil
            if touches, let path = modelPath(mount, folder) { model.removeTree(path) }
        case 10:
            description = "open \(target.joined(separator: "/")) and keep it open (handle \(mount.holds.count))"
            outcome = mount.hold(place, name)
            if outcome == nil { heldFiles[mount.label, default: []].append(path.map { .file(model.open($0)) } ?? .outside) }
        case 11:
            guard !mount.holds.isEmpty else { return }
            let handle = Int(random.next() % UInt64(mount.holds.count))
            description = "write through open handle \(handle)"
            outcome = mount.writeHeld(handle, text)
            // (A write to a file a handle holds shows wherever that file is now, if anywhere.)
            if models[mount.label] != nil, let held = heldFiles[mount.label]?[handle] {
                switch held {
                case .file(let file) where outcome == nil: models[mount.label]!.contents[file, default: []] += text
                case .outside: break
                default: models[mount.label] = restartModel(mount)
                }
            }
            log.append("\(mount.label): \(description)\(outcome.map { " → errno \($0)" } ?? "")")
            return
        case 12:
            guard !mount.holds.isEmpty else { return }
            let handle = Int(random.next() % UInt64(mount.holds.count))
            description = "close open handle \(handle)"
            outcome = mount.closeHeld(handle)
            if heldFiles[mount.label] != nil { heldFiles[mount.label]!.remove(at: handle) }
            log.append("\(mount.label): \(description)\(outcome.map { " → errno \($0)" } ?? "")")
            return
        case 13:
            // IntelliJ's safe write: the new text in a temporary, the note renamed to
            // ___jb_old___, the temporary renamed to the note's name, the old file deleted.
            description = "IntelliJ's safe write of \(target.joined(separator: "/"))"
            let temporary = name + "___jb_tmp___"
            let old = place + [name + "___jb_old___"]
            outcome = mount.write(place, temporary, text)
            if outcome == nil, mount.inode(target) != nil { outcome = mount.rename(target, old) }
            if outcome == nil { outcome = mount.rename(place + [temporary], target) }
            if outcome == nil, mount.inode(old) != nil { outcome = mount.unlink(old) }
            if let path { model.replace(path, text) }
            if outcome == nil { keptIdentity(mount, target, record, description) }
        case 14:
            // mv of a folder (d ↔ e), with what it holds; at the top of private/ they are
            // zones, which do not move.
            let base = ["d", "e"].contains(place.last ?? "") ? Array(place.dropLast()) : place
            let (from, to) = chance(50) ? (base + ["d"], base + ["e"]) : (base + ["e"], base + ["d"])
            description = "mv \(from.joined(separator: "/")) \(to.joined(separator: "/"))"
            outcome = mount.rename(from, to)
            touches = from.count > 2 && modelPath(mount, from) != nil
            if touches, let fromPath = modelPath(mount, from), let toPath = modelPath(mount, to) { model.moveTree(fromPath, toPath) }
        default:
            // mv to another folder (of another zone: EXDEV, as `mv` then copies).
            let destination = pick(places(mount))
            let other = pick(Self.names)
            description = "mv \(target.joined(separator: "/")) \((destination + [other]).joined(separator: "/"))"
            outcome = mount.rename(target, destination + [other])
            let to = modelPath(mount, destination + [other])
            touches = path != nil || to != nil
            if let path, let to {
                model.move(path, to)
            } else if path != nil || to != nil {
                // One end outside the model: start it again from what the mount shows.
                model = restartModel(mount)
            }
        }
        if touches && models[mount.label] != nil {
            // What failed part-way leaves what it left: the model starts again from it.
            models[mount.label] = outcome == nil ? model : restartModel(mount)
        }
        log.append("\(mount.label): \(description)\(outcome.map { " → errno \($0)" } ?? "")")
        if ProcessInfo.processInfo.environment["NOTES_SIM_MODEL"] != nil, let model = models[mount.label] {
            log.append(
                "    model: \(model.shown.sorted { $0.key < $1.key }.map { "\($0.key)=\(String(decoding: $0.value, as: UTF8.self).split(separator: "\n"))" }) held \(heldFiles[mount.label] ?? [])"
            )
        }
    }

    /// An editor's save of a note that had a record left it that record (see `EditorSaves`).
    func keptIdentity(_ mount: SimulatedMount, _ target: [String], _ before: String?, _ description: String) {
        guard let before, let after = mount.recordName(target), after != before else { return }
        identityLost.append("\(mount.label): \(description) made the note record \(after) instead of \(before)")
    }

    // MARK: Settling and checking

    /// Everyone online, moved-aside notes expired, and rounds of uploads and fetches on
    /// every mount until nothing is queued and a whole round changes no mount.
    func settle() async throws {
        for mount in mounts {
            mount.service.online = true
            while !mount.holds.isEmpty { mount.closeHeld(0) }
            heldFiles[mount.label] = []
        }
        var previous: [[String: [UInt8]]] = []
        for _ in 0..<12 {
            for mount in mounts {
                _ = mount.engine.deleteMovedAside(olderThan: -1)
                await mount.engine.uploadPending()
            }
            for mount in mounts { await mount.engine.fetchAll() }
            let now = mounts.map { $0.snapshot([]) }
            if now == previous && mounts.allSatisfy({ $0.queued == 0 }) { return }
            previous = now
        }
    }

    /// What notesd holds in `zone` as `account` sees it, as paths (folders end in `/`).
    func server(_ zone: ZoneID, as account: String) async throws -> [String: [UInt8]] {
        var records: [String: Record] = [:]
        var token: String?
        repeat {
            let page = try await store.zoneChanges(zone, since: token, limit: Limits.maxChangesPage, actor: account)
            for name in page.deleted { records[name] = nil }
            for record in page.records { records[record.recordName] = record }
            token = page.changeToken
            if !page.moreComing { break }
        } while true
        func path(_ record: Record) -> String {
            var names = [record.name]
            var parent = record.parent
            while let name = parent, let folder = records[name] {
                names.insert(folder.name, at: 0)
                parent = folder.parent
            }
            return names.joined(separator: "/")
        }
        var result: [String: [UInt8]] = [:]
        for record in records.values {
            if record.recordType == .folder {
                result[path(record) + "/"] = []
            } else {
                result[path(record)] = record.recordType == .note ? Array((record.body ?? "").utf8) : [UInt8](record.bytes ?? Data())
            }
        }
        return result
    }

    /// The invariants; each broken one is a line of the answer.
    func check() async throws -> [String] {
        var broken = identityLost
        for mount in mounts {
            // Every mount of a zone and notesd show the same tree: same names, same bytes.
            // Top-level folders of private/ are the account's other zones: each is compared
            // on its own, and a folder of private/ that is no zone on notesd shows up as extra.
            let own = ZoneID(owner: mount.account, name: ZoneID.defaultZoneName)
            let zones = try await store.zones(scope: .private, actor: mount.account).map(\.id).filter { $0 != own }
            var privateRoot = mount.snapshot(["private"])
            var expectations: [(String, [String: [UInt8]], [String: [UInt8]])] = []
            for zone in zones {
                for key in privateRoot.keys where key.hasPrefix(zone.name + "/") { privateRoot[key] = nil }
                if zone != team { expectations.append(("private/\(zone.name)/", mount.snapshot(["private", zone.name]), try await server(zone, as: mount.account))) }
            }
            expectations.append(("private/", privateRoot, try await server(own, as: mount.account)))
            expectations.append(("Team/", mount.snapshot(places(mount)[1]), try await server(team, as: mount.account)))
            for (where_, shown, held) in expectations where shown != held {
                let extra = shown.keys.filter { held[$0] == nil || held[$0] != shown[$0] }.sorted()
                let missing = held.keys.filter { shown[$0] == nil }.sorted()
                let texts = extra.map {
                    "\($0): \(String(decoding: shown[$0] ?? [], as: UTF8.self).split(separator: "\n")) on notesd \(held[$0].map { "\(String(decoding: $0, as: UTF8.self).split(separator: "\n"))" } ?? "-")"
                }
                broken.append("\(mount.label) \(where_): the mount differs from notesd; only or different in the mount: \(texts), missing: \(missing)")
                if ProcessInfo.processInfo.environment["NOTES_SIM_LOG"] != nil {
                    let state = mount.tree.state.withLock { state in
                        state.nodes.values.filter { $0.recordKey != nil || $0.isDirectory }
                            .map { "\($0.inode) '\($0.name)' parent \($0.parent) attached \($0.attached) kind \($0.kind) wants \(state.displaced[$0.inode] ?? "-")" }
                    }
                    broken.append("  nodes: \(state)")
                    let rows = ((try? mount.replica.load().records) ?? []).map {
                        "\($0.recordName) '\($0.name)' parent \($0.parent ?? "-") dirty \($0.dirty) tag \($0.changeTag ?? "-") text \(String(decoding: (try? mount.replica.contentAndTag(of: $0.key))?.0 ?? [], as: UTF8.self).split(separator: "\n"))"
                    }
                    broken.append("  replica: \(rows)")
                    broken.append("  replica zones: \(((try? mount.replica.zones()) ?? []).map { "\($0.id) \($0.pending.map { "\($0)" } ?? "-")" })")
                    let serverTeam = ((try? await store.zoneChanges(team, since: nil, limit: 2000, actor: mount.account).records) ?? []).map {
                        "\($0.recordName) '\($0.name)' parent \($0.parent ?? "-")"
                    }
                    broken.append("  server Team: \(serverTeam)")
                    let serverOwn = ((try? await store.zoneChanges(own, since: nil, limit: 2000, actor: mount.account).records) ?? []).map {
                        "\($0.recordName) '\($0.name)' parent \($0.parent ?? "-") tag \($0.changeTag)"
                    }
                    broken.append("  server \(own.name): \(serverOwn)")
                    broken.append("  server zones: \(((try? await store.zones(scope: .private, actor: mount.account)) ?? []).map(\.id))")
                }
            }
            // Nothing stays queued or refused.
            if mount.queued != 0 {
                let waiting = ((try? mount.replica.waiting()) ?? []).map { "\($0.change) \($0.zone)/\($0.name)\($0.refusal.map { " (\($0))" } ?? "")" }
                broken.append("\(mount.label): \(mount.queued) changes still queued: \(waiting)")
                if ProcessInfo.processInfo.environment["NOTES_SIM_LOG"] != nil {
                    let rows = ((try? mount.replica.nextBatch(limit: 10, byteBudget: 1 << 30, skipping: [], holding: { _, _ in false }, cost: { _, _ in 0 })) ?? [])
                    for row in rows {
                        let held = mount.tree.state.withLock { state in
                            "index \(state.index[row.record.key].map { "\($0) '\(state.nodes[$0]?.name ?? "?")' kind \(state.nodes[$0].map { "\($0.kind)" } ?? "?") attached \(state.nodes[$0]?.attached ?? false)" } ?? "-"), removed \(state.editorSaves.removed.filter { $0.value.record.key == row.record.key }.map { "\($0.key.name) deleted \($0.value.deletedInReplica)" })"
                        }
                        broken.append("  queued \(row.record.key) '\(row.record.name)' deleted \(row.record.deleted): \(held)")
                    }
                }
            }
            // Each folder's count of subfolders (its link count) matches what it holds.
            let miscounted = mount.tree.state.withLock { state in
                state.nodes.values.filter { $0.isDirectory && $0.attached }.compactMap { folder -> String? in
                    let held = Int32(folder.children.reduce(0) { $0 + (state.nodes[$1.inode]?.isDirectory == true ? 1 : 0) })
                    return held == folder.children.folders ? nil : "'\(folder.name)' counts \(folder.children.folders) subfolders and holds \(held)"
                }
            }
            if !miscounted.isEmpty { broken.append("\(mount.label): \(miscounted)") }
            // The only writer of its private/ ends as POSIX says, nothing lost, nothing back.
            if let model = models[mount.label] {
                let shown = Self.modelled(mount.snapshot(["private"]))
                let expected = model.shown
                if shown != expected {
                    let extra = shown.keys.filter { expected[$0] != shown[$0] }.sorted()
                    let missing = expected.keys.filter { shown[$0] == nil }.sorted()
                    broken.append(
                        "\(mount.label) private/: differs from what POSIX says it must hold; only or different in the mount: \(extra) (\(extra.map { String(decoding: shown[$0]!, as: UTF8.self) })), missing: \(missing); POSIX says: \(expected.sorted { $0.key < $1.key }.map { "\($0.key): \(String(decoding: $0.value, as: UTF8.self))" })"
                    )
                }
            }
            let stuck = mount.engine.stuck.withLock { $0 }
            if !stuck.isEmpty { broken.append("\(mount.label): refused for good: \(stuck)") }
        }
        // A read-only participant never changed anything on notesd.
        let teamRecords = try await store.zoneChanges(team, since: nil, limit: Limits.maxChangesPage, actor: "alice").records
        for record in teamRecords {
            let versions = try await store.versions(of: record.recordName, in: team, actor: "alice")
            if versions.contains(where: { $0.modifiedBy == "carol" }) { broken.append("carol (read-only) changed \(record.name)") }
        }
        return broken
    }

    /// `NOTES_SIM_TRACE=1` logs, after every step, the records a mount's replica holds
    /// that its tree does not show; `NOTES_SIM_TRACE=<mount>` (e.g. `alice-1`) also logs
    /// that mount's records, tree and replica side by side.
    func trace(label: String) {
        for mount in mounts {
            let rows = ((try? mount.replica.load().records) ?? []).filter { !$0.deleted }
            let missing = mount.tree.state.withLock { state in rows.filter { state.index[$0.key] == nil }.map { "\($0.recordName) '\($0.name)'" } }
            if !missing.isEmpty { log.append("    \(mount.label): replica rows not in the tree: \(missing)") }
            guard label == mount.label else { continue }
            let tree = mount.tree.state.withLock { state in
                state.nodes.values.filter { $0.attached && $0.recordKey != nil }.map { "'\($0.name)'=\($0.recordKey!.recordName.prefix(12))" }.sorted().joined(separator: " ")
                    + " | moved aside: " + state.editorSaves.removed.map { "'\($0.key.name)'=\($0.value.record.recordName.prefix(12))" }.sorted().joined(separator: " ")
            }
            let replica = rows.map { "'\($0.name)'=\($0.recordName.prefix(12))\($0.dirty != 0 ? "*" : "")" }.sorted().joined(separator: " ")
            log.append("    tree: \(tree)\n    replica (* changed here): \(replica)")
        }
    }

    /// A fingerprint of what every mount shows and what every step did (FNV-1a), so that
    /// two runs of a seed can be compared.
    func digest() -> String {
        var text = log.joined(separator: "\n")
        for mount in mounts {
            for (path, content) in mount.snapshot([]).sorted(by: { $0.key < $1.key }) { text += "\n\(mount.label) \(path) \(content)" }
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// Runs `steps` steps, settles, and checks.
    func run(steps: Int) async throws -> [String] {
        let trace = ProcessInfo.processInfo.environment["NOTES_SIM_TRACE"]
        for index in 0..<steps {
            try await step(index)
            if let trace { self.trace(label: trace) }
        }
        try await settle()
        return try await check()
    }
}

@Suite struct SimulationTests {
    /// `NOTES_SIM_SEED=S` replays one seed; `NOTES_SIM_SEEDS=N` runs seeds 1…N (CI: 100).
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let one = environment["NOTES_SIM_SEED"].flatMap(UInt64.init) { return [one] }
        let count = environment["NOTES_SIM_SEEDS"].flatMap(UInt64.init) ?? 100
        return Array(1...max(count, 1))
    }

    @Test func manyMountsConvergeForEverySeed() async throws {
        let steps = ProcessInfo.processInfo.environment["NOTES_SIM_STEPS"].flatMap(Int.init) ?? 120
        var failures: [UInt64] = []
        let started = ContinuousClock.now
        for seed in Self.seeds {
            let simulation = try await Simulation(seed: seed)
            let broken = try await simulation.run(steps: steps)
            if Self.seeds.count == 1 {
                // Replaying a seed gives the same run: the same steps, the same end.
                let modelled = simulation.models.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.shown.keys.sorted())" }
                print("simulation: seed \(seed) ended in state \(simulation.digest()) after \(simulation.log.count) steps; POSIX models: \(modelled)")
            }
            if !broken.isEmpty {
                failures.append(seed)
                Issue.record(
                    """
                    seed \(seed) broke \(broken.count) invariant(s) (replay: SWIFT_DETERMINISTIC_HASHING=1 NOTES_SIM_SEED=\(seed) swift test --filter manyMountsConverge):
                    \(broken.joined(separator: "\n"))
                    steps:
                    \(simulation.log.joined(separator: "\n"))
                    """)
            }
        }
        print("simulation: \(Self.seeds.count) seeds × \(steps) steps in \(ContinuousClock.now - started); failing seeds: \(failures)")
    }
}

/// Files as POSIX keeps them: names point at files, a file lives on while a handle holds
/// it, a rename moves the name, `>` keeps the file and empties it. Paths are relative
/// (`a.md`, `Work/d/b.md`); folders are listed as `Work/d/`, as snapshots list them.
struct PosixModel {
    private var names: [String: Int] = [:]
    private var folders: Set<String> = []
    var contents: [Int: [UInt8]] = [:]
    private var next = 0

    /// What a mount shows at the top of private/ (its files, not its zone folders); its
    /// files are numbered after `after`, so that no handle's number means another file.
    init(shown: [String: [UInt8]], after: Int) {
        next = after
        for (name, content) in shown.sorted(by: { $0.key < $1.key }) {
            if name.hasSuffix("/") { folders.insert(String(name.dropLast())) } else { names[name] = newFile(content) }
        }
    }

    /// The number of the newest file.
    var lastFile: Int { next }

    var shown: [String: [UInt8]] {
        var shown = names.mapValues { contents[$0] ?? [] }
        for folder in folders { shown[folder + "/"] = [] }
        return shown
    }

    private mutating func newFile(_ content: [UInt8]) -> Int {
        next += 1
        contents[next] = content
        return next
    }

    /// open(O_CREAT): the file under `name`, made if missing.
    mutating func open(_ name: String) -> Int {
        if let file = names[name] { return file }
        let file = newFile([])
        names[name] = file
        return file
    }

    mutating func write(_ name: String, _ content: [UInt8]) { contents[open(name)] = content }

    mutating func append(_ name: String, _ content: [UInt8]) { contents[open(name), default: []] += content }

    /// A new file renamed over `name` (or `name` removed and made anew).
    mutating func replace(_ name: String, _ content: [UInt8]) { names[name] = newFile(content) }

    mutating func move(_ from: String, _ to: String) {
        guard from != to, let file = names.removeValue(forKey: from) else { return }
        names[to] = file
    }

    mutating func remove(_ name: String) { names[name] = nil }

    mutating func makeFolder(_ path: String) { folders.insert(path) }

    /// rename(2) of a folder: everything under it moves (over an empty folder, which goes).
    ///
    /// Applied before the outcome is known (a failed step throws the model away), so it
    /// must hold for a rename the kernel refuses too: over a folder that is not empty,
    /// what was under `to` gives way instead of the model trapping on a name held twice.
    mutating func moveTree(_ from: String, _ to: String) {
        guard from != to, folders.contains(from) else { return }
        func moved(_ path: String) -> String { path == from ? to : to + path.dropFirst(from.count) }
        func under(_ path: String, _ folder: String) -> Bool { path == folder || path.hasPrefix(folder + "/") }
        folders = Set(folders.filter { !under($0, to) }.map { under($0, from) ? moved($0) : $0 })
        let kept = names.filter { !under($0.key, from) && !under($0.key, to) }
        let carried = Dictionary(names.filter { under($0.key, from) }.map { (moved($0.key), $0.value) }, uniquingKeysWith: { _, last in last })
        names = kept.merging(carried) { _, carried in carried }
    }

    /// `rm -r`: the folder and everything under it.
    mutating func removeTree(_ path: String) {
        folders = folders.filter { $0 != path && !$0.hasPrefix(path + "/") }
        names = names.filter { !$0.key.hasPrefix(path + "/") }
    }
}
