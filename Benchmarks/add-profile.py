#!/usr/bin/env python3
"""add-profile.py: where a daemon's CPU goes when it is given downloads, for profiling (the figures
to report come from control-bench.py, side by side with aria2c and aria2-next).

Against one daemon (DAEMON=haul, the static release build or HAUL_BIN; DAEMON=aria2c), -j 1, with
every download held silent by a local server that accepts and never answers: MULTIS
system.multicall requests of BATCH addUri from one client, then ONE single adds (p50, p99), then
CLIENTS client processes adding one per request, then tellWaiting(0,1000) TELLS times. Prints the
rates and the daemon's CPU per add (/proc/PID/stat). PERF=multi|one|clients|tell records the
daemon with `perf record -g` during that part into Benchmarks/work/add-profile.perf.data:

    PERF=multi MULTIS=200 python3 Benchmarks/add-profile.py
    perf report -i Benchmarks/work/add-profile.perf.data --children --sort sym | swift demangle --simplified
"""
import http.client, json, os, shutil, socket, subprocess, sys, tempfile, threading, time
BIN = os.environ.get("HAUL_BIN", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".build-static", "release", "haul"))
DAEMON = os.environ.get("DAEMON", "haul")
MULTIS = int(os.environ.get("MULTIS", "50")); BATCH = int(os.environ.get("BATCH", "100"))
ONE = int(os.environ.get("ONE", "500")); CLIENTS = int(os.environ.get("CLIENTS", "8"))
SECRET = "benchbenchbench1"
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]
hold_port = free_port()
held = []
def hold():
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", hold_port)); srv.listen(128)
    while True:
        c, _ = srv.accept(); held.append(c)
threading.Thread(target=hold, daemon=True).start()
home = tempfile.mkdtemp(prefix="addprof-"); d = os.path.join(home, "dl"); os.makedirs(d)
port = free_port()
if DAEMON == "haul":
    cmd = [BIN, "serve", "--port", str(port), "--secret", SECRET, "-d", d, "-j", "1", "-x", "1"]
else:
    cmd = ["aria2c", "--enable-rpc", "--rpc-listen-port", str(port), "--rpc-secret", SECRET, "--no-conf", "-d", d, "-j", "1",
           "--file-allocation=none", "--rpc-max-request-size=64M", "-q", "--max-connection-per-server=1", "--split=1"]
env = dict(os.environ, HAUL_HOME=home)
p = subprocess.Popen(cmd, env=env, stdout=open(home + "/log", "w"), stderr=subprocess.STDOUT, cwd=home)
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close(); break
    except OSError: time.sleep(0.05)
def conn(): return http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def post(c, body):
    c.request("POST", "/jsonrpc", body, {"Content-Type": "application/json"}); r = c.getresponse(); data = r.read()
    assert r.status == 200, data[:200]; a = json.loads(data); assert "error" not in a, a; return a
url = f"http://127.0.0.1:{hold_port}/f"
def add_body(k): return json.dumps({"jsonrpc": "2.0", "id": k, "method": "aria2.addUri", "params": ["token:" + SECRET, [f"{url}?n={k}"], {"out": f"f{k}.bin"}]}).encode()
c = conn()
post(c, add_body("warm"))
perf = None
def start_perf():
    global perf
    os.makedirs(os.path.join(os.path.dirname(os.path.abspath(__file__)), "work"), exist_ok=True)
    perf = subprocess.Popen(["perf", "record"] + os.environ.get("PERF_EVENTS", "-F 2000").split() + ["-g", "-o", os.path.join(os.path.dirname(os.path.abspath(__file__)), "work", "add-profile.perf.data"), "-p", str(p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
if os.environ.get("PERF") == "multi": start_perf()
bodies = []
for m in range(MULTIS):
    calls = [{"methodName": "aria2.addUri", "params": ["token:" + SECRET, [f"{url}?n=m{m}-{k}"], {"out": f"m{m}-{k}.bin"}]} for k in range(BATCH)]
    bodies.append(json.dumps({"jsonrpc": "2.0", "id": m, "method": "system.multicall", "params": [calls]}).encode())
cpu0 = sum(os.times()[:2])
def pcpu():
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split(); return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
c0 = pcpu(); t = time.monotonic()
for b in bodies: post(c, b)
el = time.monotonic() - t; dc = pcpu() - c0
print(f"{DAEMON}: multicall {MULTIS}x{BATCH}: {MULTIS*BATCH/el:,.0f} adds/s, daemon CPU {dc/(MULTIS*BATCH)*1e6:.1f} us/add")
if perf: perf.send_signal(2); perf.wait()
if os.environ.get("PERF") == "one": start_perf()
lat = []
c0 = pcpu(); t = time.monotonic()
for k in range(ONE):
    s = time.monotonic(); post(c, add_body(f"o{k}")); lat.append(time.monotonic() - s)
el = time.monotonic() - t; dc = pcpu() - c0
if perf and os.environ.get("PERF") == "one": perf.send_signal(2); perf.wait()
lat.sort()
print(f"{DAEMON}: one per request x{ONE}: {ONE/el:,.0f}/s, p50 {lat[len(lat)//2]*1e3:.2f} ms p99 {lat[int(len(lat)*0.99)]*1e3:.2f} ms, CPU {dc/ONE*1e6:.0f} us/add")
def client(i, n, out):
    cc = conn()
    for k in range(n): post(cc, add_body(f"c{i}-{k}"))
    out.append(n)
import multiprocessing as mp
def proc_client(i, n, start_evt, done_q):
    cc = conn(); start_evt.wait()
    for k in range(n): post(cc, add_body(f"c{i}-{k}"))
    done_q.put(n)
n_each = ONE // CLIENTS * 2
ev = mp.Event(); q = mp.Queue()
ps = [mp.Process(target=proc_client, args=(i, n_each, ev, q)) for i in range(CLIENTS)]
for pr in ps: pr.start()
time.sleep(0.5)
if os.environ.get("PERF") == "clients": start_perf()
c0 = pcpu(); t = time.monotonic(); ev.set()
total = sum(q.get() for _ in ps)
el = time.monotonic() - t; dc = pcpu() - c0
for pr in ps: pr.join()
if perf and os.environ.get("PERF") == "clients": perf.send_signal(2); perf.wait()
print(f"{DAEMON}: one per request, {CLIENTS} client processes: {total/el:,.0f}/s, CPU {dc/total*1e6:.0f} us/add")
b = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "aria2.tellWaiting", "params": ["token:" + SECRET, 0, 1000]}).encode()
if os.environ.get("PERF") == "tell": start_perf()
lat = []
for k in range(int(os.environ.get("TELLS", "50"))):
    s = time.monotonic(); post(c, b); lat.append(time.monotonic() - s)
lat.sort()
if perf and os.environ.get("PERF") == "tell": perf.send_signal(2); perf.wait()
print(f"{DAEMON}: tellWaiting(0,1000) p50 {lat[len(lat)//2]*1e3:.1f} ms p99 {lat[int(len(lat)*0.99)]*1e3:.1f} ms")
p.terminate(); p.wait(); shutil.rmtree(home, ignore_errors=True)
