#!/usr/bin/env python3
"""queue-load.py: how `haul serve` copes with 10,000 downloads.

Adds N downloads (default 10,000) through the HTTP API in batches, then lets them all run,
and reports: the time per batch add, how long `haul ls --json` and `GET /api/v1/summary` take
with the whole queue in place and while downloads run, and the daemon's RSS at each stage.

Phase 1 ("queued"): the file server holds every request for a minute, so three downloads
hang in "running" and the rest stay queued: this isolates the cost of a big queue.
Phase 2 ("running"): the server turns fast and every download completes (16 KiB each).

Usage:  python3 Benchmarks/queue-load.py [--count 10000] [--batch 1000] [--haul PATH]
The haul binary defaults to a release build (built if missing). Results: stdout, and
Benchmarks/results/queue-load.json.
"""
import argparse, http.server, json, os, shutil, socketserver, statistics, subprocess, sys, tempfile, threading, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BODY = bytes(range(256)) * 64  # 16 KiB


class Files(http.server.BaseHTTPRequestHandler):
    slow = threading.Event()  # set: hold requests
    served = 0
    lock = threading.Lock()

    def do_GET(self):
        if Files.slow.is_set():
            Files.slow_wait()
        with Files.lock:
            Files.served += 1
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.send_header("ETag", '"load"')
        self.end_headers()
        self.wfile.write(BODY)

    @staticmethod
    def slow_wait():
        for _ in range(600):
            if not Files.slow.is_set():
                return
            time.sleep(0.1)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def rss_kib(pid):
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    return values


def timed(fn, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--haul", default=os.environ.get("HAUL_BIN"))
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat add-and-run with new URLs in the same daemon, to tell growth from retention")
    args = parser.parse_args()
    if args.count < 1 or args.batch < 1 or args.rounds < 1:
        sys.exit("--count, --batch and --rounds must be positive")

    haul = args.haul
    if not haul:
        subprocess.run(["swift", "build", "-c", "release", "--product", "haul"], cwd=ROOT, check=True)
        haul = os.path.join(ROOT, ".build", "release", "haul")

    work = tempfile.mkdtemp(prefix="haul-load-")
    home, downloads = os.path.join(work, "home"), os.path.join(work, "downloads")
    os.makedirs(downloads)
    env = dict(os.environ, HAUL_HOME=home)

    Files.slow.set()
    files = Server(("127.0.0.1", 0), Files)
    threading.Thread(target=files.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{files.server_address[1]}"

    daemon = subprocess.Popen([haul, "serve", "--port", "0", "-d", downloads], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    serve_file = os.path.join(home, "serve.json")
    for _ in range(400):
        if os.path.exists(serve_file):
            break
        time.sleep(0.05)
    serve = json.load(open(serve_file))
    headers = {"Authorization": f"Bearer {serve['secret']}", "Content-Type": "application/json"}

    def api(method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(serve["url"] + "/api/v1" + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def ls():
        subprocess.run([haul, "ls", "--json"], env=env, stdout=subprocess.DEVNULL, check=True)

    report = {"count": args.count, "batch": args.batch}
    report["rss_idle_kib"] = rss_kib(daemon.pid)["VmRSS"]
    ls_empty = timed(ls)

    report["rounds"] = []
    for round_number in range(args.rounds):
        Files.slow.set()
        offset = round_number * args.count
        add_times = []
        for start in range(0, args.count, args.batch):
            batch = [{"url": f"{base}/f/{offset + i}.bin"} for i in range(start, min(args.count, start + args.batch))]
            began = time.perf_counter()
            added = api("POST", "/downloads", batch)
            add_times.append(time.perf_counter() - began)
            assert len(added) == len(batch)
        report["add_batch_median_s"] = statistics.median(add_times)
        report["add_batch_max_s"] = max(add_times)
        report["add_total_s"] = sum(add_times)

        summary = api("GET", "/summary")
        assert summary["counts"]["queued"] + summary["counts"]["running"] == args.count, summary
        report["rss_queued_kib"] = rss_kib(daemon.pid)["VmRSS"]
        report["ls_empty_median_s"], _ = ls_empty
        report["ls_queued_median_s"], report["ls_queued_max_s"] = timed(ls)
        report["summary_queued_median_s"], _ = timed(lambda: api("GET", "/summary"))

        # Phase 2: let everything run to completion; keep asking while it does.
        began = time.perf_counter()
        Files.slow.clear()
        ls_running = []
        while True:
            t0 = time.perf_counter()
            ls()
            ls_running.append(time.perf_counter() - t0)
            summary = api("GET", "/summary")
            if summary["counts"]["completed"] == args.count * (round_number + 1):
                break
            if summary["counts"]["failed"]:
                print("failures:", summary, file=sys.stderr)
                break
            time.sleep(0.5)
        report["run_all_s"] = time.perf_counter() - began
        report["ls_running_median_s"] = statistics.median(ls_running)
        report["ls_running_max_s"] = max(ls_running)
        memory = rss_kib(daemon.pid)
        report["rss_done_kib"], report["rss_peak_kib"] = memory["VmRSS"], memory["VmHWM"]
        report["completed"] = summary["counts"]["completed"]
        report["files_on_disk"] = len(os.listdir(downloads))
        report["rounds"].append({"rss_queued_kib": report["rss_queued_kib"], "rss_done_kib": report["rss_done_kib"],
                                 "rss_peak_kib": report["rss_peak_kib"], "ls_queued_median_s": report["ls_queued_median_s"]})
        print(f"round {round_number + 1}: {args.count * (round_number + 1)} downloads in the store; "
              f"ls --json {report['ls_queued_median_s'] * 1000:.0f} ms with {args.count} queued, "
              f"{report['ls_running_median_s'] * 1000:.0f} ms while running (max {report['ls_running_max_s'] * 1000:.0f}); "
              f"RSS {report['rss_queued_kib'] / 1024:.1f} MiB queued, "
              f"{report['rss_done_kib'] / 1024:.1f} MiB done, peak {report['rss_peak_kib'] / 1024:.1f} MiB", flush=True)
    daemon.terminate()
    began = time.perf_counter()
    daemon.wait(timeout=30)
    report["sigterm_exit_s"] = time.perf_counter() - began
    files.shutdown()
    shutil.rmtree(work, ignore_errors=True)

    per_entry = (report["rss_queued_kib"] - report["rss_idle_kib"]) * 1024 / args.count
    report["rss_per_queued_entry_bytes"] = round(per_entry)
    os.makedirs(os.path.join(ROOT, "Benchmarks", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "Benchmarks", "results", "queue-load.json"), "w") as out:
        json.dump(report, out, indent=2)

    mib = lambda kib: f"{kib / 1024:.1f} MiB"
    print(f"downloads: {args.count} in batches of {args.batch}")
    print(f"add: {report['add_batch_median_s']*1000:.0f} ms median per batch (max {report['add_batch_max_s']*1000:.0f} ms), "
          f"{report['add_total_s']:.1f} s total")
    print(f"haul ls --json: {report['ls_empty_median_s']*1000:.0f} ms empty, "
          f"{report['ls_queued_median_s']*1000:.0f} ms with {args.count} queued (max {report['ls_queued_max_s']*1000:.0f} ms), "
          f"{report['ls_running_median_s']*1000:.0f} ms while running (max {report['ls_running_max_s']*1000:.0f} ms)")
    print(f"summary: {report['summary_queued_median_s']*1000:.1f} ms with {args.count} queued")
    print(f"RSS: {mib(report['rss_idle_kib'])} idle, {mib(report['rss_queued_kib'])} with {args.count} queued "
          f"({report['rss_per_queued_entry_bytes']} B per entry), {mib(report['rss_done_kib'])} after all completed, "
          f"peak {mib(report['rss_peak_kib'])}")
    print(f"ran all {report['completed']} in {report['run_all_s']:.1f} s; SIGTERM exit in {report['sigterm_exit_s']:.2f} s")


if __name__ == "__main__":
    main()
