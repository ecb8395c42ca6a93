#!/usr/bin/env python3
"""Turn many-files-bench.sh's per-run TSV into plain-text tables.

Input lines: part, tool, round, entries, elapsed_s, user_s, sys_s, maxrss_kib, status,
requests and body bytes nginx logged during the run, exit status. Parts: main (the list,
fresh state), rerun (the same command again on the finished output), idle (one 16 KiB URL),
long (the long list, one run per tool).

Medians over runs whose status is "ok". Anything else is listed loudly and left out:
TIMEOUT-files-ok (every file complete and correct, but the tool did not exit within the
limit and was stopped with SIGINT), FAILED-... (non-zero exit), WRONG-NAMES / WRONG-SIZE /
WRONG-DATA (bad output). The memory table alone also shows the peak RSS of TIMEOUT-files-ok
runs, marked with *, since it is the figure up to the stop.
"""
import argparse
import statistics
from collections import OrderedDict

TOOLS = ["haul", "aria2c", "aria2c-deferred"]


def load(path):
    groups = OrderedDict()  # (part, tool) -> runs
    with open(path) as f:
        for line in f:
            part, tool, rnd, n, e, u, s, m, status, reqs, nbytes, rc = line.rstrip("\n").split("\t")
            groups.setdefault((part, tool), []).append(dict(
                n=int(n), e=float(e), cpu=float(u) + float(s), rss=int(m) / 1024,
                status=status, reqs=int(reqs), mib=int(nbytes) / 1048576, rc=int(rc)))
    return groups


def summary(runs, good_if=lambda r: r["status"] == "ok"):
    good = [r for r in runs if good_if(r)]
    bad = [r["status"] for r in runs if not good_if(r)]
    flag = f"{len(good)}/{len(runs)}" + ("  !!! " + ",".join(bad) if bad else "")
    if not good:
        return None, flag
    med = lambda key: statistics.median(r[key] for r in good)
    return dict(n=good[0]["n"], e=med("e"), cpu=med("cpu"), rss=med("rss"), reqs=med("reqs"),
                mib=med("mib"), reqs_min=min(r["reqs"] for r in good),
                reqs_max=max(r["reqs"] for r in good), rcs=sorted({r["rc"] for r in good})), flag


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).rjust(w) for c, w in zip(cells, widths)).rstrip()
    return ["   " + line(header), "   " + line(["-" * w for w in widths])] + ["   " + line(r) for r in rows]


def ratio(a, b, digits=2):
    return "n/a" if a is None or b is None or not b else f"{a / b:.{digits}f}"


def reqs_text(st):
    lo, hi = st["reqs_min"], st["reqs_max"]
    return f"{lo}" if lo == hi else f"{st['reqs']:g} ({lo}-{hi})"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for name in ("--times", "--machine", "--haul-bin", "--haul-version", "--aria2c-version"):
        ap.add_argument(name, required=True)
    for name in ("--files", "--file-size", "--jobs", "--rounds", "--timeout", "--long-timeout"):
        ap.add_argument(name, type=int, required=True)
    args = ap.parse_args()
    groups = load(args.times)
    get = lambda part, tool: groups.get((part, tool))

    out = [f"Machine: {args.machine}.",
           f"Haul: {args.haul_bin} ({args.haul_version}); {args.aria2c_version}.",
           f"{args.files} files of {args.file_size // 1024} KiB (random data) from nginx on 127.0.0.1; "
           f"-j {args.jobs}, one connection per file; {args.rounds} round{'s' * (args.rounds != 1)}, "
           "the tools alternating first;",
           "medians of good runs. Every run is checked: exactly the listed names, each "
           f"{args.file_size} bytes, all contents hashed against the source.",
           f"Time limit per run: {args.timeout} s ({args.long_timeout} s on the long list), then SIGINT.",
           ""]

    # 1. The list from scratch.
    out.append(f"1. {args.files} files into an empty directory, fresh state (haul: new HAUL_HOME) every run")
    stats, rows = {}, []
    for tool in TOOLS:
        runs = get("main", tool)
        if not runs:
            continue
        st, flag = summary(runs)
        stats[tool] = st
        if st is None:
            rows.append([tool, "FAILED", "", "", "", "", "", flag])
            continue
        rows.append([tool, f"{st['e']:.2f}", f"{st['n'] / st['e']:.0f}", f"{st['cpu']:.2f}",
                     f"{st['cpu'] * 1e6 / st['n']:.0f}", f"{st['rss']:.1f}", reqs_text(st), flag])
    h, a = stats.get("haul"), stats.get("aria2c")
    if h and a:
        rows.append(["haul/aria2c", ratio(h["e"], a["e"]), ratio(h["n"] / h["e"], a["n"] / a["e"]),
                     ratio(h["cpu"], a["cpu"]), ratio(h["cpu"], a["cpu"]), ratio(h["rss"], a["rss"]), "", ""])
    out += table(["tool", "wall s", "files/s", "CPU s", "CPU us/file", "peak RSS MiB", "requests",
                  "good runs"], rows)
    out.append("   CPU = user + sys of the tool (nginx not included). Ratios above 1: haul took more time,")
    out.append("   CPU or memory (files/s: above 1, haul was faster).")
    out.append("")

    # 2. Re-run on the finished output.
    out.append("2. The same command again on the finished output (haul: same HAUL_HOME; aria2c keeps no state)")
    rows = []
    for tool in TOOLS:
        runs = get("rerun", tool)
        if not runs:
            continue
        st, flag = summary(runs)
        if st is None:
            rows.append([tool, "FAILED", "", "", "", "", "", "", flag])
            continue
        wanted = ("0 (target): " + ("MET" if st["reqs_max"] == 0 else "MISSED")) if tool == "haul" else "-"
        rows.append([tool, f"{st['e']:.2f}", f"{st['cpu']:.2f}", f"{st['rss']:.1f}", reqs_text(st),
                     f"{st['mib']:.1f}", wanted, ",".join(str(c) for c in st["rcs"]), flag])
    out += table(["tool", "wall s", "CPU s", "peak RSS MiB", "requests", "MiB served", "requests wanted",
                  "exit status", "good runs"], rows)
    out.append("   Good: the output is unchanged and haul exits 0. aria2c has no record of finished downloads:")
    out.append("   it requests every file again and, with --allow-overwrite=false --auto-file-renaming=false,")
    out.append("   then refuses to write it, exit status 13 ('file already existed'); that counts as good.")
    out.append("   MiB served: response body bytes nginx logged as sent (a client may close before reading them).")
    out.append("")

    # 3. Memory.
    out.append("3. Peak RSS by list length (MiB)")
    n_long = next((r["n"] for (p, _), rs in groups.items() if p == "long" for r in rs), None)
    rows, starred = [], False
    for tool in TOOLS:
        if not any(get(p, tool) for p in ("idle", "main", "long")):
            continue
        cells = [tool]
        for part in ("idle", "main", "long"):
            runs = get(part, tool)
            if not runs:
                cells += ["-", ""]
                continue
            st, flag = summary(runs)
            if st is None:
                # The hang at exit: the downloads were done, so the RSS up to the stop still counts.
                st, _ = summary(runs, lambda r: r["status"] == "TIMEOUT-files-ok" and r["rss"] > 0)
                if st is None:
                    cells += ["FAILED", flag]
                    continue
                starred = True
                cells += [f"{st['rss']:.1f}*", flag]
                continue
            extra = f"in {st['e']:.1f} s, CPU {st['cpu']:.1f} s" if part == "long" else ""
            cells += [f"{st['rss']:.1f}", extra]
        rows.append(cells)
    out += table(["tool", "1 URL", "", f"{args.files} URLs", "",
                  f"{n_long} URLs" if n_long else "long list", ""], rows)
    out.append("   1 URL: median of the idle runs; the list: median of part 1; long list: one run, written")
    out.append("   under work/ and deleted after. aria2c-deferred = aria2c --deferred-input=true (reads the")
    out.append("   list as it goes; plain aria2c reads it all at the start).")
    if starred:
        out.append("   * the run timed out after every file was complete (the tool did not exit); peak RSS up to")
        out.append("     the SIGINT that stopped it.")

    bad = [(p, t, r) for (p, t), rs in groups.items() for r in rs if r["status"] != "ok"]
    if bad:
        out.append("")
        out.append("!!! Runs that failed, timed out or wrote wrong files:")
        for p, t, r in bad:
            out.append(f"!!!   {p} {t}: {r['status']} (exit {r['rc']}, {r['e']:.1f} s, {r['reqs']} requests)")
    print("\n".join(out))


if __name__ == "__main__":
    main()
