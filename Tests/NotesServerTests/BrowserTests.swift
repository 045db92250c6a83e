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
    static let hostile =
        "# Plan\n\nSee [api](api.md).\n\n<script>document.title = 'owned'</script>\n\n<img src=x onerror=\"document.title = 'owned'\">\n\n[click](javascript:document.title='owned')\n"

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

    /// Drives Chromium through the DevTools protocol on a pipe (no library needed): opens
    /// `start`, types `password` into the page's password field and presses Enter, then
    /// follows every link under the share once. Prints a JSON report.
    static let driver = #"""
        import json, os, select, shutil, subprocess, sys, tempfile, time
        start, password = sys.argv[1], sys.argv[2]
        deadline = time.monotonic() + 200
        profile = tempfile.mkdtemp(prefix="chromium-")
        to_chromium, from_chromium = os.pipe(), os.pipe()
        def plumbing():
            # (dup first: a pipe end that already is fd 3 or 4 would keep its close-on-exec flag)
            ours = os.dup(to_chromium[0]), os.dup(from_chromium[1])
            os.dup2(ours[0], 3); os.dup2(ours[1], 4)
        proc = subprocess.Popen(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                                 "--user-data-dir=" + profile, "about:blank"], preexec_fn=plumbing, close_fds=False,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chromium[0]); os.close(from_chromium[1])
        buffer, counter, session, statuses = b"", 0, None, {}
        def read_message():
            global buffer
            while b"\0" not in buffer:
                left = deadline - time.monotonic()
                if left <= 0: raise SystemExit("chromium did not answer in time")
                ready, _, _ = select.select([from_chromium[0]], [], [], left)
                if not ready: continue
                chunk = os.read(from_chromium[0], 1 << 20)
                if not chunk: raise SystemExit("chromium closed the pipe")
                buffer += chunk
            message, buffer = buffer.split(b"\0", 1)
            message = json.loads(message)
            if message.get("method") == "Network.responseReceived" and message["params"]["type"] == "Document":
                statuses[message["params"]["response"]["url"]] = message["params"]["response"]["status"]
            return message
        def send(method, params=None, wait=True):
            global counter
            counter += 1
            message = {"id": counter, "method": method, "params": params or {}}
            if session: message["sessionId"] = session
            os.write(to_chromium[1], json.dumps(message).encode() + b"\0")
            while wait:
                reply = read_message()
                if reply.get("id") == counter:
                    if "error" in reply: raise SystemExit(f"{method}: {reply['error']}")
                    return reply.get("result", {})
        def wait_for(event):
            while read_message().get("method") != event: pass
        def evaluate(expression):
            return send("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"].get("value")
        def visit(url):
            send("Page.navigate", {"url": url})
            wait_for("Page.loadEventFired")
        try:
            target = send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Network", "Runtime"): send(domain + ".enable")
            report = {}
            visit(start)
            report["asked"] = evaluate("document.querySelector('input[type=password]') !== null")
            # Type the password as a person does: focus the field, type, press Enter.
            field = send("DOM.querySelector", {"nodeId": send("DOM.getDocument")["root"]["nodeId"], "selector": "input[type=password]"})["nodeId"]
            send("DOM.focus", {"nodeId": field})
            send("Input.insertText", {"text": password})
            for kind in ("keyDown", "keyUp"):
                send("Input.dispatchKeyEvent", {"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r" if kind == "keyDown" else ""})
            wait_for("Page.loadEventFired")
            report["after"] = {"url": evaluate("location.href"), "title": evaluate("document.title"), "text": evaluate("document.body.innerText")}
            # Follow every link under the share, once each.
            prefix = start.split("/s/")[0] + "/s/" + start.split("/s/")[1].split("/")[0]
            queue, seen, pages = [report["after"]["url"]], set(), []
            while queue:
                url = queue.pop().split("#")[0]
                if url in seen: continue
                seen.add(url)
                visit(url)
                links = evaluate("Array.from(document.links).map(a => a.href)") or []
                pages.append({"url": url, "status": statuses.get(url), "title": evaluate("document.title"),
                              "asked": evaluate("document.querySelector('input[type=password]') !== null")})
                queue += [link for link in links if link.startswith(prefix)]
            report["pages"] = pages
            print(json.dumps(report))
        finally:
            proc.kill(); proc.wait()
            shutil.rmtree(profile, ignore_errors=True)
        """#

    /// A zone "Web" whose folder Docs holds the hostile plan.md, api.md (`api`) and
    /// `more`, shared by a public read-only link.
    static func sharedDocs(_ client: NotesClient, api: String, more: [RecordSave] = []) async throws -> Share {
        let zone = try await client.createZone(named: "Web").id
        _ = try await client.modify(
            ModifyRequest(
                zone: zone,
                saves: [
                    RecordSave(recordName: "docs", recordType: .folder, name: "Docs"),
                    RecordSave(recordName: "plan", recordType: .note, name: "plan.md", parent: "docs", body: hostile),
                    RecordSave(recordName: "api", recordType: .note, name: "api.md", parent: "docs", body: api),
                ] + more))
        return try await client.createShare(NewShare(zone: zone, rootRecordName: "docs", publicPermission: .readOnly))
    }

    @Test func aPasswordLinkInABrowserAsksTakesThePasswordAndEveryLinkThenOpens() async throws {
        let folder = "/tmp/browser-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Self.driver.write(toFile: "\(folder)/drive.py", atomically: true, encoding: .utf8)

        // Given a folder with a hostile note, shared by a public link with a password, over TCP
        let daemon = try await DaemonProcess.started(tcp: true)
        let client = daemon.client()
        let share = try await Self.sharedDocs(
            client, api: "# API\n\n[Back to the plan](plan.md)\n",
            more: [
                RecordSave(recordName: "old", recordType: .folder, name: "Old (2025)", parent: "docs"),
                RecordSave(recordName: "notes", recordType: .note, name: "My notes #1.md", parent: "old", body: "# Old notes\n\n[api](../api.md)\n"),
            ])
        _ = try await client.updateShare(id: share.id, ShareUpdate(publicPassword: "correct horse"))

        // When a person opens the link, types the password and presses Enter, then follows every link
        let start = "http://127.0.0.1:\(daemon.port ?? 0)/s/\(share.urlToken)/plan.html"
        let run = Shell.run("timeout 240 python3 '\(folder)/drive.py' '\(start)' 'correct horse'", in: folder)
        let report = try #require((try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]), "\(run)")

        // Then the link asked for the password and, given it, showed the note it was opened on
        #expect(report["asked"] as? Bool == true, "\(report)")
        let after = report["after"] as? [String: Any] ?? [:]
        #expect(after["url"] as? String == start, "\(after)")
        #expect(after["title"] as? String == "Plan", "\(after)")
        // and every page of the share opened: no 404, no password asked again, no script ran
        let pages = report["pages"] as? [[String: Any]] ?? []
        #expect(pages.count >= 5, "\(pages)")
        for page in pages {
            #expect(page["status"] as? Int == 200, "\(page)")
            #expect(page["asked"] as? Bool == false, "\(page)")
            #expect((page["title"] as? String).map { !$0.isEmpty && $0 != "owned" } == true, "\(page)")
        }
        try await daemon.stop()
    }

    @Test func publicPageAndExportRenderAndRunNoScript() async throws {
        let folder = "/tmp/browser-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: "\(folder)/notes", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        // Given a public share of a folder over TCP, and the same notes exported
        let daemon = try await DaemonProcess.started(tcp: true)
        let share = try await Self.sharedDocs(daemon.client(), api: "# API\n")
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
