#!/usr/bin/env python3
"""control-runs.py: control-bench.py's main phase (the adds, then the ring under 1 and 8 clients)
RUNS times in a row, haul and aria2c in each run (issue 30: the ring never stalls), and one line
per run: the big download's speed alone, with 1 client and with 8, seconds in which no big
download was active, big downloads finished, the ring's add latency.

Usage:  python3 Benchmarks/control-runs.py [RUNS]        (default 10; HAUL_BIN, DAEMONS and
        control-bench.py's other variables pass through)
Results: Benchmarks/results/control-runs.json and control-runs.md.
"""
import json, os, subprocess, sys

BENCH = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(BENCH, "results")


def cell(r):
    if not r or "error" in r:
        return "failed", "failed", "-", "-"
    speeds = " / ".join(f"{w['mib_s']:.0f}" for w in (r["alone"], r["clients1"]["big"], r["clients8"]["big"]))
    add = r.get("ring_add_ms", {})
    return speeds, f"{r['big_stalled_s']:.1f} s", str(r["big_finished"]), f"{add.get('p99', 0):.1f} / {add.get('max', 0):.1f}"


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    daemons = os.environ.get("DAEMONS", "haul,aria2c").replace(" ", ",")
    collected = []
    for run in range(1, runs + 1):
        print(f"==> run {run} of {runs}", file=sys.stderr, flush=True)
        path = os.path.join(RESULTS, "control-bench.json")
        if os.path.exists(path):
            os.remove(path)
        code = subprocess.call([sys.executable, os.path.join(BENCH, "control-bench.py"), "--phases", "main", "--daemons", daemons])
        main_results = {}
        if os.path.exists(path):
            with open(path) as f:
                main_results = json.load(f)["results"].get("main", {})
        collected.append({"run": run, "exit": code, "main": main_results})
        with open(os.path.join(RESULTS, "control-runs.json"), "w") as f:
            json.dump(collected, f, indent=1)
    names = daemons.split(",")
    lines = ["| run | " + " | ".join(f"{n}: big MiB/s alone / 1 client / 8 clients | {n}: none active | {n}: finished"
                                       + (f" | {n}: ring add p99 / max ms" if n == "haul" else "") for n in names) + " |",
             "|---:|" + "".join("---:|---:|---:|" + ("---:|" if n == "haul" else "") for n in names)]
    stalls = 0
    for entry in collected:
        cells = []
        for name in names:
            r = entry["main"].get(name)
            speeds, stalled, finished, add = cell(r)
            cells += [speeds, stalled, finished] + ([add] if name == "haul" else [])
            if name == "haul" and (not r or "error" in r or r["big_stalled_s"] >= 2):
                stalls += 1
        lines.append(f"| {entry['run']} | " + " | ".join(cells) + " |")
    lines += ["", f"haul: {runs - stalls} of {runs} runs kept the ring going (no 2 s without a big download active, no failure)."]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(RESULTS, "control-runs.md"), "w") as f:
        f.write(text + "\n")
    return 1 if stalls else 0


if __name__ == "__main__":
    sys.exit(main())
