#!/usr/bin/env python3
"""Turn download-bench.sh's per-run TSV into the Markdown report.

Input lines: round, tool, size_mb, elapsed_s, user_s, sys_s, maxrss_kib, ok.
Rows whose round is "rss" come from the --rss-sizes runs and get their own table.
Medians, not means: one run disturbed by a background job should not move the result.
"""
import argparse
import statistics
import sys
from collections import OrderedDict


def fmt(x, digits=2):
    return "n/a" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    # CPU time can round to 0.00 s for a very fast tool; don't divide by it.
    return None if a is None or not b else a / b


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--times", required=True)
    ap.add_argument("--size-mb", type=int, required=True)
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--machine", required=True)
    ap.add_argument("--haul-bin", required=True)
    ap.add_argument("--url", required=True)
    args = ap.parse_args()

    runs = OrderedDict()  # tool -> list of run dicts, in first-seen order
    rss_runs = []
    with open(args.times) as f:
        for line in f:
            rnd, tool, mb, e, u, s, m, ok = line.rstrip("\n").split("\t")
            run = dict(mb=int(mb), e=float(e), cpu=float(u) + float(s),
                       rss=int(m) / 1024, ok=ok == "1")
            (rss_runs if rnd == "rss" else runs.setdefault(tool, [])).append(run)

    # A tool with any failed run gets no figures: a partial download is fast.
    stats = {}
    for tool, rs in runs.items():
        if all(r["ok"] for r in rs):
            e = statistics.median(r["e"] for r in rs)
            stats[tool] = dict(
                e=e,
                mibs=args.size_mb / e,
                cpu=statistics.median(r["cpu"] for r in rs),
                rss=statistics.median(r["rss"] for r in rs),
            )
        else:
            stats[tool] = None

    # haul first, so the ratio column reads top-down against the baseline row.
    stats = dict(sorted(stats.items(), key=lambda kv: kv[0] != "haul"))
    haul = stats.get("haul")
    out = []
    out.append(f"Machine: {args.machine}. File: {args.size_mb} MiB of random data from "
               f"nginx (sendfile) on {args.url}, one connection per tool. "
               f"Rounds: {args.rounds} (tools interleaved), medians shown.")
    out.append("")
    out.append("| tool | median s | MiB/s | median CPU s (user+sys) | median peak RSS (MiB) "
               "| haul time ratio (haul/tool) | haul CPU ratio (haul/tool) |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for tool, st in stats.items():
        if st is None:
            out.append(f"| {tool} | FAILED | | | | | |")
            continue
        tr = ratio(haul and haul["e"], st["e"])
        cr = ratio(haul and haul["cpu"], st["cpu"])
        out.append(f"| {tool} | {st['e']:.3f} | {st['mibs']:.0f} | {st['cpu']:.2f} | "
                   f"{st['rss']:.1f} | {fmt(tr)} | {fmt(cr)} |")
    out.append("")
    out.append(f"haul binary: `{args.haul_bin}`. Ratios above 1 mean haul took more "
               "time (or CPU) than that tool; below 1, less.")

    if rss_runs:
        out.append("")
        out.append("Haul peak memory by file size (one run each, content verified):")
        out.append("")
        out.append("| file size (MiB) | seconds | MiB/s | CPU s | peak RSS (MiB) |")
        out.append("|---:|---:|---:|---:|---:|")
        for r in rss_runs:
            if r["ok"]:
                out.append(f"| {r['mb']} | {r['e']:.3f} | {r['mb'] / r['e']:.0f} | "
                           f"{r['cpu']:.2f} | {r['rss']:.1f} |")
            else:
                out.append(f"| {r['mb']} | FAILED | | | |")

    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
