#!/usr/bin/env python3
"""hf-hub-server.py: the project's test Hub (Tests/HF/hub_server.py, imported unchanged) serving a
model or a dataset from disk, for content-bench.py.

Usage: hf-hub-server.py [datasets/]ORG/REPO DIR

The files under DIR become the main revision of the model ORG/REPO (the dataset ORG/REPO given as
datasets/ORG/REPO: `/api/datasets/...` and `/datasets/.../resolve/...`), next to the test's own
repositories: files of 1 MiB or more are LFS (the Hub redirects them to its CDN), the others are
served by the Hub; bodies are read from disk at each request (sendfile), never held in memory.
What this adds to the test server:
- `GET /_stats` also has `bytes`: the response bodies both hosts have sent (counted per MiB
  written to the socket, so a killed client's share is counted as far as it went);
- a listen backlog of 128 (socketserver's 5 drops the SYNs of a client opening ~100 connections);
- URL_SECONDS, the life of the CDN's signed URLs, defaults to 3600 (the test's 2 s would fail a
  client that keeps one URL for a whole transfer, as hf_transfer does);
- CDN_PORT: the port the Hub's redirects name (a relay in front of the CDN); default the CDN's own.
Prints the test server's ready line (port, cdnPort, sha256 by KIND/ORG/REPO@main/PATH) and serves
until its standard input closes.
"""
import hashlib
import importlib.util
import json
import os
import sys
import threading
from http.server import ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("hub_server", os.path.join(ROOT, "Tests", "HF", "hub_server.py"))
hub = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hub)
hub.URL_SECONDS = float(os.environ.get("URL_SECONDS", "3600"))
hub.STATS["bytes"] = 0
hub.LOCK = threading.RLock()  # /_stats answers while holding it, and sending counts under it


class Span:
    """Bytes [start, end) of a file, standing in for the test server's `bytes` (len and slices)."""

    def __init__(self, path, start, end):
        self.path, self.start, self.end = path, start, end

    def __len__(self):
        return self.end - self.start

    def __getitem__(self, part):
        start, end, _ = part.indices(len(self))
        return Span(self.path, self.start + start, self.start + end)


def count(sent):
    with hub.LOCK:
        hub.STATS["bytes"] += sent


class Counting:
    def send(self, status, body=b"", headers=None, head=False):
        if not isinstance(body, Span):
            super().send(status, body, headers, head)
            return count(0 if head else len(body))
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        with open(body.path, "rb") as f:
            offset = body.start
            while offset < body.end:
                sent = os.sendfile(self.connection.fileno(), f.fileno(), offset, min(body.end - offset, 1 << 20))
                if sent == 0:
                    raise ConnectionError("peer gone")
                offset += sent
                count(sent)


class Hub(Counting, hub.Hub):
    pass


class CDN(Counting, hub.CDN):
    pass


class Server(ThreadingHTTPServer):
    request_queue_size = 128

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that went away is no error
            super().handle_error(request, client_address)


def disk_repo(name, directory):
    """`name` is ORG/REPO for a model, datasets/ORG/REPO for a dataset."""
    kind, name = name.split("/", 1) if name.count("/") == 2 else ("models", name)
    files = {}
    for folder, _, names in os.walk(directory):
        for file in names:
            path = os.path.join(folder, file)
            size = os.path.getsize(path)
            sha256, sha1 = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % size)
            with open(path, "rb") as f:
                while chunk := f.read(8 << 20):
                    sha256.update(chunk)
                    sha1.update(chunk)
            files[os.path.relpath(path, directory)] = {"data": Span(path, 0, size), "lfs": size >= 1 << 20,
                                                       "sha256": sha256.hexdigest(), "blob": sha1.hexdigest()}
    commit = hashlib.sha1(json.dumps(sorted((p, e["sha256"]) for p, e in files.items())).encode()).hexdigest()
    hub.REPOS[(kind, name)] = {"main": {"commit": commit, "files": files}}
    for entry in files.values():
        hub.BLOBS[entry["sha256"]] = entry["data"]
    return {f"{kind}/{name}@main/{path}": entry["sha256"] for path, entry in files.items()}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    digests = disk_repo(sys.argv[1], sys.argv[2])
    hub_server = Server(("127.0.0.1", 0), Hub)
    cdn = Server(("127.0.0.1", 0), CDN)
    hub.Handler.cdn_port = int(os.environ.get("CDN_PORT") or cdn.server_address[1])
    for server in (hub_server, cdn):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"port": hub_server.server_address[1], "cdnPort": cdn.server_address[1], "sha256": digests}),
          flush=True)
    sys.stdin.read()
    hub_server.shutdown()
    cdn.shutdown()


if __name__ == "__main__":
    main()
