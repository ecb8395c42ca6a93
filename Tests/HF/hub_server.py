"""A Hugging Face Hub of our own for haul's tests: the endpoints a client of the Hub uses, as
huggingface_hub calls them, on 127.0.0.1 and two free ports (the Hub, and a second host acting as
its CDN). Standard library only.

The Hub (`HF_ENDPOINT`), answering as huggingface.co does:
- `GET /api/{models,datasets}/ORG/REPO/revision/REV[?blobs=true]`: the revision's commit (`sha`),
  whether it is gated (`gated`: false or "manual"; open for a gated repository too) and its files
  (`siblings`: `rfilename`, `size`, `blobId`, and `lfs` with `sha256` and `size` for LFS files);
  `X-Error-Code: RepoNotFound` (401 without a token, 404 with one) or 404 `RevisionNotFound`.
- `GET|HEAD /ORG/REPO/resolve/REV/PATH` (and `/datasets/...`): `X-Repo-Commit`, `ETag`; an LFS
  file answers 302 to the CDN with `X-Linked-Etag` (its sha256) and `X-Linked-Size`, a small
  file is served here with its git blob id as ETag. For the gated repository: 401 `GatedRepo`
  without a token, 403 `GatedRepo` with a token that has not accepted its terms (any but
  `Bearer hf_test_token`).
- The CDN records whether any request to it carried an `Authorization` field (it must not).

The CDN: `GET|HEAD /blob/SHA256?expires=T&sig=S`, byte ranges, 403 once `expires` has passed
(signed URLs live `URL_SECONDS`, 2 s by default, so a slow download outlives one).

Repositories, each with a `.gitattributes` as every repository on the Hub has:
`haul-test/model` (main and the tag v1 at another commit): `config.json` (small),
`model-00001-of-00002.safetensors` and `model-00002-of-00002.safetensors` (LFS, 6 MiB and 3 MiB),
`sub/dir/notes.txt` (small), `big.bin` (LFS, 24 MiB); `haul-test/gated` (one LFS file);
`haul-test/dots` (dot files and dot folders: `.github/workflows/x.yml`,
`.ipynb_checkpoints/a.txt`); `haul-test/odd` (besides `ok.txt`, paths no file beneath a
directory can have: a control character, a segment of 251 bytes, `.` and `..`);
`haul-test/twins` (one 2 MiB LFS blob at `a/weights.bin` and `b/weights.bin`, and `other.bin`);
`datasets/haul-test/data` (`train.csv`, small).

Prints one JSON line (the Hub's port, the CDN's port, each file's sha256 by REPO/PATH, the
commits) once ready, then serves until its standard input closes. `GET /_stats` on the Hub answers
the CDN's counts (requests and body bytes sent per blob, and whether one carried
`Authorization`) and the `/resolve/`
requests per repository.
"""
import hashlib
import hmac
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "hf_test_token"
URL_SECONDS = float(os.environ.get("URL_SECONDS", "2"))
SECRET = b"cdn-secret"


def pattern(length, seed):
    return random.Random(seed).randbytes(length)


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


GITATTRIBUTES = b"*.bin filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n"


def repo(files, lfs_names, commit_seed):
    commit = hashlib.sha1(commit_seed.encode()).hexdigest()
    entries = {}
    files = {".gitattributes": GITATTRIBUTES, **files}
    for name, data in files.items():
        entries[name] = {"data": data, "lfs": name in lfs_names, "sha256": hashlib.sha256(data).hexdigest(),
                         "blob": git_blob_id(data)}
    return {"commit": commit, "files": entries}


REPOS = {
    ("models", "haul-test/model"): {
        "main": repo({
            "config.json": b'{"model_type": "haul", "layers": 2}\n',
            "model-00001-of-00002.safetensors": pattern(6 << 20, 1),
            "model-00002-of-00002.safetensors": pattern(3 << 20, 2),
            "sub/dir/notes.txt": b"notes about the model\n",
            "big.bin": pattern(24 << 20, 3),
        }, {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "big.bin"}, "main"),
        "v1": repo({"config.json": b'{"model_type": "haul", "layers": 1}\n'}, set(), "v1"),
    },
    ("models", "haul-test/gated"): {
        "main": repo({"weights.bin": pattern(1 << 20, 4)}, {"weights.bin"}, "gated"),
    },
    ("models", "haul-test/dots"): {
        "main": repo({
            "config.json": b'{"model_type": "dots"}\n',
            ".github/workflows/x.yml": b"on: push\n",
            ".ipynb_checkpoints/a.txt": b"a checkpoint\n",
        }, set(), "dots"),
    },
    ("models", "haul-test/odd"): {
        "main": repo({
            "ok.txt": b"fine\n",
            "bad\x01name.txt": b"a control character\n",
            "x" * 251 + "/y.txt": b"a segment of 251 bytes\n",
            "sub/../escape.txt": b"a .. segment\n",
            "sub/./here.txt": b"a . segment\n",
        }, set(), "odd"),
    },
    # One LFS blob at two paths (a checkpoint copied into two folders), as repositories often have.
    ("models", "haul-test/twins"): {
        "main": repo({
            "a/weights.bin": pattern(2 << 20, 5),
            "b/weights.bin": pattern(2 << 20, 5),
            "other.bin": pattern(3 << 20, 6),
        }, {"a/weights.bin", "b/weights.bin", "other.bin"}, "twins"),
    },
    ("datasets", "haul-test/data"): {
        "main": repo({"train.csv": b"a,b\n1,2\n"}, set(), "data"),
    },
}
GATED = {("models", "haul-test/gated")}
BLOBS = {}
for revisions in REPOS.values():
    for revision in revisions.values():
        for entry in revision["files"].values():
            BLOBS[entry["sha256"]] = entry["data"]
STATS = {"cdn": {}, "cdnBytes": {}, "cdnAuthorization": 0, "api": 0, "resolve": {}}
LOCK = threading.Lock()


def sign(sha, expires):
    return hmac.new(SECRET, f"{sha}:{expires}".encode(), hashlib.sha256).hexdigest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cdn_port = 0

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", headers=None, head=False):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            # Written in pieces so the bytes a client took before it closed are counted.
            view = memoryview(body)
            for start in range(0, len(view), 256 << 10):
                self.wfile.write(view[start:start + (256 << 10)])
                self.sent(len(view[start:start + (256 << 10)]))

    def sent(self, count):
        """Counts body bytes written (the CDN's, by blob)."""

    def error(self, status, code, message, head=False):
        self.send(status, json.dumps({"error": message}).encode(),
                  {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}, head)


class Hub(Handler):
    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    def lookup(self, kind, name, revision, head, files=False):
        """The revision asked, else None once the Hub's refusal is sent. The revision API is open
        for a gated repository; its files (`files`) are not without a token that accepted."""
        revisions = REPOS.get((kind, name))
        token = self.headers.get("Authorization")
        if revisions is None:
            # The Hub says 401 without a token (a private repository looks the same), 404 with one.
            self.error(401 if token is None else 404, "RepoNotFound",
                       f"Repository Not Found for url: {self.path}.", head)
            return None
        if files and (kind, name) in GATED:
            if token is None:
                self.error(401, "GatedRepo", f"Access to model {name} is restricted. You must have access to it "
                           "and be authenticated to access it. Please log in.", head)
                return None
            if token != f"Bearer {TOKEN}":
                self.error(403, "GatedRepo", f"Access to model {name} is restricted and you are not in the "
                           f"authorized list. Visit https://huggingface.co/{name} to ask for access.", head)
                return None
        found = revisions.get(revision) or next(
            (r for r in revisions.values() if r["commit"] == revision), None)
        if found is None:
            self.error(404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
        return found

    def route(self, head):
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
        if parts == ["_stats"]:
            with LOCK:
                return self.send(200, json.dumps(STATS).encode(), {"Content-Type": "application/json"}, head)
        if len(parts) >= 6 and parts[0] == "api" and parts[4] == "revision":
            kind, name, revision = parts[1], parts[2] + "/" + parts[3], "/".join(parts[5:])
            with LOCK:
                STATS["api"] += 1
            found = self.lookup(kind, name, revision, head)
            if found is None:
                return
            siblings = []
            for path, entry in sorted(found["files"].items()):
                sibling = {"rfilename": path, "size": len(entry["data"]), "blobId": entry["blob"]}
                if entry["lfs"]:
                    sibling["lfs"] = {"sha256": entry["sha256"], "size": len(entry["data"]), "pointerSize": 134}
                siblings.append(sibling)
            gated = "manual" if (kind, name) in GATED else False
            body = json.dumps({"id": name, "sha": found["commit"], "gated": gated, "siblings": siblings}).encode()
            return self.send(200, body, {"Content-Type": "application/json"}, head)
        kind = "models"
        if parts and parts[0] in ("datasets", "spaces"):
            kind, parts = parts[0], parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            name, revision, path = parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:])
            with LOCK:
                STATS["resolve"][name] = STATS["resolve"].get(name, 0) + 1
            found = self.lookup(kind, name, revision, head, files=True)
            if found is None:
                return
            entry = found["files"].get(path)
            if entry is None:
                return self.error(404, "EntryNotFound", f"{path} does not exist", head)
            headers = {"X-Repo-Commit": found["commit"]}
            if entry["lfs"]:
                expires = int(time.time() + URL_SECONDS)
                location = (f"http://127.0.0.1:{Handler.cdn_port}/blob/{entry['sha256']}"
                            f"?expires={expires}&sig={sign(entry['sha256'], expires)}")
                headers.update({"Location": location, "X-Linked-Etag": f'"{entry["sha256"]}"',
                                "X-Linked-Size": str(len(entry["data"])), "ETag": f'"{entry["blob"]}"'})
                return self.send(302, b"", headers, head)
            headers.update({"ETag": f'"{entry["blob"]}"', "Content-Type": "application/octet-stream"})
            return self.serve(entry["data"], headers, head)
        self.error(404, "NotFound", "no such endpoint", head)

    def serve(self, data, headers, head):
        spec = self.headers.get("Range")
        if spec and spec.startswith("bytes="):
            first, _, last = spec[6:].partition("-")
            start = int(first) if first else max(0, len(data) - int(last))
            end = min(int(last), len(data) - 1) if first and last else len(data) - 1
            if start >= len(data):
                return self.send(416, b"", {"Content-Range": f"bytes */{len(data)}"}, head)
            headers = {**headers, "Content-Range": f"bytes {start}-{end}/{len(data)}", "Accept-Ranges": "bytes"}
            return self.send(206, data[start:end + 1], headers, head)
        return self.send(200, data, {**headers, "Accept-Ranges": "bytes"}, head)


class CDN(Hub):
    def sent(self, count):
        sha = urllib.parse.urlsplit(self.path).path.rsplit("/", 1)[-1]
        with LOCK:
            STATS["cdnBytes"][sha] = STATS["cdnBytes"].get(sha, 0) + count

    def route(self, head):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        sha = url.path.rsplit("/", 1)[-1]
        with LOCK:
            STATS["cdn"][sha] = STATS["cdn"].get(sha, 0) + 1
            if self.headers.get("Authorization") is not None:
                STATS["cdnAuthorization"] += 1
        try:
            expires = int(query["expires"][0])
            valid = hmac.compare_digest(query["sig"][0], sign(sha, expires))
        except (KeyError, ValueError, IndexError):
            valid = False
        if not valid or sha not in BLOBS:
            return self.send(403, b"<Error><Code>AccessDenied</Code></Error>", {"Content-Type": "application/xml"}, head)
        if time.time() > expires:
            return self.send(403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
                             {"Content-Type": "application/xml"}, head)
        self.serve(BLOBS[sha], {"ETag": f'"{sha}"', "Content-Type": "application/octet-stream"}, head)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    hub = ThreadingHTTPServer(("127.0.0.1", free_port()), Hub)
    cdn = ThreadingHTTPServer(("127.0.0.1", free_port()), CDN)
    Handler.cdn_port = cdn.server_address[1]
    for server in (hub, cdn):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    files = {}
    commits = {}
    for (kind, name), revisions in REPOS.items():
        for revision, found in revisions.items():
            commits[f"{kind}/{name}@{revision}"] = found["commit"]
            for path, entry in found["files"].items():
                files[f"{kind}/{name}@{revision}/{path}"] = entry["sha256"]
    print(json.dumps({"port": hub.server_address[1], "cdnPort": cdn.server_address[1], "sha256": files,
                      "commits": commits}), flush=True)
    sys.stdin.read()
    hub.shutdown()
    cdn.shutdown()


if __name__ == "__main__":
    main()
