#!/usr/bin/env python3
"""content-bench.py: haul on names of content next to each kind's own tool, in one run.

- S3: one object from moto's S3 server (single-part, SHA-256 checksum): `haul get s3://...`
  against `aws s3 cp` (awscli from PyPI, its default 10 threads of 8 MiB ranges).
- OCI: one image of several layers from Debian's docker-registry: `haul get oci://...` against
  `skopeo copy docker://... oci:DIR` (Debian).

Each case runs on loopback and through Benchmarks/relay.py (RTT and a per-connection cap), rounds
interleaved, tools in turn. Every result is checked (the object's SHA-256; skopeo reads haul's
layout back). Reported: wall seconds, CPU seconds (user + system), peak RSS (/usr/bin/time), medians.

Usage:   python3 Benchmarks/content-bench.py
Env:     HAUL_BIN (.build-static/release/haul)  ROUNDS (3)  S3_MB (1024)  LAYERS (4)  LAYER_MB (64)
         RTT (80)  CONN_RATE (8M)  RELAY_S3_MB (256)  CASES ("s3 s3-relay oci oci-relay")
The virtual environment with moto, boto3 and awscli goes to Benchmarks/work/content-venv.
"""
import hashlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "Benchmarks", "work")
HAUL = os.environ.get("HAUL_BIN", os.path.join(ROOT, ".build-static", "release", "haul"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
S3_MB = int(os.environ.get("S3_MB", "1024"))
RELAY_S3_MB = int(os.environ.get("RELAY_S3_MB", "256"))
LAYERS = int(os.environ.get("LAYERS", "4"))
LAYER_MB = int(os.environ.get("LAYER_MB", "64"))
RTT = os.environ.get("RTT", "80")
CONN_RATE = os.environ.get("CONN_RATE", "8M")
CASES = os.environ.get("CASES", "s3 s3-relay oci oci-relay").split()
VENV = os.path.join(WORK, "content-venv")
KEYS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1"}


def log(text):
    print("==> " + text, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def venv():
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(os.path.join(VENV, "bin", "aws")):
        log("making " + VENV + " (moto, boto3, flask, awscli from PyPI)")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q", "-r",
                        os.path.join(ROOT, "Tests", "S3", "requirements.txt"), "awscli"], check=True)
    return python


def wait_port(port):
    for _ in range(400):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def relay(target_port):
    process = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "Benchmarks", "relay.py"), "--target", f"127.0.0.1:{target_port}",
         "--rtt", RTT, "--conn-rate", CONN_RATE], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    return process, int(line.rsplit(":", 1)[1])


def timed(command, env=None, cwd=None):
    """Runs `command` under /usr/bin/time: (seconds, cpu seconds, peak RSS KiB)."""
    out = tempfile.NamedTemporaryFile(delete=False)
    out.close()
    full = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", out.name] + command
    answer = subprocess.run(full, env={**os.environ, **(env or {})}, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    if answer.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({answer.returncode}): {answer.stderr[-2000:]}")
    wall, user, system, rss = open(out.name).read().split()[-4:]
    os.unlink(out.name)
    return float(wall), float(user) + float(system), int(rss)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# --- S3 ---------------------------------------------------------------------------------------

def s3_server(python, megabytes):
    port = free_port()
    server = subprocess.Popen([os.path.join(VENV, "bin", "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    setup = f"""
import boto3, hashlib, os
s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:{port}", region_name="us-east-1",
                  aws_access_key_id="bench", aws_secret_access_key="bench")
s3.create_bucket(Bucket="bench")
body = os.urandom({megabytes} << 20)
s3.put_object(Bucket="bench", Key="object.bin", Body=body, ChecksumAlgorithm="SHA256")
print(hashlib.sha256(body).hexdigest())
"""
    digest = subprocess.run([python, "-c", setup], check=True, capture_output=True, text=True).stdout.strip()
    return server, port, digest


def rounds_of(case, port, tools, rounds, results, command, check):
    """`rounds` interleaved rounds of `tools` against the server on `port` (through a fresh relay
    for a `-relay` case): `command(tool, endpoint_port)` gives (argv, env), run in a new directory
    that `check(tool, directory)` then inspects."""
    for round_number in range(rounds):
        order = tools if round_number % 2 == 0 else list(reversed(tools))
        for tool in order:
            forward = None
            target = port
            if case.endswith("relay"):
                forward, target = relay(port)
            directory = tempfile.mkdtemp(dir=WORK)
            try:
                argv, env = command(tool, target, directory)
                result = timed(argv, env=env, cwd=directory)
                check(tool, directory)
                results.setdefault((case, tool), []).append(result)
                log(f"{case} {tool}: {result[0]:.2f} s, CPU {result[1]:.2f} s, {result[2]} KiB")
            finally:
                shutil.rmtree(directory, ignore_errors=True)
                if forward:
                    forward.terminate()
                    forward.wait()


def s3_runs(python, case, rounds, results):
    megabytes = S3_MB if case == "s3" else RELAY_S3_MB
    log(f"{case}: moto with a {megabytes} MiB object")
    server, port, digest = s3_server(python, megabytes)

    def command(tool, target, directory):
        endpoint = f"http://127.0.0.1:{target}"
        if tool == "haul":
            return ([HAUL, "get", "-q", "--s3-endpoint", endpoint, "s3://bench/object.bin"],
                    {**KEYS, "HAUL_HOME": directory + "/home"})
        return ([os.path.join(VENV, "bin", "aws"), "s3", "cp", "--only-show-errors", "--endpoint-url", endpoint,
                 "s3://bench/object.bin", "object.bin"], KEYS)

    def check(tool, directory):
        got = sha256(os.path.join(directory, "object.bin"))
        if got != digest:
            raise SystemExit(f"{tool}: wrong bytes ({got})")

    try:
        rounds_of(case, port, ["haul", "aws"], rounds, results, command, check)
    finally:
        server.terminate()
        server.wait()


# --- OCI --------------------------------------------------------------------------------------

def registry_with_image():
    root = tempfile.mkdtemp(dir=WORK, prefix="registry-")
    port = free_port()
    config = os.path.join(root, "config.yml")
    with open(config, "w") as f:
        f.write(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {root}/data\n"
                f"http:\n  addr: 127.0.0.1:{port}\n")
    server = subprocess.Popen(["docker-registry", "serve", config], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    wait_port(port)
    layout = os.path.join(root, "source")
    os.makedirs(os.path.join(layout, "blobs", "sha256"))
    generator = random.Random(7)
    layers = []

    def blob(data):
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
            f.write(data)
        return {"digest": "sha256:" + digest, "size": len(data)}

    for _ in range(LAYERS):
        layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                       **blob(generator.randbytes(LAYER_MB << 20))})
    config_blob = blob(json.dumps({"architecture": "amd64", "os": "linux",
                                   "rootfs": {"type": "layers", "diff_ids": []}}).encode())
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_blob},
                           "layers": layers}).encode()
    described = blob(manifest)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", **described,
             "annotations": {"org.opencontainers.image.ref.name": "v1"}}]}, f)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", f"oci:{layout}:v1",
                    f"docker://127.0.0.1:{port}/bench/image:v1"], check=True)
    return server, port, root


def oci_runs(case, rounds, results):
    log(f"{case}: docker-registry with {LAYERS} layers of {LAYER_MB} MiB")
    server, port, root = registry_with_image()

    def command(tool, target, directory):
        name = f"127.0.0.1:{target}/bench/image:v1"
        if tool == "haul":
            return ([HAUL, "get", "-q", "--plain-http", "-d", "layout", "oci://" + name],
                    {"HAUL_HOME": directory + "/home"})
        return (["skopeo", "copy", "--quiet", "--src-tls-verify=false", "docker://" + name, "oci:layout:v1"], {})

    def check(tool, directory):
        answer = subprocess.run(["skopeo", "copy", "--quiet", f"oci:{directory}/layout:v1", f"dir:{directory}/check"],
                                capture_output=True, text=True)
        if answer.returncode != 0:
            raise SystemExit(f"{tool}: skopeo cannot read the layout: {answer.stderr}")

    try:
        rounds_of(case, port, ["haul", "skopeo"], rounds, results, command, check)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)


def main():
    os.makedirs(WORK, exist_ok=True)
    if not os.access(HAUL, os.X_OK):
        raise SystemExit(f"no haul at {HAUL} (HAUL_BIN)")
    python = venv()
    results = {}
    for case in CASES:
        if case.startswith("s3"):
            s3_runs(python, case, ROUNDS, results)
        else:
            oci_runs(case, ROUNDS, results)
    print(f"| case | tool | seconds | CPU s | peak RSS MiB |  (medians of {ROUNDS}; RTT {RTT} ms, "
          f"{CONN_RATE}/s per connection through the relay)")
    print("|---|---|---:|---:|---:|")
    for (case, tool), runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = statistics.median(r[2] for r in runs) / 1024
        print(f"| {case} | {tool} | {wall:.2f} | {cpu:.2f} | {rss:.1f} |")


if __name__ == "__main__":
    main()
