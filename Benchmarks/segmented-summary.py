#!/usr/bin/env python3
"""Turn segmented-bench.sh's per-run TSV into plain-text tables.

Input lines: part, tool, k, size_mib, round, elapsed_s, user_s, sys_s, maxrss_kib, status,
requests (HTTP requests nginx logged during the run, "-" for the test server).
Medians over the runs whose status is "ok"; any other status is listed loudly and the
row's figures cover only the good runs (a short or wrong file is no speed record).
"""
import argparse
import statistics
from collections import OrderedDict

FAST_BPS = 4 << 20  # the test server's fast connections (parts 2 and 3)


def load(path):
    groups = OrderedDict()  # (part, k, tool) -> runs, in first-seen order
    with open(path) as f:
        for line in f:
            part, tool, k, mb, rnd, e, u, s, m, status, reqs = line.rstrip("\n").split("\t")
            groups.setdefault((part, int(k), tool), []).append(dict(
                mb=int(mb), e=float(e), cpu=float(u) + float(s), rss=int(m) / 1024, status=status,
                reqs=None if reqs == "-" else int(reqs)))
    return groups


def summary(runs):
    good = [r for r in runs if r["status"] == "ok"]
    bad = [r["status"] for r in runs if r["status"] != "ok"]
    flag = f"{len(good)}/{len(runs)}" + ("  !!! " + ",".join(bad) if bad else "")
    if not good:
        return None, flag
    med = lambda key: statistics.median(r[key] for r in good)
    reqs = None if good[0]["reqs"] is None else statistics.median(r["reqs"] for r in good)
    return dict(mb=good[0]["mb"], e=med("e"), cpu=med("cpu"), rss=med("rss"), reqs=reqs), flag


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).rjust(w) for c, w in zip(cells, widths)).rstrip()
    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for name in ("--times", "--limit", "--machine", "--haul-bin", "--size-rule"):
        ap.add_argument(name, required=True)
    ap.add_argument("--limit-bps", type=int, required=True)
    ap.add_argument("--rounds", type=int, required=True)
    args = ap.parse_args()
    groups = load(args.times)
    limit_mib = args.limit_bps / 1048576
    out = [f"Machine: {args.machine}.", f"Haul: {args.haul_bin}. Rounds: {args.rounds}; medians of good runs.", ""]

    nginx = [(key, runs) for key, runs in groups.items() if key[0] == "nginx"]
    if nginx:
        out.append(f"1. nginx on 127.0.0.1, limit_rate {args.limit} ({limit_mib:g} MiB/s) per connection; "
                   f"file size per K: {args.size_rule}.")
        out.append("   ideal = min(K, file size in MiB) x limit (no more than one 1 MiB piece per connection).")
        rows = []
        for (_, k, tool), runs in sorted(nginx, key=lambda kv: (kv[0][1], ["haul", "aria2c", "axel"].index(kv[0][2]))):
            st, flag = summary(runs)
            conns = f"{min(k, 16)} (-s {k})" if tool == "aria2c" else str(k)
            if st is None:
                rows.append([k, tool, conns, runs[0]["mb"], "FAILED", "", "", "", "", "", "", flag])
                continue
            ideal_s = st["mb"] / (min(k, st["mb"]) * limit_mib)
            best_s = max(ideal_s - 1, 0.001)  # one request per connection, each with nginx's 1 s head start
            rows.append([k, tool, conns, st["mb"], f"{st['e']:.2f}", f"{st['mb'] / st['e']:.1f}",
                         f"{ideal_s / st['e']:.3f}", f"{best_s / st['e']:.3f}", f"{st['cpu']:.2f}", f"{st['rss']:.1f}", f"{st['reqs']:g}", flag])
        out += table(["K", "tool", "connections", "MiB", "median s", "MiB/s", "share of ideal", "share of best",
                      "CPU s", "peak RSS MiB", "requests", "good runs"], rows)
        out.append("   nginx lets every request send one second's worth (LIMIT bytes) ahead of the rate, so the")
        out.append("   share of the ideal can pass 1. 'best' = ideal - 1 s: K connections, one request each.")
        out.append("   A tool that makes more requests than K gets more head starts and can pass 1 there too.")
        if any(k > 16 for (_, k, _), _ in nginx):
            out.append("   Note: aria2c caps -x at 16, so above K=16 it ran -x 16 -s K: at most 16/K of the ideal.")
        out.append("")

    strag = [(key, runs) for key, runs in groups.items() if key[0] == "straggler"]
    if strag:
        k = strag[0][0][1]
        fast = k - k // 3
        out.append(f"2. Stragglers: haul-test-server, K={k}, every third connection 256 KiB/s, the others 4 MiB/s.")
        out.append(f"   ratio = time / (size / ({fast} fast connections x 4 MiB/s)); target for haul <= 1.3.")
        rows = []
        for (_, k, tool), runs in strag:
            st, flag = summary(runs)
            if st is None:
                rows.append([tool, k, runs[0]["mb"], "FAILED", "", "", "", "", flag])
                continue
            ideal_s = st["mb"] * 1048576 / (fast * FAST_BPS)
            ratio = st["e"] / ideal_s
            mark = ("  (meets <= 1.3)" if ratio <= 1.3 else "  (MISSES 1.3)") if tool == "haul" else ""
            rows.append([tool, k, st["mb"], f"{st['e']:.2f}", f"{st['mb'] / st['e']:.1f}", f"{ratio:.2f}{mark}",
                         f"{st['cpu']:.2f}", f"{st['rss']:.1f}", flag])
        out += table(["tool", "K", "MiB", "median s", "MiB/s", "ratio to fast-only ideal", "CPU s",
                      "peak RSS MiB", "good runs"], rows)
        out.append("")

    cap = [(key, runs) for key, runs in groups.items() if key[0] == "cap"]
    if cap:
        out.append("3. Capped server: haul -x 8 against --cap 4 --retry-after 1 --throttle 4M (503 beyond 4 bodies).")
        out.append("   ideal = size / (4 x 4 MiB/s). The number of 503s is not visible from outside the server.")
        rows = []
        for (_, k, tool), runs in cap:
            st, flag = summary(runs)
            if st is None:
                rows.append([tool, k, runs[0]["mb"], "FAILED", "", "", "", "", flag])
                continue
            ideal_s = st["mb"] * 1048576 / (4 * FAST_BPS)
            rows.append([tool, k, st["mb"], f"{st['e']:.2f}", f"{st['mb'] / st['e']:.1f}",
                         f"{st['e'] / ideal_s:.2f}", f"{st['cpu']:.2f}", f"{st['rss']:.1f}",
                         flag + ("  (file correct)" if flag.startswith(f"{len(runs)}/") else "")])
        out += table(["tool", "-x", "MiB", "median s", "MiB/s", "ratio to ideal", "CPU s", "peak RSS MiB",
                      "good runs"], rows)
    print("\n".join(out))


if __name__ == "__main__":
    main()
