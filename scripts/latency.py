#!/usr/bin/env python3
"""Per-request latency of a running notesd over its Unix socket, from a keep-alive
client with almost no overhead of its own (the figures in BENCHMARKS.md's breakdown).

Usage: scripts/latency.py SOCKET [REQUESTS]   (acts as the Unix user running it)
"""
import http.client, json, socket, sys, time

class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost")
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.socket_path)

def main():
    path, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    connection = UnixConnection(path)

    def request(method, target, body=None):
        connection.request(method, target, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status >= 300:
            sys.exit(f"{method} {target}: HTTP {response.status} {data[:200]!r}")
        return json.loads(data)

    me = request("GET", "/v1/whoami")["name"]
    zone = {"owner": me, "name": "_defaultZone"}
    run = f"latency-{int(time.time())}"
    cases = [
        ("GET /healthz", lambda i: request("GET", "/healthz")),
        ("GET /v1/whoami", lambda i: request("GET", "/v1/whoami")),
        ("save one 1 KiB note", lambda i: request("POST", "/v1/records/modify", json.dumps({"zone": zone, "saves": [
            {"recordName": f"{run}-{i}", "recordType": "note", "name": f"{run}-{i}.md", "body": "x" * 1024}]}))),
    ]
    for name, call in cases:
        start = time.perf_counter()
        for i in range(count):
            call(i)
        print(f"{name:22} {(time.perf_counter() - start) / count * 1000:.3f} ms")

main()
