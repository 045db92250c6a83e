#!/usr/bin/env python3
# bench-notesd-memory.py NOTESD [NOTESD_OPTIONS…]: notesd's resident memory after saving 60 notes
# of 1-12 MiB and deleting them (a fresh data folder under /tmp, removed after).
# Prints VmHWM (peak) and VmRSS (resident now) from /proc.
import json, os, random, socket, subprocess, sys, tempfile, time, http.client
binary = sys.argv[1]
extra = sys.argv[2:]
d = tempfile.mkdtemp(dir="/tmp", prefix="mem-")
sock = d + "/s.sock"
p = subprocess.Popen([binary, "--data-dir", d, "--socket", sock, "--log-level", "error"] + extra)
class UConn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sock)
for _ in range(200):
    if os.path.exists(sock): break
    time.sleep(0.05)
time.sleep(0.3)
def call(path, body):
    c = UConn("localhost"); c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse(); data = r.read(); c.close(); return r.status, data
c = UConn("localhost"); c.request("GET", "/v1/whoami"); me = json.loads(c.getresponse().read())["name"]
zone = {"owner": me, "name": "_defaultZone"}
random.seed(1)
for i in range(60):
    size = random.randint(1, 12) << 20
    st, _ = call("/v1/records/modify", {"zone": zone, "saves": [{"recordName": f"r{i}", "recordType": "note", "name": f"n{i}.md", "body": "a" * size}]})
    assert st == 200, st
    c = UConn("localhost"); c.request("POST", "/v1/records/changes", body=json.dumps({"zone": zone, "limit": 5}), headers={"Content-Type": "application/json"}); c.getresponse().read(); c.close()
st, _ = call("/v1/records/modify", {"zone": zone, "deletes": [{"recordName": f"r{i}"} for i in range(60)]})
time.sleep(1)
status = open(f"/proc/{p.pid}/status").read()
rss = [l for l in status.splitlines() if l.startswith(("VmRSS", "VmHWM"))]
print(os.path.basename(os.path.dirname(os.path.dirname(binary))) or binary, " ".join(" ".join(l.split()) for l in rss))
p.terminate(); p.wait()
subprocess.run(["rm", "-rf", d])
