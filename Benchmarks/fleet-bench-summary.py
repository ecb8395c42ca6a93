#!/usr/bin/env python3
"""Turn fleet-bench.sh's per-run TSV into markdown tables of medians per configuration.

Input lines (tab-separated): config (HOSTSxJOBS), round, hosts, jobs, files, wall_s (haul add
started -> PostgreSQL says all files completed), add_s (until haul add returned), first_rows_s
(until the first queued rows were visible), first_claim_s (until the first row was leased or past queued), first_claim_after_add_s (the
same from add's return; negative: a host claimed while add was still sending), all_hosts_s
(until every host held a lease at one poll), steady files/s (10% -> 90% completed), haul CPU s
(all hosts, add -> done), CPU s per host, peak RSS KiB per host (VmHWM), PostgreSQL CPU s,
requests nginx logged, completions per host (its haul_downloads_finished_total), stop_s (SIGTERM
-> all exited), the hosts' CPU s per s while idle before the add, nginx's CPU s, haul add's CPU s,
the benchmark's own polling CPU s, every other process's CPU s (noise), status, notes. "-" marks a figure the run did not reach.

Medians over runs whose status is "ok" (every file there, 16384 bytes, contents as the source).
Runs with another status are listed loudly and left out; notes (warnings in the hosts' logs,
completions counted twice, extra requests, non-zero exits) are listed loudly too, but such runs
still count: their files were right.
"""
import argparse
import statistics
from collections import OrderedDict

FIELDS = ["config", "round", "hosts", "jobs", "files", "wall", "add", "rows", "first", "first_after_add", "all_hosts",
          "steady", "cpu", "cpu_hosts", "rss_hosts", "pg_cpu", "reqs", "done_hosts", "stop", "idle_cpu", "ngx_cpu", "add_cpu", "obs_cpu", "other_cpu", "status", "notes"]


def number(text):
    return None if text in ("-", "") else float(text)


def numbers(text):
    return [] if text in ("-", "") else [float(x) for x in text.split(",")]


def load(path):
    groups = OrderedDict()  # config -> runs, in first-seen order
    with open(path) as f:
        for line in f:
            values = line.rstrip("\n").split("\t")
            if len(values) != len(FIELDS):
                raise SystemExit(f"{path}: a line with {len(values)} fields, not {len(FIELDS)}: {line!r}")
            r = dict(zip(FIELDS, values))
            for key in ("round", "hosts", "jobs", "files", "reqs"):
                r[key] = int(r[key])
            for key in ("wall", "add", "rows", "first", "first_after_add", "all_hosts", "steady", "cpu", "pg_cpu", "stop",
                        "idle_cpu", "ngx_cpu", "add_cpu", "obs_cpu", "other_cpu"):
                r[key] = number(r[key])
            r["cpu_hosts"] = numbers(r["cpu_hosts"])
            r["rss_hosts"] = [kib / 1024 for kib in numbers(r["rss_hosts"])]
            r["done_hosts"] = [int(x) for x in numbers(r["done_hosts"])]
            groups.setdefault(r["config"], []).append(r)
    return groups


def note_count(run, name):
    """N from a note N-NAME, else 0."""
    for note in run["notes"].split(";"):
        if note.endswith("-" + name) and note.split("-", 1)[0].isdigit():
            return int(note.split("-", 1)[0])
    return 0


def median(runs, key):
    values = [key(r) if callable(key) else r[key] for r in runs]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=2, scale=1.0):
    return "-" if value is None else f"{value * scale:.{digits}f}"


def table(header, rows, align=None):
    """A markdown table, padded so it reads as plain text too. align: 'l' or 'r' per column."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    cells = [header] + rows
    widths = [max(len(str(row[i])) for row in cells) for i in range(len(header))]
    pad = lambda text, i: str(text).ljust(widths[i]) if align[i] == "l" else str(text).rjust(widths[i])
    line = lambda row: "| " + " | ".join(pad(c, i) for i, c in enumerate(row)) + " |"
    rule = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else (":" + "-" * (w + 1))
                          for w, a in zip(widths, align)) + "|"
    return [line(header), rule] + [line(r) for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for name in ("--times", "--machine", "--haul-bin", "--haul-version", "--postgres"):
        ap.add_argument(name, required=True)
    ap.add_argument("--explain", help="explain.txt: state, run, planning ms, execution ms")
    ap.add_argument("--plan", help="one EXPLAIN ANALYZE output to show")
    ap.add_argument("--idle-seconds", type=float, default=2)
    for name in ("--files", "--file-size", "--rounds", "--timeout", "--explain-limit"):
        ap.add_argument(name, type=int, required=True)
    args = ap.parse_args()
    groups = load(args.times)

    out = [f"# Fleet mode: {args.files} files of {args.file_size // 1024} KiB, one host against several sharing one queue",
           "",
           f"Machine: {args.machine}.  ",
           f"Haul: {args.haul_bin} ({args.haul_version}); {args.postgres} on 127.0.0.1 (initdb defaults: fsync and "
           "synchronous_commit on); nginx on 127.0.0.1 serving random data.  ",
           f"Every host: `haul serve --store postgres://... -j JOBS`, its own HAUL_HOME, all into one directory; "
           f"`haul add -i LIST` through host 1. {args.rounds} round{'s' * (args.rounds != 1)}, the first "
           "configuration rotating; fresh database, HAUL_HOMEs and directory every run. Medians of good runs "
           f"(every file present, {args.file_size} bytes, contents hashed against the source). "
           f"Time limit per run: {args.timeout} s.",
           ""]

    good = {c: [r for r in runs if r["status"] == "ok"] for c, runs in groups.items()}
    flags = {}
    for c, runs in groups.items():
        bad = [r["status"] for r in runs if r["status"] != "ok"]
        flags[c] = f"{len(good[c])}/{len(runs)}" + (" !!! " + ",".join(bad) if bad else "")

    # 1. Throughput and latency.
    out.append("## Throughput and claim latency")
    out.append("")
    rows = []
    for c, runs in groups.items():
        g = good[c]
        hosts, jobs = runs[0]["hosts"], runs[0]["jobs"]
        if not g:
            rows.append([c, f"{hosts} x -j {jobs}", hosts * jobs] + ["FAILED"] + [""] * 7 + [flags[c]])
            continue
        n = g[0]["files"]
        rows.append([c, f"{hosts} x -j {jobs}", hosts * jobs, fmt(median(g, "wall")),
                     fmt(median(g, lambda r: n / r["wall"] if r["wall"] else None), 0),
                     fmt(median(g, "steady"), 0), fmt(median(g, "add")),
                     fmt(median(g, "first"), 0, 1000),
                     fmt(median(g, lambda r: r["first"] - r["rows"] if r["first"] is not None and r["rows"] is not None else None), 0, 1000),
                     fmt(median(g, "first_after_add"), 0, 1000),
                     fmt(median(g, "all_hosts"), 2) if hosts > 1 else "-", flags[c]])
    out += table(["config", "hosts", "slots", "wall s", "files/s", "steady files/s", "add s",
                  "1st claim ms", "claim - 1st rows ms", "1st claim - add ms", "all hosts s", "good runs"], rows)
    out += ["",
            "- wall s: from starting `haul add` to PostgreSQL counting every file completed (polled every 50 ms); "
            "files/s = files / wall s.",
            "- steady files/s: 80% of the files over the time from 10% to 90% completed (add and the tail left out).",
            "- add s: `haul add -i LIST` (batches of 1000 URLs through host 1's API) until it returned.",
            "- 1st claim ms: from starting `haul add` to the first row leased or past queued (polled every 5 ms). "
            "claim - 1st rows ms: from the first queued rows being visible in PostgreSQL (add inserts 500 rows per "
            "statement) to that first claim: the claim latency proper. 1st claim - add ms: from add's return, "
            "negative when a host claimed while add was still sending.",
            "- all hosts s: from starting `haul add` until every host held at least one lease at the same poll.",
            ""]

    # 2. Cost.
    out.append("## Cost: CPU")
    out.append("")
    rows = []
    for c, runs in groups.items():
        g = good[c]
        if not g:
            continue
        n = g[0]["files"]
        everything = lambda r: r["cpu"] + r["pg_cpu"] + (r["ngx_cpu"] or 0) + (r["add_cpu"] or 0) + (r["obs_cpu"] or 0)
        rows.append([c, fmt(median(g, "cpu")), fmt(median(g, lambda r: r["cpu"] * 1e6 / n), 0),
                     fmt(median(g, "pg_cpu")), fmt(median(g, lambda r: r["pg_cpu"] * 1e6 / n), 0),
                     fmt(median(g, lambda r: (r["cpu"] + r["pg_cpu"]) * 1e6 / n), 0),
                     fmt(median(g, "ngx_cpu")), fmt(median(g, "add_cpu")), fmt(median(g, "obs_cpu")),
                     fmt(median(g, lambda r: everything(r) / r["wall"] if r["wall"] else None), 2),
                     fmt(median(g, "idle_cpu"), 0, 1000), fmt(median(g, "other_cpu"))])
    out += table(["config", "haul s", "haul us/file", "PostgreSQL s", "PostgreSQL us/file", "both us/file",
                  "nginx s", "haul add s", "bench poll s", "CPUs busy", "idle hosts ms/s", "others s"], rows)
    out += ["",
            "- CPU seconds (user + sys, /proc/PID/stat) from just before `haul add` until every file was completed "
            "(PostgreSQL and nginx: until the hosts had exited).",
            "- haul: every host together; startup and schema migration left out. haul add: the client "
            "(GNU time). bench poll: this benchmark's polling (its shell, psql and psql's backend), "
            "left out of PostgreSQL's figure.",
            "- PostgreSQL: the postmaster, its running processes and the backends it reaped.",
            "- CPUs busy: all of the above together over the wall time (the machine has "
            + args.machine.split(" CPUs")[0] + ").",
            f"- idle hosts: all hosts' CPU per second over {args.idle_seconds:g} s with an empty queue before the add (lease renewals, "
            "claims that find nothing).",
            "- others: CPU every other process on the machine used meanwhile (/proc/stat less all of the above): "
            "noise that took CPU from the benchmark; compare it with wall s x CPUs.",
            ""]
    out.append("## Memory and shutdown")
    out.append("")
    rows = []
    for c, runs in groups.items():
        g = good[c]
        if not g:
            continue
        rows.append([c, fmt(median(g, lambda r: max(r["rss_hosts"])), 1), fmt(median(g, lambda r: min(r["rss_hosts"])), 1),
                     fmt(median(g, lambda r: sum(r["rss_hosts"])), 1), fmt(median(g, "stop"))])
    out += table(["config", "peak RSS MiB, largest host", "smallest host", "all hosts", "SIGTERM -> all exited s"], rows)
    out += ["", "- peak RSS: VmHWM of each host just before SIGTERM (host 1 also took the `haul add`).", ""]

    # 3. Against the first configuration.
    configs = list(groups)
    base = configs[0]
    if len(configs) > 1 and good[base]:
        out.append(f"## Against {base}")
        out.append("")
        bg = good[base]
        bn = bg[0]["files"]
        b_rate = median(bg, lambda r: bn / r["wall"])
        b_steady = median(bg, "steady")
        b_cpu = median(bg, "cpu")
        b_total = median(bg, lambda r: r["cpu"] + r["pg_cpu"])
        rows = []
        for c in configs[1:]:
            g = good[c]
            if not g:
                continue
            n = g[0]["files"]
            ratio = lambda a, b: "-" if a is None or not b else f"{a / b:.2f}"
            rows.append([c, ratio(median(g, lambda r: n / r["wall"]), b_rate), ratio(median(g, "steady"), b_steady),
                         ratio(median(g, "cpu"), b_cpu), ratio(median(g, lambda r: r["cpu"] + r["pg_cpu"]), b_total)])
        out += table(["config", "files/s", "steady files/s", "haul CPU", "haul + PostgreSQL CPU"], rows)
        out += ["", f"Ratios of medians, {base} = 1.00 (files/s above 1: faster; CPU above 1: more CPU for the same files).", ""]

    # 4. How the work was shared.
    out.append("## How the files were shared")
    out.append("")
    rows = []
    for c, runs in groups.items():
        per_round = []
        for r in runs:
            done = "/".join(str(x) for x in r["done_hosts"]) or "-"
            per_round.append(f"r{r['round']}: {done}")
        reqs = sorted({r["reqs"] for r in runs})
        lost = [note_count(r, "lease-lost-notices") for r in runs]
        rows.append([c, "; ".join(per_round), ",".join(str(x) for x in reqs), ",".join(str(x) for x in lost)])
    out += table(["config", "files completed per host (host1/host2/...)", "requests", "lease-lost notices per run"],
                 rows, ["l", "l", "r", "r"])
    out += ["", "From each host's `haul_downloads_finished_total` (GET /metrics) before SIGTERM; the sum should be the "
                "file count, and so should nginx's request count: more means work done twice. Lease-lost notices: "
                "lines 'another host took the download over' in the hosts' logs (a renewal did not find a lease the "
                "host thought it held); with one host there is no other host to take anything.", ""]

    # 5. The claim query.
    if args.explain:
        try:
            lines = [l.split("\t") for l in open(args.explain).read().splitlines() if l.strip()]
        except FileNotFoundError:
            lines = []
        if lines:
            out.append(f"## The claim query (LIMIT {args.explain_limit}, nothing excluded) on {args.files} queued rows")
            out.append("")
            rows = []
            for state in ("fresh", "analyzed"):
                runs = [(float(p), float(e)) for s, _, p, e in lines if s == state and p and e]
                if runs:
                    rows.append([state, len(runs), f"{statistics.median(p for p, _ in runs):.3f}",
                                 f"{statistics.median(e for _, e in runs):.3f}",
                                 f"{min(e for _, e in runs):.3f}-{max(e for _, e in runs):.3f}"])
            out += table(["table state", "runs", "planning ms", "execution ms", "execution range ms"], rows)
            out += ["",
                    "EXPLAIN (ANALYZE, BUFFERS) of the query in PostgresDownloadStore.claim (read from the source), in a "
                    "transaction rolled back. fresh: the last run's rows queued again and inserted anew, no ANALYZE yet "
                    "(as right after `haul add`); analyzed: after VACUUM ANALYZE. The excluded ids are an empty literal "
                    "array here, a bound parameter in haul.", ""]
            if args.plan:
                try:
                    plan = open(args.plan).read().rstrip()
                    out += ["Plan (analyzed, first run):", "", "```", plan, "```", ""]
                except FileNotFoundError:
                    pass

    bad = [r for runs in groups.values() for r in runs if r["status"] != "ok"]
    noted = [r for runs in groups.values() for r in runs if r["notes"] != "-"]
    if bad or noted:
        out.append("## !!! Problems")
        out.append("")
        for r in bad:
            out.append(f"- !!! {r['config']} round {r['round']}: {r['status']} (notes: {r['notes']})")
        for r in noted:
            if r["status"] == "ok":
                out.append(f"- !!! {r['config']} round {r['round']}: files correct, but: {r['notes'].replace(';', '; ')}")
        out.append("")
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    main()
