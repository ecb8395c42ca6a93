#!/usr/bin/env python3
"""batch-add-bench.py: many small files handed to the daemon in one batch, against `haul get -i`.

A private nginx on 127.0.0.1 serves FILES files of 16 KiB (random bytes). Each round, in turn
(the first rotating):
  get    `haul get -q -j JOBS -i LIST -d OUT`, a fresh HAUL_HOME: from start to exit;
  batch  `haul serve -j JOBS` (a fresh HAUL_HOME, started and ready before the clock starts),
         then ONE `POST /api/v1/downloads` with an array of FILES adds: from the POST to the
         summary counting FILES completed (polled every 100 ms), the daemon's CPU over the same span.
Every file of every run is checked byte for byte. Outputs stay until the end of the run: ext4
without a journal skips inodes freed in the last seconds, which slows a run that creates files
right after another removed them. Prints medians; the target (issue "many small things") is
batch within 10 % of get.

Usage:  python3 Benchmarks/batch-add-bench.py
Env:    FILES (10000) ROUNDS (3) JOBS (16) HAUL_BIN (.build-static/release/haul)
        PERF (a file: `perf record -g` of the daemon during each batch, the last one kept)
"""
import hashlib, http.client, json, os, resource, shutil, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAUL = os.environ.get("HAUL_BIN", os.path.join(ROOT, ".build-static", "release", "haul"))
FILES = int(os.environ.get("FILES", "10000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
JOBS = int(os.environ.get("JOBS", "16"))
SIZE = 16384
SECRET = "batch-bench-secret-0123"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check(out, digests):
    bad = [n for n, d in digests.items()
           if not os.path.exists(os.path.join(out, n))
           or hashlib.sha256(open(os.path.join(out, n), "rb").read()).hexdigest() != d]
    if bad:
        sys.exit(f"{len(bad)} files missing or wrong in {out}, e.g. {bad[:3]}")


def run_get(work, urls_file, digests):
    home, out = tempfile.mkdtemp(dir=work), tempfile.mkdtemp(dir=work)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([HAUL, "get", "-q", "-j", str(JOBS), "-i", urls_file, "-d", out],
                   env=dict(os.environ, HAUL_HOME=home), check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    check(out, digests)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_batch(work, urls, digests):
    home, out = tempfile.mkdtemp(dir=work), tempfile.mkdtemp(dir=work)
    port = free_port()
    daemon = subprocess.Popen(
        [HAUL, "serve", "--port", str(port), "--secret", SECRET, "-d", out, "-j", str(JOBS)],
        env=dict(os.environ, HAUL_HOME=home), stdout=subprocess.DEVNULL, stderr=open(os.path.join(home, "log"), "w"))
    try:
        def call(method, path, body=None):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request(method, path, body=body, headers={
                "Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            conn.close()
            return response.status, data
        for _ in range(500):
            try:
                if call("GET", "/api/v1/summary")[0] == 200:
                    break
            except OSError:
                time.sleep(0.02)
        body = json.dumps([{"url": u} for u in urls]).encode()
        # PERF=FILE: the daemon's profile over the batch, into FILE (`perf report -i FILE`).
        perf = os.environ.get("PERF") and subprocess.Popen(
            ["perf", "record", "-F", "2000", "-g", "-o", os.environ["PERF"], "-p", str(daemon.pid)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu0, start = cpu_seconds(daemon.pid), time.monotonic()
        status, data = call("POST", "/api/v1/downloads", body)
        if status != 201:
            sys.exit(f"the batch add answered {status}: {data[:300]!r}")
        while True:
            counts = json.loads(call("GET", "/api/v1/summary")[1])["counts"]
            if counts.get("completed", 0) == len(urls):
                break
            if counts.get("failed", 0):
                sys.exit(f"downloads failed: {counts}")
            time.sleep(0.1)
        wall, cpu = time.monotonic() - start, cpu_seconds(daemon.pid) - cpu0
        if perf:
            perf.send_signal(2)
            perf.wait()
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
    check(out, digests)
    return wall, cpu


def main():
    if not os.access(HAUL, os.X_OK):
        sys.exit(f"no haul binary at {HAUL} (build it, or set HAUL_BIN)")
    work = tempfile.mkdtemp(prefix="batch-add-")
    os.chmod(work, 0o755)  # nginx's workers run as another user
    www = os.path.join(work, "www")
    os.makedirs(www)
    digests = {}
    for i in range(FILES):
        name = f"f{i:06d}"
        data = os.urandom(SIZE)
        open(os.path.join(www, name), "wb").write(data)
        digests[name] = hashlib.sha256(data).hexdigest()
    port = free_port()
    conf = os.path.join(work, "nginx.conf")
    open(conf, "w").write(f"""worker_processes 1; pid {work}/nginx.pid; error_log {work}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; keepalive_requests 1000000; server {{ listen 127.0.0.1:{port}; root {www}; }} }}
""")
    subprocess.run(["nginx", "-c", conf, "-p", work], check=True)
    urls = [f"http://127.0.0.1:{port}/{n}" for n in sorted(digests)]
    urls_file = os.path.join(work, "list.txt")
    open(urls_file, "w").write("\n".join(urls) + "\n")
    results = {"get": [], "batch": []}
    try:
        for r in range(ROUNDS):
            order = ["get", "batch"] if r % 2 == 0 else ["batch", "get"]
            for kind in order:
                wall, cpu = run_get(work, urls_file, digests) if kind == "get" else run_batch(work, urls, digests)
                results[kind].append((wall, cpu))
                print(f"round {r + 1} {kind:5} {wall:7.2f} s  {cpu:6.2f} CPU-s", flush=True)
    finally:
        subprocess.run(["nginx", "-c", conf, "-p", work, "-s", "stop"], stderr=subprocess.DEVNULL)
        for _ in range(250):  # the master removes its pid file as it exits
            if not os.path.exists(os.path.join(work, "nginx.pid")):
                break
            time.sleep(0.02)
    get = statistics.median(w for w, _ in results["get"])
    batch = statistics.median(w for w, _ in results["batch"])
    print(f"{FILES} files of 16 KiB, -j {JOBS}, medians of {ROUNDS}: haul get -i {get:.2f} s "
          f"({statistics.median(c for _, c in results['get']):.2f} CPU-s); one batch to haul serve {batch:.2f} s "
          f"({statistics.median(c for _, c in results['batch']):.2f} CPU-s): {batch / get:.2f}x")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
