"""A real OCI registry for haul's tests: Debian's docker-registry (the Distribution registry),
started on 127.0.0.1 and a free port with its storage in a temporary directory, and images pushed
into it through the registry's own API (blob uploads, manifest PUTs):

- `haul/app:v1`: an OCI image index for linux/amd64 and linux/arm64/v8, each image a config and two
  gzipped tar layers (one of 24 MiB, one small, shared by both);
- `haul/small:latest`: one image manifest, no index.

A second registry serves the same storage behind a password (htpasswd, user `haul`, password
`s3cret`), for the credentials tests.

Prints one JSON line (the two ports, the manifests' digests) once ready, then serves until its standard
input closes. Standard library only (the registry is the Debian package; no pip).
"""
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def layer(files):
    """A gzipped tar of `files` (name to bytes), made the same way every time."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=1, mtime=0), "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()


def main():
    root = tempfile.mkdtemp(prefix="haul-registry-")
    port = free_port()
    config = os.path.join(root, "config.yml")
    with open(config, "w") as f:
        f.write(f"""version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: {root}/data
http:
  addr: 127.0.0.1:{port}
""")
    registry = subprocess.Popen(["docker-registry", "serve", config], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(base + "/v2/").read()
            break
        except Exception:
            time.sleep(0.05)

    def request(method, path, data=None, headers=None):
        req = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
        with urllib.request.urlopen(req) as answer:
            return answer.status, dict(answer.headers), answer.read()

    def push_blob(repository, data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        _, headers, _ = request("POST", f"/v2/{repository}/blobs/uploads/")
        location = headers["Location"]
        if location.startswith(base):
            location = location[len(base):]
        separator = "&" if "?" in location else "?"
        request("PUT", f"{location}{separator}digest={digest}", data,
                {"Content-Type": "application/octet-stream", "Content-Length": str(len(data))})
        return {"digest": digest, "size": len(data)}

    def push_manifest(repository, reference, document, media_type):
        data = json.dumps(document, separators=(",", ":")).encode()
        request("PUT", f"/v2/{repository}/manifests/{reference}", data, {"Content-Type": media_type})
        return {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}

    def image(repository, arch, big):
        generator = random.Random(f"{repository}-{arch}")
        shared_tar, shared_id = layer({"etc/haul-shared.txt": b"shared by every platform\n"})
        own_tar, own_id = layer({f"opt/{arch}.bin": generator.randbytes(big)})
        shared = push_blob(repository, shared_tar)
        own = push_blob(repository, own_tar)
        config_doc = json.dumps({"architecture": arch, "os": "linux",
                                 "rootfs": {"type": "layers", "diff_ids": [shared_id, own_id]},
                                 "config": {}}).encode()
        config_blob = push_blob(repository, config_doc)
        manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                    "config": {"mediaType": OCI_CONFIG, **config_blob},
                    "layers": [{"mediaType": OCI_LAYER, **shared}, {"mediaType": OCI_LAYER, **own}]}
        return push_manifest(repository, "sha256:" + hashlib.sha256(
            json.dumps(manifest, separators=(",", ":")).encode()).hexdigest(), manifest, OCI_MANIFEST), own

    digests = {}
    amd64, amd64_layer = image("haul/app", "amd64", 24 << 20)
    arm64, arm64_layer = image("haul/app", "arm64", 24 << 20)
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
        {**amd64, "platform": {"os": "linux", "architecture": "amd64"}},
        {**arm64, "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
    ]}
    digests["haul/app:v1"] = push_manifest("haul/app", "v1", index, OCI_INDEX)["digest"]
    digests["haul/app:v1@linux/amd64"] = amd64["digest"]
    digests["haul/app:v1@linux/arm64"] = arm64["digest"]
    digests["haul/app:v1@linux/arm64 layer"] = arm64_layer["digest"]
    small, _ = image("haul/small", "amd64", 1 << 20)
    # Tag the single manifest too (pushed by digest above).
    _, _, body = request("GET", f"/v2/haul/small/manifests/{small['digest']}", headers={"Accept": OCI_MANIFEST})
    request("PUT", "/v2/haul/small/manifests/latest", body, {"Content-Type": OCI_MANIFEST})
    digests["haul/small:latest"] = small["digest"]
    # The same storage behind htpasswd (bcrypt, through the C library's crypt).
    import crypt
    auth_port = free_port()
    with open(os.path.join(root, "htpasswd"), "w") as f:
        f.write("haul:" + crypt.crypt("s3cret", "$2b$05$" + "haulhaulhaulhaulhaulhu") + "\n")
    auth_config = os.path.join(root, "auth.yml")
    with open(auth_config, "w") as f:
        f.write(f"""version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: {root}/data
auth:
  htpasswd:
    realm: haul-tests
    path: {root}/htpasswd
http:
  addr: 127.0.0.1:{auth_port}
""")
    guarded = subprocess.Popen(["docker-registry", "serve", auth_config], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{auth_port}/v2/").read()
        except urllib.error.HTTPError:
            break
        except Exception:
            time.sleep(0.05)
    print(json.dumps({"port": port, "authPort": auth_port, "digests": digests}), flush=True)
    sys.stdin.read()
    for process in (registry, guarded):
        process.terminate()
        process.wait()
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
