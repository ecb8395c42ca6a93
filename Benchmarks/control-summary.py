#!/usr/bin/env python3
"""control-summary.py: the markdown report of control-bench.py, from its JSON.

    python3 Benchmarks/control-summary.py [Benchmarks/results/control-bench.json]

Prints the tables and writes them, with the settings and binaries, next to the JSON (.md).
control-bench.py runs it at the end; run it again to re-render a run's figures.
"""
import json, os, sys

LATENCY_CALLS = ["tellStatus", "getGlobalStat", "tellActive", "tellWaiting"]


def ms(value):
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def speed(window):
    """MiB/s, and for how long neither big download was active (a later download had the slot)."""
    stalled = window.get("stalled_s", 0)
    return f"{window['mib_s']:.0f}" + (f" (none active {stalled:.0f} of {window['seconds']:.0f} s)" if stalled >= 1 else "")


def report(results, daemons, versions, settings):
    names = ("ADDS", "BATCH", "SLOW", "SLOW_RATE", "HEAVY", "J1000", "QUEUE", "QUEUE_CALLS", "CLIENTS", "SETTLE")
    ADDS, BATCH, SLOW, SLOW_RATE, HEAVY, J1000, QUEUE, QUEUE_CALLS, CLIENTS, SETTLE = (settings[k] for k in names)
    lines, head = [], "| | " + " | ".join(daemons) + " |\n|---|" + "---:|" * len(daemons)

    def ok(phase, name):
        r = results.get(phase, {}).get(name)
        return r if r and "error" not in r else None

    def row(label, cell, phase):
        cells = []
        for name in daemons:
            r = results.get(phase, {}).get(name)
            if r and "error" in r:
                cells.append("failed")
                continue
            try:
                cells.append(cell(r) if r else "n/a")
            except KeyError:
                cells.append("-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    if "main" in results:
        lines += [f"### main: {ADDS:,} adds each way, `-j {SLOW + 1}`, {SLOW} slow downloads at {SLOW_RATE}/s each plus one "
                  f"16-connection download at full speed; one client, then {CLIENTS} concurrent clients"
                  + ("" if settings.get("ADDS_WITH_RING") else f" (the adds at `-j {SLOW}`, before the 16-connection download starts)"),
                  "", head]
        m1, m8 = (lambda c: lambda r: r[f"clients{c}"]["methods"])(1), (lambda r: r[f"clients{CLIENTS}"]["methods"])
        row("`aria2.addUri`, one per request", lambda r: f"{r['adds']['one']['rate']:,.0f}/s", "main")
        row(f"`aria2.addUri`, one per request, {CLIENTS} clients at once",
            lambda r: f"{r['adds']['one_clients']['rate']:,.0f}/s" if "one_clients" in r["adds"] else "-", "main")
        row(f"`system.multicall` of {BATCH} `addUri`", lambda r: f"{r['adds']['multicall']['rate']:,.0f}/s", "main")
        row(f"REST batch add ({BATCH} per request)", lambda r: f"{r['adds']['rest']['rate']:,.0f}/s", "main")
        row("p99 tellStatus / getGlobalStat / tellActive / tellWaiting(0,1000), 1 client",
            lambda r: " / ".join(ms(m1(r)[m]["p99_ms"]) for m in LATENCY_CALLS) + " ms", "main")
        row(f"req/s, {CLIENTS} clients, tellStatus / tellActive",
            lambda r: " / ".join(f"{m8(r)[m]['rate']:,.0f}" for m in ("tellStatus", "tellActive")), "main")
        row("the 16-connection download's speed: alone / 1 client / 8 clients", lambda r: " / ".join(
            speed(x) for x in (r["alone"], r["clients1"]["big"], r[f"clients{CLIENTS}"]["big"])) + " MiB/s", "main")
        row("peak RSS", lambda r: f"{r['peak_rss_mib']:.0f} MiB", "main")
        row("*req/s, 1 client, the same four*", lambda r: " / ".join(f"{m1(r)[m]['rate']:,.0f}" for m in LATENCY_CALLS), "main")
        row(f"*p99, {CLIENTS} clients, tellStatus / getGlobalStat / tellActive*",
            lambda r: " / ".join(ms(m8(r)[m]["p99_ms"]) for m in ("tellStatus", "getGlobalStat", "tellActive")) + " ms", "main")
        row(f"*req/s, {CLIENTS} clients, getGlobalStat*", lambda r: f"{m8(r)['getGlobalStat']['rate']:,.0f}", "main")
        row(f"*client CPU (cores), 1 client tellStatus / {CLIENTS} clients tellStatus*", lambda r: " / ".join(
            f"{x['tellStatus']['client_cpu']:.2f}" for x in (m1(r), m8(r))), "main")
        row(f"*daemon CPU (cores): alone / {CLIENTS} clients tellStatus*", lambda r: " / ".join(
            f"{x:.2f}" for x in (r["alone"]["daemon_cpu"], m8(r)["tellStatus"]["big"]["daemon_cpu"])), "main")
        row("*big downloads finished / s with none of them active / downloads waiting at the end*",
            lambda r: f"{r['big_finished']} / {r['big_stalled_s']:.0f} s / {r['waiting']:,}", "main")
        row("*the ring's add at position 0 (one `addUri`, or `addUri` and `changePosition`): p50 / p99 / max*",
            lambda r: " / ".join(ms(r["ring_add_ms"][k]) for k in ("p50", "p99", "max")) + " ms", "main")
        row("*the ring's client from a completion to the next add, longest: removeDownloadResult / delete the file / add*",
            lambda r: " / ".join(ms(r["ring_cycle_max_ms"][k]) for k in ("removeDownloadResult", "delete_file", "add")) + " ms", "main")
        a, h = ok("main", "aria2c"), ok("main", "haul")
        if h:
            one, batch = h["adds"]["one"]["rate"], max(h["adds"]["multicall"]["rate"], h["adds"]["rest"]["rate"])
            lines += ["", f"Target, adds at least aria2c's rate (>= 6,000/s one per request, >= 30,000/s by multicall or the "
                      f"REST batch): haul {one:,.0f}/s and {batch:,.0f}/s: "
                      f"{'met' if one >= 6000 and batch >= 30000 else 'NOT met'}"
                      + (f" (aria2c here: {a['adds']['one']['rate']:,.0f}/s and {a['adds']['multicall']['rate']:,.0f}/s)" if a else "")]
        lines.append("")
    if "heavy" in results:
        lines += [f"### heavy: p99 with {CLIENTS} clients while {HEAVY} slow downloads and one 16-connection download run "
                  f"(`-j {HEAVY + 1}`)", "", head]
        m8 = lambda r: r[f"clients{CLIENTS}"]["methods"]
        share = lambda r: r[f"clients{CLIENTS}"]["big"]["mib_s"] / r["alone"]["mib_s"] if r["alone"]["mib_s"] else 0.0
        row("p99 tellStatus / getGlobalStat / tellActive",
            lambda r: " / ".join(ms(m8(r)[m]["p99_ms"]) for m in ("tellStatus", "getGlobalStat", "tellActive")) + " ms", "heavy")
        row("req/s tellStatus / getGlobalStat / tellActive",
            lambda r: " / ".join(f"{m8(r)[m]['rate']:,.0f}" for m in ("tellStatus", "getGlobalStat", "tellActive")), "heavy")
        row("the 16-connection download: alone / under the clients (share)", lambda r: (
            f"{speed(r['alone'])} / {speed(r[f'clients{CLIENTS}']['big'])} MiB/s ({share(r):.0%})"), "heavy")
        row("peak RSS", lambda r: f"{r['peak_rss_mib']:.0f} MiB", "heavy")
        row("*big downloads finished / s with none of them active*",
            lambda r: f"{r['big_finished']} / {r['big_stalled_s']:.0f} s", "heavy")
        h, a = ok("heavy", "haul"), ok("heavy", "aria2c")
        if h:
            worst = max(m8(h)[m]["p99_ms"] for m in ("tellStatus", "getGlobalStat", "tellActive"))
            kept = share(h) >= share(a) if a else None
            lines += ["", f"Target, p99 under 50 ms and at least aria2c's share of the speed: haul's worst p99 {ms(worst)} ms "
                      f"({'met' if worst < 50 else 'NOT met'}), share {share(h):.0%}"
                      + (f" against aria2c's {share(a):.0%} ({'met' if kept else 'NOT met'})" if a else "")]
        lines.append("")
    if "j1000" in results:
        lines += [f"### j1000: `-j {J1000}`, {J1000:,} slow downloads added by multicall", "", head]
        row("the adds took / all active after the first add", lambda r: f"{r['added_s']:.2f} / {r['active_s']:.2f} s", "j1000")
        row(f"RSS at {J1000:,} active / {SETTLE:.0f} s later / peak",
            lambda r: f"{r['rss_active_mib']:.0f} / {r['rss_settled_mib']:.0f} / {r['peak_rss_mib']:.0f} MiB", "j1000")
        row(f"active and total speed {SETTLE:.0f} s later", lambda r: f"{r['active_settled']:,}, {r['speed_mib_s']:.1f} MiB/s", "j1000")
        h, a = ok("j1000", "haul"), ok("j1000", "aria2c")
        if h:
            lines += ["", f"Target, all active within 1 s, RSS no more than aria2c's: haul {h['active_s']:.2f} s "
                      f"({'met' if h['active_s'] <= 1 else 'NOT met'}), {h['rss_settled_mib']:.0f} MiB"
                      + (f" against aria2c's {a['rss_settled_mib']:.0f} MiB "
                         f"({'met' if h['rss_settled_mib'] <= a['rss_settled_mib'] else 'NOT met'})" if a else "")]
        lines.append("")
    if "queue" in results:
        lines += [f"### queue: one download running, {QUEUE:,} waiting; {QUEUE_CALLS} calls each, one client", "", head]
        row("adds (multicall) to fill the queue", lambda r: f"{r['add_rate']:,.0f}/s", "queue")
        for op, label in (("POS_SET", "`changePosition` POS_SET"), ("POS_CUR", "`changePosition` POS_CUR"),
                          ("addUri@5", "`addUri` at position 5")):
            row(f"{label}, p50 / p99 / mean", lambda r, op=op: " / ".join(ms(r[op][k]) for k in ("p50_ms", "p99_ms", "mean_ms")) + " ms",
                "queue")
        lines.append("")
    for phase, by_daemon in results.items():
        lines += [f"{phase} {name} failed: {r['error']}" for name, r in by_daemon.items() if "error" in r]
    lines += ["Versions: " + "; ".join(f"{k} {v}" for k, v in versions.items()),
              f"Machine: {os.cpu_count()} cores, load average at the start {versions.get('load', '?')}"]
    return "\n".join(lines) + "\n"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "results/control-bench.json")
    with open(path) as f:
        run = json.load(f)
    daemons = run.get("daemons") or [d for d in ("haul", "aria2c", "aria2-next") if any(d in r for r in run["results"].values())]
    text = report(run["results"], daemons, run["versions"], run["settings"])
    header = (f"# control-bench ({run.get('date', '?')}, {run.get('seconds', 0):.0f} s)\n\n"
              f"Settings: {json.dumps(run['settings'])}; binaries: {json.dumps(run['binaries'])}\n\n")
    with open(os.path.splitext(path)[0] + ".md", "w") as f:
        f.write(header + text)
    print(text, end="")


if __name__ == "__main__":
    main()
