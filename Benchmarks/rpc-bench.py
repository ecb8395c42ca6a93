#!/usr/bin/env python3
"""aria2 JSON-RPC throughput: `tellActive` with N active downloads, haul serve against aria2c.

Starts haul-test-server (one slow payload), then for each daemon (haul serve from the static
release build, aria2c --enable-rpc) adds N downloads of it with max-concurrent-downloads N, waits
until all N are active, and sends `aria2.tellActive` (all keys, then AriaNg's usual keys) back to
back over one keep-alive connection for SECONDS. Prints requests per second and the daemon's
resident memory (VmRSS now, VmHWM peak).

    N=1000 SECONDS=10 python3 Benchmarks/rpc-bench.py
Build first: swift build -c release --static-swift-stdlib --build-path .build-static
"""
import http.client, json, os, shutil, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = int(os.environ.get("N", "1000"))
SECONDS = float(os.environ.get("SECONDS", "10"))
SECRET = "benchbenchbench1"
ARIANG_KEYS = ["gid", "totalLength", "completedLength", "uploadSpeed", "downloadSpeed", "connections", "numSeeders",
               "seeder", "status", "errorCode", "verifiedLength", "verifyIntegrityPending", "files", "bittorrent", "dir"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields.get("VmRSS", "?"), fields.get("VmHWM", "?")


class RPC:
    def __init__(self, port):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.next = 0

    def call(self, method, *params):
        self.next += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": ["token:" + SECRET, *params]})
        self.connection.request("POST", "/jsonrpc", body, {"Content-Type": "application/json"})
        response = self.connection.getresponse()
        data = response.read()
        answer = json.loads(data)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"], len(data)


def measure(name, process, port, url):
    rpc = RPC(port)
    calls = [{"methodName": "aria2.addUri", "params": ["token:" + SECRET, [f"{url}?n={i}"], {"out": f"f{i}.bin"}]}
             for i in range(N)]
    for start in range(0, N, 200):
        body = json.dumps({"jsonrpc": "2.0", "id": "add", "method": "system.multicall", "params": [calls[start:start + 200]]})
        rpc.connection.request("POST", "/jsonrpc", body)
        rpc.connection.getresponse().read()
    deadline = time.time() + 300
    while True:
        stat, _ = rpc.call("aria2.getGlobalStat")
        if int(stat["numActive"]) >= N or time.time() > deadline:
            break
        time.sleep(0.5)
    results = {"active": int(stat["numActive"])}
    for label, params in (("all keys", []), ("AriaNg keys", [ARIANG_KEYS])):
        count, size, end = 0, 0, time.time() + SECONDS
        while time.time() < end:
            result, size = rpc.call("aria2.tellActive", *params)
            count += 1
        results[label] = (count / SECONDS, size, len(result))
    results["rss"] = rss(process.pid)
    print(f"{name:6} active={results['active']:5}  tellActive all keys: {results['all keys'][0]:7.1f} req/s "
          f"({results['all keys'][1] / 1024:.0f} KiB)  AriaNg keys: {results['AriaNg keys'][0]:7.1f} req/s "
          f"({results['AriaNg keys'][1] / 1024:.0f} KiB)  RSS now {results['rss'][0]}, peak {results['rss'][1]}", flush=True)


def run(name, command, work, url, env):
    """Starts one daemon (`command(port, download_dir)`), measures it once it listens, stops it."""
    port = free_port()
    os.makedirs(f"{work}/{name}-dl")
    daemon = subprocess.Popen(command(port, f"{work}/{name}-dl"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or daemon.poll() is not None:
                    sys.exit(f"{name} did not start listening on {port}")
                time.sleep(0.05)
        measure(name, daemon, port, url)
    finally:
        daemon.terminate()
        daemon.wait()


def main():
    haul = os.path.join(ROOT, ".build-static/release/haul")
    server = os.path.join(ROOT, ".build-static/release/haul-test-server")
    for path in (haul, server):
        if not os.access(path, os.X_OK):
            sys.exit(f"missing {path}: swift build -c release --static-swift-stdlib --build-path .build-static")
    work = tempfile.mkdtemp(prefix="haul-rpc-bench-")
    files = subprocess.Popen([server, "--size", "256M", "--throttle", "2K"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    url = files.stdout.readline().strip()
    print(f"N={N} downloads of {url} at 2 KiB/s each, {SECONDS:.0f} s per measurement; {os.cpu_count()} cores", flush=True)
    try:
        run("haul", lambda port, dl: [haul, "serve", "--port", str(port), "--secret", SECRET, "-d", dl, "-j", str(N)],
            work, url, dict(os.environ, HAUL_HOME=f"{work}/haul-home"))
        if shutil.which("aria2c"):
            run("aria2c", lambda port, dl: ["aria2c", "--enable-rpc", "--rpc-listen-port", str(port), "--rpc-secret", SECRET,
                                            "--no-conf", "-d", dl, "-j", str(N), "--file-allocation=none", "-q"],
                work, url, None)
    finally:
        files.stdin.close()
        files.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
