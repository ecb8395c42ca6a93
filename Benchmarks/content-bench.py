#!/usr/bin/env python3
"""content-bench.py: haul on names of content next to each kind's own tool, in one run.

- S3: one object from moto's S3 server (single-part, SHA-256 checksum): `haul get s3://...`
  against `aws s3 cp` (awscli from PyPI, its default 10 threads of 8 MiB ranges).
- OCI: one image of several layers from Debian's docker-registry: `haul get oci://...` against
  `skopeo copy docker://... oci:DIR` (Debian).
- HF: a model of several LFS shards and a few small files from the project's test Hub and its CDN
  (Benchmarks/hf-hub-server.py over Tests/HF/hub_server.py, files from disk, signed URLs living an
  hour): `haul get hf://ORG/REPO -d DIR` against huggingface_hub's snapshot_download(local_dir=DIR)
  with HF_HUB_ENABLE_HF_TRANSFER=1 (huggingface_hub 0.36.2 and hf_transfer 0.1.9 from PyPI; the run
  fails unless hf_transfer fetched every shard over 50 MiB, the size huggingface_hub hands it from).
  huggingface_hub fetches one file at a time with hf_transfer, in 10 MiB ranges: a smaller model of
  as many shards (RELAY_HF_MB) gives it fewer connections per file through the relay.
- hf-dataset (loopback), hf-dataset-relay (not run unless named in CASES): a dataset of
  DATASET_FILES files of DATASET_KB KiB (random bytes) under data/{train,validation,test}/, with a
  .gitattributes, a README.md and .github/workflows/ci.yml, from the same test Hub as repo type
  `datasets`: `haul get hf://datasets/ORG/REPO -d DIR` against huggingface_hub's
  snapshot_download(repo_type="dataset", local_dir=DIR) with its default 8 workers and without
  hf_transfer (huggingface_hub never hands it a file under 50 MiB). Files under 1 MiB are plain
  files the Hub serves itself (one request each, no CDN redirect), as hf-hub-server.py decides.
- hf-kills (loopback), hf-kills-relay: the HF_MB model, each tool SIGKILLed KILLS (10) times, at
  every 1/(KILLS+1) of the model's size sent by the Hub and CDN since the first start, and
  restarted in the same directory (haul with the same HAUL_HOME) until it finishes: bytes sent /
  model size, wall seconds (restarts included), and whether every file is byte-exact.
- s3-kills, oci-kills (loopback): the same for a KILL_S3_MB object from moto (haul against aws s3
  cp) and the OCI image (haul against skopeo), each tool through a pass-through relay that counts
  the bytes the server sent; a kill comes at every 1/(KILLS+1) of the size written in the tool's
  directory (allocated blocks), since neither server counts what it sends.

Each case runs on loopback and through Benchmarks/relay.py (RTT and a per-connection cap; for HF one
relay before the Hub and one before its CDN), rounds interleaved, tools in turn. Every result is
checked (the object's and each file's SHA-256; skopeo reads haul's layout back). Reported: wall
seconds, CPU seconds (user + system), peak RSS (/usr/bin/time), medians.

Usage:   python3 Benchmarks/content-bench.py
Env:     HAUL_BIN (.build-static/release/haul)  ROUNDS (3)  S3_MB (1024)  LAYERS (4)  LAYER_MB (64)
         RTT (80)  CONN_RATE (8M)  RELAY_S3_MB (256)  HF_MB (1024)  HF_SHARDS (4)  RELAY_HF_MB (HF_MB)
         KILLS (10)  KILL_S3_MB (256)  DATASET_FILES (5000)  DATASET_KB (64)
         CASES ("s3 s3-relay oci oci-relay hf hf-relay hf-kills hf-kills-relay s3-kills oci-kills";
                also known: hf-dataset hf-dataset-relay)
The virtual environment with moto, boto3 and awscli goes to Benchmarks/work/content-venv, the one
with huggingface_hub and hf_transfer to Benchmarks/work/hf-venv, the models to Benchmarks/work/hf-model-*,
the datasets to Benchmarks/work/hf-dataset-FILESxKB.
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
import urllib.request

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
HF_MB = int(os.environ.get("HF_MB", "1024"))
HF_SHARDS = int(os.environ.get("HF_SHARDS", "4"))
RELAY_HF_MB = int(os.environ.get("RELAY_HF_MB", str(HF_MB)))
KILLS = int(os.environ.get("KILLS", "10"))
KILL_S3_MB = int(os.environ.get("KILL_S3_MB", "256"))
DATASET_FILES = int(os.environ.get("DATASET_FILES", "5000"))
DATASET_KB = int(os.environ.get("DATASET_KB", "64"))
DEFAULT_CASES = "s3 s3-relay oci oci-relay hf hf-relay hf-kills hf-kills-relay s3-kills oci-kills"
KNOWN_CASES = DEFAULT_CASES.split() + ["hf-dataset", "hf-dataset-relay"]
CASES = os.environ.get("CASES", DEFAULT_CASES).split()
VENV = os.path.join(WORK, "content-venv")
HF_VENV = os.path.join(WORK, "hf-venv")
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


def relay(target_port, listen=0):
    process = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "Benchmarks", "relay.py"), "--target", f"127.0.0.1:{target_port}",
         "--listen", str(listen), "--rtt", RTT, "--conn-rate", CONN_RATE], stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True)
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


def rounds_of(case, port, tools, rounds, results, command, check, also=()):
    """`rounds` interleaved rounds of `tools` against the server on `port` (through a fresh relay
    for a `-relay` case, and one from each (listen, target) port of `also`): `command(tool,
    endpoint_port)` gives (argv, env), run in a new directory that `check(tool, directory)` then
    inspects."""
    for round_number in range(rounds):
        order = tools if round_number % 2 == 0 else list(reversed(tools))
        for tool in order:
            forwards = []
            target = port
            if case.endswith("relay"):
                forward, target = relay(port)
                forwards = [forward] + [relay(other, listen)[0] for listen, other in also]
            directory = tempfile.mkdtemp(dir=WORK)
            try:
                argv, env = command(tool, target, directory)
                result = timed(argv, env=env, cwd=directory)
                check(tool, directory)
                results.setdefault((case, tool), []).append(result)
                log(f"{case} {tool}: {result[0]:.2f} s, CPU {result[1]:.2f} s, {result[2]} KiB")
            finally:
                shutil.rmtree(directory, ignore_errors=True)
                for forward in forwards:
                    forward.terminate()
                    forward.wait()


def s3_command(tool, target, directory):
    """The object through the endpoint on `target`, into `directory`: (argv, env)."""
    endpoint = f"http://127.0.0.1:{target}"
    if tool == "haul":
        return ([HAUL, "get", "-q", "--s3-endpoint", endpoint, "s3://bench/object.bin"],
                {**KEYS, "HAUL_HOME": directory + "/home"})
    return ([os.path.join(VENV, "bin", "aws"), "s3", "cp", "--only-show-errors", "--endpoint-url", endpoint,
             "s3://bench/object.bin", "object.bin"], KEYS)


def s3_runs(python, case, rounds, results):
    megabytes = S3_MB if case == "s3" else RELAY_S3_MB
    log(f"{case}: moto with a {megabytes} MiB object")
    server, port, digest = s3_server(python, megabytes)

    def check(tool, directory):
        got = sha256(os.path.join(directory, "object.bin"))
        if got != digest:
            raise SystemExit(f"{tool}: wrong bytes ({got})")

    try:
        rounds_of(case, port, ["haul", "aws"], rounds, results, s3_command, check)
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


def oci_command(tool, target, directory):
    """The image from the registry on `target` into a layout in `directory`: (argv, env)."""
    name = f"127.0.0.1:{target}/bench/image:v1"
    if tool == "haul":
        return ([HAUL, "get", "-q", "--plain-http", "-d", "layout", "oci://" + name],
                {"HAUL_HOME": directory + "/home"})
    return (["skopeo", "copy", "--quiet", "--src-tls-verify=false", "docker://" + name, "oci:layout:v1"], {})


def oci_check(tool, directory):
    """skopeo reads the layout back, every digest checked."""
    answer = subprocess.run(["skopeo", "copy", "--quiet", f"oci:{directory}/layout:v1", f"dir:{directory}/check"],
                            capture_output=True, text=True)
    if answer.returncode != 0:
        raise SystemExit(f"{tool}: skopeo cannot read the layout: {answer.stderr}")


def oci_runs(case, rounds, results):
    log(f"{case}: docker-registry with {LAYERS} layers of {LAYER_MB} MiB")
    server, port, root = registry_with_image()

    try:
        rounds_of(case, port, ["haul", "skopeo"], rounds, results, oci_command, oci_check)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)


# --- Hugging Face -----------------------------------------------------------------------------

# snapshot_download(argv[1], local_dir=argv[2]) through hf_transfer; fails unless hf_transfer
# fetched at least argv[3] files (functools.wraps keeps the signature huggingface_hub inspects).
SNAPSHOT = """
import functools, sys
import hf_transfer
from huggingface_hub import constants, snapshot_download
if not constants.HF_HUB_ENABLE_HF_TRANSFER:
    sys.exit("HF_HUB_ENABLE_HF_TRANSFER is off")
calls = []
download = hf_transfer.download
@functools.wraps(download)
def counted(*args, **kwargs):
    calls.append(kwargs.get("url"))
    return download(*args, **kwargs)
hf_transfer.download = counted
snapshot_download(sys.argv[1], local_dir=sys.argv[2])
if len(calls) < int(sys.argv[3]):
    sys.exit(f"hf_transfer fetched {len(calls)} files, not {sys.argv[3]}")
"""


def hf_venv():
    python = os.path.join(HF_VENV, "bin", "python")
    if not os.path.exists(python):
        log("making " + HF_VENV + " (huggingface_hub, hf_transfer from PyPI)")
        subprocess.run([sys.executable, "-m", "venv", HF_VENV], check=True)
        subprocess.run([os.path.join(HF_VENV, "bin", "pip"), "install", "-q", "-r",
                        os.path.join(ROOT, "Tests", "HF", "requirements.txt"), "hf-transfer==0.1.9"], check=True)
    return python


def made_once(name, fill):
    """WORK/`name`, made once: `fill(making)` writes its files into a folder of its own, which is
    renamed into place when done (a run stopped halfway leaves no half-made source behind)."""
    directory = os.path.join(WORK, name)
    if os.path.isdir(directory):
        return directory
    log(f"making {directory}")
    making = directory + ".making"
    shutil.rmtree(making, ignore_errors=True)
    os.makedirs(making)
    fill(making)
    os.rename(making, directory)
    return directory


def hf_model(megabytes):
    """A directory of HF_SHARDS shards, `megabytes` MiB in all, and a few small files (made once)."""
    return made_once(f"hf-model-{megabytes}M-{HF_SHARDS}", lambda making: fill_model(making, megabytes))


def fill_model(making, megabytes):
    shards = [f"model-{index + 1:05}-of-{HF_SHARDS:05}.safetensors" for index in range(HF_SHARDS)]
    for index, name in enumerate(shards):
        generator, left = random.Random(index), (megabytes << 20) // HF_SHARDS
        with open(os.path.join(making, name), "wb") as f:
            while left:
                f.write(generator.randbytes(min(left, 16 << 20)))
                left -= min(left, 16 << 20)
    small = {"config.json": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32},
             "generation_config.json": {"do_sample": True, "temperature": 0.6},
             "tokenizer_config.json": {"model_max_length": 8192},
             "model.safetensors.index.json": {"weight_map": {f"layer.{i}": name for i, name in enumerate(shards)}}}
    for name, content in small.items():
        with open(os.path.join(making, name), "w") as f:
            json.dump(content, f, indent=2)


def hub(source, cdn_port=0, repo="models/bench/model"):
    """Benchmarks/hf-hub-server.py serving `source` as `repo` (KIND/ORG/REPO): (process, its ready
    line, the SHA-256 of each path). Its redirects name `cdn_port` when given (a relay's)."""
    kind, name = repo.split("/", 1)
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "Benchmarks", "hf-hub-server.py"),
                                name if kind == "models" else repo, source], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env={**os.environ, "CDN_PORT": str(cdn_port or "")})
    ready = json.loads(process.stdout.readline())
    prefix = repo + "@main/"
    return process, ready, {k[len(prefix):]: v for k, v in ready["sha256"].items() if k.startswith(prefix)}


def hf_command(python, tool, port, directory, shards):
    env = {"HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_TOKEN": ""}
    if tool == "haul":
        return ([HAUL, "get", "-q", "-d", "model", "hf://bench/model"],
                {**env, "HF_HOME": "/nonexistent", "HAUL_HOME": directory + "/home"})
    return ([python, "-c", SNAPSHOT, "bench/model", "model", str(shards)],
            {**env, "HF_HOME": directory + "/hf-home", "HF_HUB_ENABLE_HF_TRANSFER": "1",
             "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_TELEMETRY": "1"})


def wrong_files(files, directory, folder="model"):
    return [path for path, digest in files.items()
            if not os.path.exists(os.path.join(directory, folder, path))
            or sha256(os.path.join(directory, folder, path)) != digest]


def hf_runs(case, rounds, results):
    python = hf_venv()
    megabytes = HF_MB if case == "hf" else RELAY_HF_MB
    source = hf_model(megabytes)
    log(f"{case}: the test Hub with {HF_SHARDS} shards, {megabytes} MiB")
    cdn_listen = free_port() if case.endswith("relay") else 0
    server, ready, files = hub(source, cdn_listen)
    shards = sum(os.path.getsize(os.path.join(source, path)) > 50 << 20 for path in files)

    def command(tool, target, directory):
        return hf_command(python, tool, target, directory, shards)

    def check(tool, directory):
        if wrong := wrong_files(files, directory):
            raise SystemExit(f"{tool}: wrong bytes in {wrong}")

    try:
        rounds_of(case, ready["port"], ["haul", "hf_transfer"], rounds, results, command, check,
                  also=[(cdn_listen, ready["cdnPort"])])
    finally:
        server.stdin.close()
        server.wait()


# snapshot_download(argv[1], repo_type="dataset", local_dir=argv[2]) as a user calls it: default
# max_workers (8), hf_transfer off (its default; it would only take files of 50 MiB or more).
DATASET_SNAPSHOT = """
import sys
from huggingface_hub import snapshot_download
snapshot_download(sys.argv[1], repo_type="dataset", local_dir=sys.argv[2])
"""

# The Hub's own .gitattributes for a new dataset (abridged). The test Hub does not read it: it makes
# a file LFS by its size (1 MiB or more, hf-hub-server.py), so DATASET_KB under 1024 gives plain
# files, each served by the Hub itself at /datasets/ORG/REPO/resolve/COMMIT/PATH with its git blob
# id as ETag (on huggingface.co, *.bin under this .gitattributes would be LFS and redirected).
DATASET_GITATTRIBUTES = """*.7z filter=lfs diff=lfs merge=lfs -text
*.arrow filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.gz filter=lfs diff=lfs merge=lfs -text
*.parquet filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
*.tar filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
*.zst filter=lfs diff=lfs merge=lfs -text
# Audio files - uncompressed
*.wav filter=lfs diff=lfs merge=lfs -text
# Image files - compressed
*.jpg filter=lfs diff=lfs merge=lfs -text
*.png filter=lfs diff=lfs merge=lfs -text
"""


def hf_dataset(files, kilobytes):
    """A dataset repository of `files` files of `kilobytes` KiB, random bytes (made once):
    .gitattributes, README.md, .github/workflows/ci.yml, and data/SPLIT/part-NNNNN.bin, 80% of the
    files in train, 10% each in validation and test."""
    return made_once(f"hf-dataset-{files}x{kilobytes}", lambda making: fill_dataset(making, files, kilobytes))


def fill_dataset(making, files, kilobytes):
    validation = test = files // 10
    splits = {"train": files - validation - test, "validation": validation, "test": test}
    index = 0
    for split, count in splits.items():
        os.makedirs(os.path.join(making, "data", split))
        for part in range(count):
            with open(os.path.join(making, "data", split, f"part-{part:05}.bin"), "wb") as f:
                f.write(random.Random(index).randbytes(kilobytes << 10))
            index += 1
    with open(os.path.join(making, ".gitattributes"), "w") as f:
        f.write(DATASET_GITATTRIBUTES)
    configs = "".join(f"  - split: {split}\n    path: data/{split}/*.bin\n" for split, count in splits.items() if count)
    with open(os.path.join(making, "README.md"), "w") as f:
        f.write(f"---\nlicense: cc-by-4.0\npretty_name: bench data\nconfigs:\n- config_name: default\n"
                f"  data_files:\n{configs}---\n\n# bench/data\n\n{files} records of {kilobytes} KiB of "
                f"random bytes, for haul's content-bench.py.\n")
    os.makedirs(os.path.join(making, ".github", "workflows"))
    with open(os.path.join(making, ".github", "workflows", "ci.yml"), "w") as f:
        f.write("name: ci\non: [push]\njobs:\n  check:\n    runs-on: ubuntu-latest\n"
                "    steps:\n      - uses: actions/checkout@v4\n")


def hf_dataset_runs(case, rounds, results):
    """haul against snapshot_download for the dataset bench/data, each run into DIR/data (a fresh
    HAUL_HOME, a fresh HF_HOME), checked file by file: every path of the repository with its SHA-256,
    and nothing else in the folder but huggingface_hub's own .cache/ (its local_dir metadata)."""
    python = hf_venv()
    source = hf_dataset(DATASET_FILES, DATASET_KB)
    log(f"{case}: the test Hub with a dataset of {DATASET_FILES} files of {DATASET_KB} KiB")
    cdn_listen = free_port() if case.endswith("relay") else 0
    server, ready, files = hub(source, cdn_listen, "datasets/bench/data")
    if len(files) != DATASET_FILES + 3:
        raise SystemExit(f"the test Hub lists {len(files)} files, not {DATASET_FILES + 3}")

    def command(tool, target, directory):
        env = {"HF_ENDPOINT": f"http://127.0.0.1:{target}", "HF_TOKEN": ""}
        if tool == "haul":
            return ([HAUL, "get", "-q", "-d", "data", "hf://datasets/bench/data"],
                    {**env, "HF_HOME": "/nonexistent", "HAUL_HOME": directory + "/home"})
        return ([python, "-c", DATASET_SNAPSHOT, "bench/data", "data"],
                {**env, "HF_HOME": directory + "/hf-home", "HF_HUB_ENABLE_HF_TRANSFER": "0",
                 "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_TELEMETRY": "1"})

    def check(tool, directory):
        root = os.path.join(directory, "data")
        found = set()
        for folder, names, leaves in os.walk(root):
            if folder == root and tool == "snapshot_download" and ".cache" in names:
                names.remove(".cache")
            found.update(os.path.relpath(os.path.join(folder, leaf), root) for leaf in leaves)
        wrong = wrong_files(files, directory, "data")
        missing = [path for path in wrong if path not in found]
        if missing or wrong or found - set(files):
            raise SystemExit(f"{case} {tool}: {len(missing)} files missing ({missing[:3]}), "
                             f"{len(wrong) - len(missing)} with wrong bytes ({[p for p in wrong if p in found][:3]}), "
                             f"{len(found - set(files))} not in the repository ({sorted(found - set(files))[:3]})")

    try:
        rounds_of(case, ready["port"], ["haul", "snapshot_download"], rounds, results, command, check,
                  also=[(cdn_listen, ready["cdnPort"])])
    finally:
        server.stdin.close()
        server.wait()


def sent(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats") as answer:
        return json.load(answer)["bytes"]


def killed_runs(name, argv, env, directory, errors, size, progress):
    """Runs `argv` in `directory`, SIGKILLed each time `progress()` passes the next 1/(KILLS + 1)
    of `size` and started again, until a run ends: (kills, wall seconds). A failing run ends the
    benchmark with its stderr (`errors`, a file)."""
    started, killed = time.monotonic(), 0
    while True:
        process = subprocess.Popen(argv, env={**os.environ, **env}, cwd=directory,
                                   stdout=subprocess.DEVNULL, stderr=errors)
        if killed < KILLS:
            mark = size * (killed + 1) // (KILLS + 1)
            while process.poll() is None and progress() < mark:
                time.sleep(0.01)
            if process.poll() is None:
                process.kill()
                process.wait()
                killed += 1
                continue
        if process.wait() != 0:
            errors.seek(0)
            raise SystemExit(f"{name} failed ({process.returncode}): {errors.read()[-2000:]}")
        return killed, time.monotonic() - started


def hf_kills(case, kills):
    """Each tool killed at every 1/(KILLS + 1) of the model's bytes sent since its first start,
    restarted in the same directory, then left to finish (through fresh relays for hf-kills-relay):
    (case, tool, kills, seconds, sent / size, exact)."""
    python = hf_venv()
    source = hf_model(HF_MB)
    log(f"{case}: {HF_MB} MiB, {KILLS} SIGKILLs for each tool")
    cdn_listen = free_port() if case.endswith("relay") else 0
    server, ready, files = hub(source, cdn_listen)
    port = ready["port"]
    size = sum(os.path.getsize(os.path.join(source, path)) for path in files)
    try:
        for tool in ("haul", "hf_transfer"):
            forwards, target = [], port
            if cdn_listen:
                forward, target = relay(port)
                forwards = [forward, relay(ready["cdnPort"], cdn_listen)[0]]
            directory = tempfile.mkdtemp(dir=WORK)
            argv, env = hf_command(python, tool, target, directory, 0)
            errors = open(os.path.join(directory, "stderr"), "w+")
            first = sent(port)
            try:
                killed, wall = killed_runs(f"{case} {tool}", argv, env, directory, errors, size,
                                           lambda: sent(port) - first)
                ratio = (sent(port) - first) / size
                exact = not wrong_files(files, directory)
                kills.append((case, tool, killed, wall, ratio, exact))
                log(f"{case} {tool}: {killed} kills, {wall:.2f} s, {ratio:.2f} x the model sent, exact: {exact}")
            finally:
                errors.close()
                shutil.rmtree(directory, ignore_errors=True)
                for forward in forwards:
                    forward.terminate()
                    forward.wait()
    finally:
        server.stdin.close()
        server.wait()


# --- Kills of S3 and OCI downloads -------------------------------------------------------------

def written(directory):
    """Bytes allocated under `directory`: what a tool has written so far (no tool here preallocates)."""
    total = 0
    for folder, _, names in os.walk(directory):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except FileNotFoundError:
                pass  # renamed or removed while walking
    return total


def counted_kills(case, tool, port, size, command, check, kills):
    """`tool` (argv, env from `command(tool, relay_port, directory)`) through a pass-through relay
    in front of `port`, SIGKILLed at every 1/(KILLS + 1) of `size` written, restarted in the same
    directory until it finishes; the relay's count of server bytes over `size`."""
    directory = tempfile.mkdtemp(dir=WORK)
    summary = tempfile.TemporaryFile(mode="w+")
    forward = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "Benchmarks", "relay.py"), "--target", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=summary, text=True)
    target = int(forward.stdout.readline().rsplit(":", 1)[1])
    argv, env = command(tool, target, directory)
    errors = open(os.path.join(WORK, "kill-stderr"), "w+")
    try:
        killed, wall = killed_runs(f"{case} {tool}", argv, env, directory, errors, size,
                                   lambda: written(directory))
        check(tool, directory)
        forward.terminate()
        forward.wait()
        summary.seek(0)
        line = summary.read()
        sent = int(line.split(" bytes (")[-2].rsplit(", ", 1)[-1])
        kills.append((case, tool, killed, wall, sent / size, True))
        log(f"{case} {tool}: {killed} kills, {wall:.2f} s, {sent / size:.2f} x the size sent")
    finally:
        if forward.poll() is None:
            forward.terminate()
            forward.wait()
        errors.close()
        summary.close()
        shutil.rmtree(directory, ignore_errors=True)


def s3_kills(case, kills):
    python = venv()
    log(f"{case}: moto with a {KILL_S3_MB} MiB object, {KILLS} SIGKILLs for each tool")
    server, port, digest = s3_server(python, KILL_S3_MB)

    def check(tool, directory):
        if sha256(os.path.join(directory, "object.bin")) != digest:
            raise SystemExit(f"{case} {tool}: wrong bytes")

    try:
        for tool in ("haul", "aws"):
            counted_kills(case, tool, port, KILL_S3_MB << 20, s3_command, check, kills)
    finally:
        server.terminate()
        server.wait()


def oci_kills(case, kills):
    log(f"{case}: docker-registry with {LAYERS} layers of {LAYER_MB} MiB, {KILLS} SIGKILLs for each tool")
    server, port, root = registry_with_image()

    try:
        for tool in ("haul", "skopeo"):
            counted_kills(case, tool, port, LAYERS * LAYER_MB << 20, oci_command, oci_check, kills)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)


def main():
    os.makedirs(WORK, exist_ok=True)
    if not os.access(HAUL, os.X_OK):
        raise SystemExit(f"no haul at {HAUL} (HAUL_BIN)")
    if unknown := [case for case in CASES if case not in KNOWN_CASES]:
        raise SystemExit(f"unknown cases {unknown}; known: {' '.join(KNOWN_CASES)}")
    results, kills = {}, []
    for case in CASES:
        if case == "s3-kills":
            s3_kills(case, kills)
        elif case == "oci-kills":
            oci_kills(case, kills)
        elif case.startswith("s3"):
            s3_runs(venv(), case, ROUNDS, results)
        elif case.startswith("oci"):
            oci_runs(case, ROUNDS, results)
        elif case.startswith("hf-kills"):
            hf_kills(case, kills)
        elif case.startswith("hf-dataset"):
            hf_dataset_runs(case, ROUNDS, results)
        else:
            hf_runs(case, ROUNDS, results)
    if results:
        print(f"| case | tool | seconds | CPU s | peak RSS MiB |  (medians of {ROUNDS}; RTT {RTT} ms, "
              f"{CONN_RATE}/s per connection through the relay)")
        print("|---|---|---:|---:|---:|")
    for (case, tool), runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = statistics.median(r[2] for r in runs) / 1024
        print(f"| {case} | {tool} | {wall:.2f} | {cpu:.2f} | {rss:.1f} |")
    if any(case.startswith("hf-dataset") for case, _ in results):
        print(f"\nhf-dataset: {DATASET_FILES} files of {DATASET_KB} KiB and 3 small ones (.gitattributes, README.md, "
              f".github/workflows/ci.yml); snapshot_download with its default 8 workers")
    if kills:
        print(f"\n| case | tool | kills | seconds | sent / size | byte-exact |  (HF {HF_MB} MiB, S3 {KILL_S3_MB} MiB, "
              f"OCI {LAYERS * LAYER_MB} MiB; SIGKILL at every 1/{KILLS + 1} of the size, then a run to the end)")
        print("|---|---|---:|---:|---:|---|")
        for case, tool, killed, wall, ratio, exact in kills:
            print(f"| {case} | {tool} | {killed} | {wall:.2f} | {ratio:.2f} | {'yes' if exact else 'NO'} |")


if __name__ == "__main__":
    main()
