#!/usr/bin/env python3
"""Turn mirror-bench.sh's per-run TSV into the Markdown report.

Runs (one line each): tool, case (two | slow-last | slow-first), k, round, elapsed_s, user_s,
sys_s, maxrss_kib, status, exit, then per mirror A, B, S the requests nginx logged and the body
bytes it sent, then what haul -v said about its requests ("-" if nothing).
Medians over the runs whose status is "ok"; any other status is listed loudly and left out
(a short or wrong file is no speed record). The figure the issue asks for is each tool's
median time with the slow mirror / its median time without it (case "two").
"""
import argparse
import statistics
from collections import OrderedDict

from summary_lib import md_table

CASES = OrderedDict([("two", "A B"), ("slow-last", "A B S"), ("slow-first", "S A B")])
TARGET = 1.5
MIB = 1048576


def load(path):
    groups = OrderedDict()  # (k, tool, case) -> runs
    with open(path) as f:
        for line in f:
            (tool, case, k, rnd, e, u, s, m, status, rc, ra, rb, rs, ba, bb, bs,
             says) = line.rstrip("\n").split("\t")
            groups.setdefault((int(k), tool, case), []).append(dict(
                round=int(rnd), e=float(e), cpu=float(u) + float(s), rss=int(m) / 1024,
                status=status, rc=int(rc), reqs=(int(ra), int(rb), int(rs)),
                bytes=(int(ba), int(bb), int(bs)), says=says))
    return groups


def good(runs):
    return [r for r in runs if r["status"] == "ok"]


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for name in ("--runs", "--versions", "--commands", "--machine"):
        ap.add_argument(name, required=True)
    for name in ("--size", "--limit-bps", "--slow-bps", "--rounds"):
        ap.add_argument(name, type=int, required=True)
    args = ap.parse_args()
    groups = load(args.runs)
    size_mib = args.size / MIB
    limit_mib = args.limit_bps / MIB
    out = ["# Mirror benchmark: one slow mirror", ""]
    out.append(f"Machine: {args.machine}.")
    out.append("")
    with open(args.versions) as f:
        for line in f:
            tool, text = line.rstrip("\n").split("\t", 1)
            out.append(f"- {tool}: {text}")
    out.append("")
    out.append(f"One file of {size_mib:g} MiB from three haul-test-servers on 127.0.0.1 (fresh ones for every "
               f"run), three mirrors: A and B at {args.limit_bps} B/s ({limit_mib:g} MiB/s) per response, so per "
               f"connection, S at {args.slow_bps} B/s ({args.limit_bps / args.slow_bps:.0f}x slower). Rounds: "
               f"{args.rounds}, runs interleaved; medians of the good runs. Every file's sha256 was compared "
               "with the source's.")
    out.append("")

    for k in sorted({key[0] for key in groups}):
        ideal = args.size / (k * args.limit_bps)
        out.append(f"## K = {k} connections")
        out.append("")
        out.append(f"Ideal: {ideal:.1f} s (size / (K x limit): all K connections busy on A and B). A connection "
                   f"on S brings 1/{args.limit_bps / args.slow_bps:.0f} of one on A or B, so the best a tool can do with S listed is about the same.")
        out.append("")
        rows = []
        for tool in OrderedDict((key[1], None) for key in groups if key[0] == k):
            for case, order in CASES.items():
                runs = groups.get((k, tool, case))
                if not runs:
                    continue
                ok = good(runs)
                bad = [r["status"] for r in runs if r["status"] != "ok"]
                flag = f"{len(ok)}/{len(runs)}" + (" !!! " + ", ".join(bad) if bad else "")
                if not ok:
                    rows.append([tool, case, order, "FAILED", "", "", "", "", "", "", "", flag])
                    continue
                each = ", ".join(f"{r['e']:.1f}" for r in sorted(ok, key=lambda r: r["round"]))
                reqs = "/".join(f"{statistics.median(r['reqs'][i] for r in ok):g}" for i in range(3))
                mib = "/".join(f"{statistics.median(r['bytes'][i] for r in ok) / MIB:.{1 if i == 2 else 0}f}"
                               for i in range(3))
                sent = statistics.median(sum(r["bytes"]) for r in ok) / args.size
                says = next((r["says"] for r in reversed(ok) if r["says"] != "-"), "")
                rows.append([tool, case, order, f"{med(ok, 'e'):.2f}", each, f"{size_mib / med(ok, 'e'):.1f}",
                             f"{med(ok, 'cpu'):.2f}", f"{med(ok, 'rss'):.1f}", reqs, mib, f"{sent:.3f}",
                             flag + (f" ({says})" if says else "")])
        out += md_table(["tool", "case", "mirrors", "median s", "each run s", "MiB/s", "CPU s", "peak RSS MiB",
                         "requests A/B/S", "MiB sent A/B/S", "sent/size", "good runs"], rows,
                        right={3, 4, 5, 6, 7, 10})
        out.append("")

        out.append(f"Cost of the slow mirror: median time with it / median time without it (target for haul: "
                   f"at most {TARGET}). In brackets: the same ratio round by round.")
        out.append("")
        rows = []
        for tool in OrderedDict((key[1], None) for key in groups if key[0] == k):
            base = good(groups.get((k, tool, "two"), []))
            if not base:
                continue
            row = [tool, f"{med(base, 'e'):.2f}"]
            for case in ("slow-last", "slow-first"):
                runs = good(groups.get((k, tool, case), []))
                if not runs:
                    row += ["n/a", "n/a"]
                    continue
                ratio = med(runs, "e") / med(base, "e")
                by_round = {r["round"]: r["e"] for r in base}
                rounds = ", ".join(f"{r['e'] / by_round[r['round']]:.2f}"
                                   for r in sorted(runs, key=lambda r: r["round"]) if r["round"] in by_round)
                verdict = "" if tool != "haul" else (" ok" if ratio <= TARGET else " MISSES")
                row += [f"{med(runs, 'e'):.2f}", f"**{ratio:.2f}**{verdict} ({rounds})"]
            rows.append(row)
        out += md_table(["tool", "without S: s", "A B S: s", "A B S / without", "S A B: s", "S A B / without"],
                        rows, right={1, 2, 3, 4, 5})
        out.append("")

    out.append("Columns: *requests A/B/S* and *MiB sent A/B/S* are what each mirror's log says (responses, and "
               "payload bytes handed to the kernel: a request cut short counts what was sent); *sent/size* is all body bytes sent / file size (above 1: "
               "bytes fetched twice, e.g. a request cut after a steal). CPU is user + sys of the tool; peak RSS is "
               "GNU time's %M.")
    out.append("")
    out.append("Commands (round 1; work/ is Benchmarks/work/mirror):")
    out.append("")
    with open(args.commands) as f:
        for line in f:
            tool, case, k, cmd = line.rstrip("\n").split("\t", 3)
            out.append(f"- {tool} {case} K={k}: `{cmd.strip()}`")
    print("\n".join(out))


if __name__ == "__main__":
    main()
