#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// fsx's idea in the project's own code: random writes at any offset, reads, truncates,
/// renames, reopens and fsyncs of a few files in a real mount, each checked against a
/// copy kept in memory; at the end the mount and notesd hold every byte the model says.
/// Seeded: `NOTES_FSX_SEED=S` replays a run, `NOTES_FSX_OPS=N` runs longer (CI: 1,500).
@Suite(.serialized, .enabled(if: MountProcess.fuseAvailable, "needs /dev/fuse"))
struct ExerciserTests {
    @Test func randomReadsWritesTruncatesAndRenamesMatchAModel() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["NOTES_FSX_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let operations = environment["NOTES_FSX_OPS"].flatMap(Int.init) ?? 1_500
        print("exerciser: seed \(seed), \(operations) operations (NOTES_FSX_SEED=\(seed) replays)")
        var random = SplitMix(seed: seed)
        func below(_ bound: Int) -> Int { Int(random.next() % UInt64(max(bound, 1))) }

        let people = try await TwoMounts()
        let folder = people.aliceMount.path("private")
        // Binary files (file records) and one note written with text only.
        let names = ["x.bin", "y.bin", "z.bin", "t.md"]
        var model: [String: [UInt8]] = [:]
        var descriptors: [String: Int32] = [:]
        var history: [String] = []
        func fail(_ what: String) {
            Issue.record("seed \(seed): \(what)\nlast operations:\n\(history.suffix(15).joined(separator: "\n"))")
        }
        func descriptor(_ name: String) -> Int32 {
            if let open = descriptors[name] { return open }
            let opened = open("\(folder)/\(name)", O_RDWR | O_CREAT, 0o644)
            if model[name] == nil { model[name] = [] }
            descriptors[name] = opened
            return opened
        }
        func bytes(for name: String, count: Int) -> [UInt8] {
            name.hasSuffix(".md")
                ? (0..<count).map { _ in UInt8(ascii: "a") + UInt8(below(26)) }
                : (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }

        for step in 0..<operations {
            let name = names[below(names.count)]
            let fd = descriptor(name)
            guard fd >= 0 else {
                fail("open \(name): errno \(errno)")
                break
            }
            var content = model[name] ?? []
            switch below(10) {
            case 0...3:
                // (Files stay within a note's 16 MiB: past it a write is EFBIG and the open
                // is undone, which `SaveGuaranteeTests` checks; seed 359226 grew one there.)
                let offset = min(below(content.count + 8_192), Limits.maxBodyBytes - 8_192)
                let data = bytes(for: name, count: 1 + below(8_192))
                history.append("\(step): pwrite \(name) at \(offset), \(data.count) bytes")
                let written = data.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
                guard written == data.count else {
                    fail("pwrite returned \(written), errno \(errno)")
                    return
                }
                if content.count < offset { content += [UInt8](repeating: 0, count: offset - content.count) }
                let end = offset + data.count
                if content.count < end { content += [UInt8](repeating: 0, count: end - content.count) }
                content.replaceSubrange(offset..<end, with: data)
                model[name] = content
            case 4...5:
                let offset = below(content.count + 100)
                let length = 1 + below(16_384)
                history.append("\(step): pread \(name) at \(offset), \(length) bytes")
                var buffer = [UInt8](repeating: 0, count: length)
                let read = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(offset)) }
                let expected = offset < content.count ? Array(content[offset..<min(content.count, offset + length)]) : []
                guard read == expected.count, Array(buffer.prefix(max(read, 0))) == expected else {
                    fail("pread of \(name) at \(offset) gave \(read) bytes, the model has \(expected.count); they differ")
                    return
                }
            case 6:
                let size = min(below(content.count * 2 + 1_024), Limits.maxBodyBytes)
                history.append("\(step): ftruncate \(name) to \(size)")
                guard ftruncate(fd, off_t(size)) == 0 else {
                    fail("ftruncate: errno \(errno)")
                    return
                }
                content = size <= content.count ? Array(content.prefix(size)) : content + [UInt8](repeating: 0, count: size - content.count)
                model[name] = content
            case 7:
                // Rename over another file of the same kind (a note stays a note).
                let others = names.filter { $0 != name && $0.hasSuffix(".md") == name.hasSuffix(".md") }
                guard let target = others.isEmpty ? nil : others[below(others.count)] else { continue }
                history.append("\(step): rename \(name) over \(target)")
                close(fd)
                descriptors[name] = nil
                if let other = descriptors.removeValue(forKey: target) { close(other) }
                guard rename("\(folder)/\(name)", "\(folder)/\(target)") == 0 else {
                    fail("rename: errno \(errno)")
                    return
                }
                model[target] = model.removeValue(forKey: name)
            case 8:
                history.append("\(step): close and reopen \(name)")
                close(fd)
                descriptors[name] = nil
            default:
                history.append("\(step): fsync \(name)")
                guard fsync(fd) == 0 else {
                    fail("fsync: errno \(errno)")
                    return
                }
            }
        }
        for fd in descriptors.values { close(fd) }

        // The mount, read afresh, holds what the model says …
        for (name, content) in model {
            let read = FileManager.default.contents(atPath: "\(folder)/\(name)").map { [UInt8]($0) }
            if read != content { fail("\(name) reads \(read?.count ?? -1) bytes in the mount, the model has \(content.count)") }
        }
        // … and so does notesd, once the mount has uploaded everything.
        #expect(await queueDrained(people.aliceMount, 60), "\(people.aliceMount.log().suffix(2000))")
        let records = try await people.alice.zoneChanges(people.aliceDefault, since: nil).records
        for (name, content) in model {
            guard let record = records.first(where: { $0.name == name }) else {
                fail("\(name) is not on notesd")
                continue
            }
            let held = name.hasSuffix(".md") ? Array((record.body ?? "").utf8) : [UInt8](record.bytes ?? Data())
            if held != content {
                let versions = (try? await people.alice.versions(of: record.recordName, in: people.aliceDefault)) ?? []
                fail(
                    "\(name) on notesd has \(held.count) bytes, the model \(content.count); its versions, newest first: \(versions.prefix(8).map { "\($0.size) bytes at \($0.modifiedAt.timeIntervalSince1970)" })"
                )
            }
        }
        #expect(
            Set(records.map(\.name)) == Set(model.keys),
            """
            seed \(seed): notesd has \(records.map(\.name)), the model \(model.keys.sorted()); last operations:
            \(history.suffix(40).joined(separator: "\n"))
            """)
    }
}
