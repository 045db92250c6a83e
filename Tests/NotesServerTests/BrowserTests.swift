import Foundation
import NotesClient
import NotesModel
import NotesTestSupport
import Testing

/// A real headless Chromium (Debian's `chromium`) loads a public share page and an
/// exported page: they render (the screenshot is not blank) and the `<script>` in the
/// note does not run (the page keeps its title).
@Suite(.serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "needs Debian's chromium (scripts/setup-debian.sh installs it)"))
struct BrowserTests {
    static let hostile = "# Plan\n\nSee [api](api.md).\n\n<script>document.title = 'owned'</script>\n\n<img src=x onerror=\"document.title = 'owned'\">\n\n[click](javascript:document.title='owned')\n"

    /// Chromium's DOM after load, and a screenshot's path.
    static func load(_ url: String, folder: String) -> (dom: String, screenshot: String) {
        let flags = "--headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=900,700"
        let screenshot = "\(folder)/shot-\(UUID().uuidString.prefix(6)).png"
        // (A bound, not a wait: Chromium ends as soon as it has the page. Beside the suite,
        // stress-ng and the API fuzzer it once needed more than 60 s to start.)
        _ = Shell.run("timeout 240 chromium \(flags) --screenshot='\(screenshot)' '\(url)'", in: folder)
        let dom = Shell.run("timeout 240 chromium \(flags) --virtual-time-budget=2000 --dump-dom '\(url)'", in: folder).stdout
        return (dom, screenshot)
    }

    /// Distinct colours in a PNG (decoded with Python's zlib): a blank page has one or two.
    static func colours(_ png: String) -> Int {
        let script = """
            import struct, sys, zlib
            data = open(sys.argv[1], 'rb').read()
            pos, idat, width, height, depth, kind = 8, b'', 0, 0, 0, 0
            while pos < len(data):
                length, tag = struct.unpack('>I4s', data[pos:pos + 8]); body = data[pos + 8:pos + 8 + length]; pos += 12 + length
                if tag == b'IHDR': width, height, depth, kind = struct.unpack('>IIBB', body[:10])
                if tag == b'IDAT': idat += body
            raw = zlib.decompress(idat); channels = {2: 3, 6: 4}.get(kind, 1); stride = width * channels
            rows, previous = [], bytearray(stride)
            for y in range(height):
                kind_, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
                for x in range(stride):
                    a = line[x - channels] if x >= channels else 0; b = previous[x]; c = previous[x - channels] if x >= channels else 0
                    if kind_ == 1: line[x] = (line[x] + a) & 255
                    elif kind_ == 2: line[x] = (line[x] + b) & 255
                    elif kind_ == 3: line[x] = (line[x] + (a + b) // 2) & 255
                    elif kind_ == 4:
                        p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                        line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
                rows.append(bytes(line)); previous = line
            print(len({row[i:i + channels] for row in rows[::4] for i in range(0, stride, channels * 4)}))
            """
        let path = "/tmp/png-\(UUID().uuidString.prefix(6)).py"
        try? script.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return Int(Shell.run("python3 \(path) '\(png)'").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    @Test func publicPageAndExportRenderAndRunNoScript() async throws {
        let folder = "/tmp/browser-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: "\(folder)/notes", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        // Given a public share of a folder over TCP, and the same notes exported
        let daemon = try await DaemonProcess.started(tcp: true)
        let client = daemon.client()
        let zone = try await client.createZone(named: "Web").id
        _ = try await client.modify(ModifyRequest(zone: zone, saves: [
            RecordSave(recordName: "docs", recordType: .folder, name: "Docs"),
            RecordSave(recordName: "plan", recordType: .note, name: "plan.md", parent: "docs", body: Self.hostile),
            RecordSave(recordName: "api", recordType: .note, name: "api.md", parent: "docs", body: "# API\n"),
        ]))
        let share = try await client.createShare(NewShare(zone: zone, rootRecordName: "docs", publicPermission: .readOnly))
        try Self.hostile.write(toFile: "\(folder)/notes/plan.md", atomically: true, encoding: .utf8)
        let export = Shell.run("'\(MountProcess.notesBinary)' export '\(folder)/notes' --html -o '\(folder)/site'")
        #expect(export.status == 0, "\(export)")

        // When Chromium loads both
        for url in ["http://127.0.0.1:\(daemon.port ?? 0)/s/\(share.urlToken)/plan.html", "file://\(folder)/site/plan.html"] {
            let (dom, screenshot) = Self.load(url, folder: folder)
            // Then the page shows and keeps its title: nothing in the note ran
            #expect(dom.contains("<title>Plan</title>"), "\(url): \(dom.prefix(400))")
            #expect(!dom.contains("owned</title>"))
            #expect(FileManager.default.fileExists(atPath: screenshot), "no screenshot of \(url)")
            #expect(Self.colours(screenshot) > 8, "the screenshot of \(url) looks blank")
        }
    }
}
