"""What the benchmark summaries share: medians over a tool's good runs, and Markdown tables.

Imported by tls-summary.py, relay-summary.py and mirror-summary.py (run from any directory: Python
puts the script's own directory first on the import path).
"""
import statistics


def run_summary(runs):
    """Medians over the runs whose status is "ok": elapsed, CPU, RSS, requests, connections (with
    their range when the runs differ), resumed TLS sessions, protocols and TLS versions, the most
    non-2xx answers, and the last thing haul said of its connections. Returns (stats or None, flag),
    the flag being "good/all" and, after "!!!", the statuses of the bad runs."""
    good = [r for r in runs if r["status"] == "ok"]
    bad = [r["status"] for r in runs if r["status"] != "ok"]
    flag = f"{len(good)}/{len(runs)}" + (" !!! " + ", ".join(bad) if bad else "")
    if not good:
        return None, flag
    med = lambda key: statistics.median(r[key] for r in good)
    st = dict(e=med("e"), cpu=med("cpu"), rss=med("rss"), reqs=med("reqs"), conns=med("conns"),
              resumed=med("resumed"), non2xx=max(r["non2xx"] for r in good),
              proto=", ".join(sorted({p for r in good for p in r["proto"].split("+")} |
                                     {t for r in good for t in r["tls"].split("+") if t != "-"})),
              says=next((r["says"] for r in reversed(good) if r["says"] != "-"), None))
    for key in ("reqs", "conns"):
        lo, hi = min(r[key] for r in good), max(r[key] for r in good)
        st[key + "_text"] = f"{st[key]:g}" if lo == hi else f"{st[key]:g} ({lo}-{hi})"
    return st, flag


def md_table(header, rows, right):
    """Markdown table; columns whose index is in `right` are right-aligned."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def versions_table(path):
    """The versions file (one `program<TAB>version` line each) as a Markdown table, and a blank line."""
    out = ["| program | version |", "|---|---|"]
    with open(path) as f:
        for line in f:
            name, version = line.rstrip("\n").split("\t", 1)
            out.append(f"| {name} | {version} |")
    return out + [""]
