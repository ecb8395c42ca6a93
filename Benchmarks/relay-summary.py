#!/usr/bin/env python3
"""Turn relay-bench.sh's per-run TSV into the Markdown report and a TSV of medians.

Runs (one line each): case, path (relay|loopback), tool, round, elapsed_s, user_s, sys_s,
maxrss_kib, status, requests, connections, resumed (TLS sessions resumed), protocols, non-2xx
answers, bytes nginx sent, exit, TLS versions, haul's own count ("-" if none), connections the
relay accepted ("-" on loopback), the relay's CPU seconds ("-" on loopback).
Cases: case, scheme, MiB (0 for small files), files, k ("default" or a number; jobs for small
files), rtt_ms, conn_rate, shared_rate ("-" for none), description, relay command, probe times.
Notes: case, path, tool, text; a text starting with "-:" means the tool did not run there.
Commands: case, path, tool, the command line as run.

Medians over the runs whose status is "ok"; any other status is listed loudly and left out.
"""
import argparse
import math
import re
import statistics
from collections import OrderedDict

from summary_lib import md_table, run_summary, versions_table


def rate_mib(text):
    """relay.py's RATE ("4M", "512K", "1G", bytes) in MiB/s; None for "-"."""
    if text == "-":
        return None
    m = re.fullmatch(r"(\d+(?:\.\d*)?)([KMG]?)", text, re.IGNORECASE)
    value = float(m.group(1))
    return value * {"": 1 / 1048576, "k": 1 / 1024, "m": 1, "g": 1024}[m.group(2).lower()]


def load_runs(path):
    groups = OrderedDict()  # (case, path, tool) -> runs
    with open(path) as f:
        for line in f:
            (case, where, tool, rnd, e, u, s, m, status, reqs, conns, resumed, proto, non2xx, sent,
             rc, tls, says, relay_conns, relay_cpu) = line.rstrip("\n").split("\t")
            groups.setdefault((case, where, tool), []).append(dict(
                round=rnd, e=float(e), cpu=float(u) + float(s), rss=int(m) / 1024, status=status,
                reqs=int(reqs), conns=int(conns), resumed=int(resumed), proto=proto,
                non2xx=int(non2xx), sent=int(sent), rc=int(rc), tls=tls, says=says,
                relay_conns=None if relay_conns == "-" else int(relay_conns),
                relay_cpu=None if relay_cpu == "-" else float(relay_cpu)))
    return groups


def load_keyed(path):
    out = OrderedDict()  # (case, path, tool) -> [text]
    with open(path) as f:
        for line in f:
            case, where, tool, text = line.rstrip("\n").split("\t", 3)
            out.setdefault((case, where, tool), []).append(text)
    return out


def load_cases(path):
    cases = OrderedDict()
    with open(path) as f:
        for line in f:
            (case, scheme, mb, files, k, rtt, conn, shared, what, relay_cmd,
             probe) = line.rstrip("\n").split("\t")
            cases[case] = dict(scheme=scheme, mb=int(mb), files=int(files), k=k, rtt=float(rtt),
                               conn=conn, shared=shared, what=what, relay_cmd=relay_cmd,
                               probe=probe)
    return cases


def ideal(c, tool, default_k):
    """(seconds, how) through the relay, or (None, why not). Large files: size / bandwidth, the
    bandwidth K x the per-connection cap and/or the shared cap, plus the round trips before the
    first byte (TCP connect, TLS 1.3 handshake on https, the request). Small files: every request
    one round trip, JOBS at a time, after connect and handshake; no cap."""
    rtt = c["rtt"] / 1000
    setup = 3 if c["scheme"] == "https" else 2  # RTTs to the first byte
    if c["files"]:
        turns = math.ceil(c["files"] / int(c["k"]))
        return (turns + setup - 1) * rtt, f"{turns} request turns + {setup - 1} RTT setup"
    k = default_k.get(tool) if c["k"] == "default" else int(c["k"])
    if k is None:
        return None, "default connections unknown"
    conn, shared = rate_mib(c["conn"]), rate_mib(c["shared"])
    bw = [x for x in (k * conn if conn else None, shared) if x]
    if not bw:
        return None, "no cap"
    return c["mb"] / min(bw) + setup * rtt, f"{c['mb']} MiB / {min(bw):g} MiB/s + {setup} RTT"


def summary(runs):
    st, flag = run_summary(runs)
    if st is None:
        return st, flag
    good = [r for r in runs if r["status"] == "ok"]
    st["each"] = " ".join(f"{r['e']:.2f}" for r in good)
    relay = [r["relay_conns"] for r in good if r["relay_conns"] is not None]
    st["relay_conns"] = statistics.median(relay) if relay else None
    st["relay_conns_text"] = None if not relay else \
        f"{relay[0]}" if min(relay) == max(relay) else f"{min(relay)}-{max(relay)}"
    cpu = [r["relay_cpu"] for r in good if r["relay_cpu"] is not None]
    st["relay_cpu"] = statistics.median(cpu) if cpu else None
    return st, flag


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for name in ("--runs", "--notes", "--versions", "--commands", "--cases", "--tools", "--paths",
                 "--default-k", "--machine", "--tsv"):
        ap.add_argument(name, required=True)
    for name in ("--rounds", "--file-size"):
        ap.add_argument(name, type=int, required=True)
    args = ap.parse_args()
    groups = load_runs(args.runs)
    notes = load_keyed(args.notes)
    commands = load_keyed(args.commands)
    cases = load_cases(args.cases)
    tools = args.tools.split()
    paths = args.paths.split()
    default_k = {t: int(k) for t, k in (w.split("=") for w in args.default_k.split())}

    out = ["# Haul and its peers through a latency relay (relay.py)", "",
           f"Machine: {args.machine}.", "",
           f"Medians of {args.rounds} round{'s' * (args.rounds != 1)} (interleaved: every case and "
           "tool once per round, the first tool rotating), over the runs that passed the check "
           "(exit 0, exact size and SHA-256 of the file, or of every small file). nginx on "
           "127.0.0.1 with one worker, HTTP/2 offered on the TLS port (ALPN), a private CA every "
           "tool trusts. *relay*: through a fresh `relay.py` per run with the case's settings (RTT, "
           "caps); *loopback*: straight to nginx.", ""]
    out += versions_table(args.versions)

    out += ["## Cases", ""]
    rows = []
    for name, c in cases.items():
        if c["k"] == "default":
            parts = []
            for tool in tools:
                sec, _ = ideal(c, tool, default_k)
                if sec is not None:
                    parts.append(f"{tool} {sec:.1f}")
            ideal_text = "at each tool's default connections: " + ", ".join(parts)
        else:
            sec, how = ideal(c, None, default_k)
            ideal_text = f"{sec:.2f} s ({how})" if sec is not None else "-"
        probe = c["probe"].split()
        probe_text = "-" if len(probe) != 3 or probe[0] == "-" else \
            f"{float(probe[0]) * 1000:.0f} / {float(probe[1]) * 1000:.0f} / {float(probe[2]) * 1000:.0f} ms"
        if c["scheme"] != "https" and probe_text != "-":
            probe_text = probe_text.replace(" / 0 / ", " / - / ")
        rows.append([f"`{name}`", c["what"], f"{c['rtt']:g} ms",
                     c["conn"] if c["conn"] != "-" else "none",
                     c["shared"] if c["shared"] != "-" else "none", ideal_text,
                     f"`{c['relay_cmd']}`", probe_text])
    out += md_table(["case", "what", "RTT", "per connection", "shared", "ideal through the relay",
                     "relay command", "probe: connect / TLS / first byte"], rows, right=set())
    out.append("")

    tsv = ["\t".join(["case", "path", "tool", "good_runs", "runs", "median_s", "ideal_s",
                      "median_over_ideal", "mib_s_or_files_s", "cpu_s", "peak_rss_mib", "requests",
                      "connections", "relay_connections", "tls_resumed", "protocols",
                      "haul_time_ratio", "relay_cpu_s", "note"])]
    rows = []
    for name, c in cases.items():
        for where in paths:
            stats = {}
            for tool in tools:
                runs = groups.get((name, where, tool))
                if runs:
                    stats[tool] = summary(runs)
            haul = stats.get("haul", (None, ""))[0]
            for tool in tools:
                text = "; ".join(notes.get((name, where, tool), []))
                lead = [f"`{name}`", where, tool]
                if tool not in stats:
                    if text:
                        why = text[2:].strip() if text.startswith("-:") else text
                        rows.append(lead + ["-"] + [""] * 12 + [why])
                        tsv.append("\t".join([name, where, tool, "0", "0"] + ["-"] * 13 + [why]))
                    continue
                st, flag = stats[tool]
                if st is None:
                    rows.append(lead + ["FAILED"] + [""] * 10 + [flag, "", text])
                    tsv.append("\t".join([name, where, tool, "0", flag.split("/")[1].split()[0]]
                                         + ["FAILED"] * 13 + [text]))
                    continue
                sec = None
                if where == "relay":
                    sec, _ = ideal(c, tool, default_k)
                ideal_s = f"{sec:.2f}" if sec else "-"
                x_ideal = f"{st['e'] / sec:.2f}" if sec else "-"
                rate = f"{c['mb'] / st['e']:.1f}" if c["mb"] else f"{c['files'] / st['e']:.0f}"
                ratio = f"{haul['e'] / st['e']:.2f}" if haul else "-"
                conns = st["conns_text"]
                if c["scheme"] == "https" and st["resumed"]:
                    conns += f" ({st['resumed']:g} resumed)"
                extra = []
                k = default_k.get(tool) if c["k"] == "default" else int(c["k"])
                if not c["files"] and k and st["conns"] < k:
                    extra.append(f"used {st['conns']:g} connection{'s' * (st['conns'] != 1)}, not {k}")
                if c["files"] and sec and st["e"] < sec:
                    extra.append(f"under the ideal: more than {c['k']} requests in flight")
                if st["relay_conns"] is not None and st["relay_conns"] != st["conns"]:
                    extra.append(f"relay accepted {st['relay_conns_text']} connections")
                if st["non2xx"]:
                    extra.append(f"{st['non2xx']} answers not 200/206 in a run")
                if st["says"]:
                    extra.append(f"haul -v: {st['says']}")
                text = "; ".join(([text] if text else []) + extra)
                relay_cpu = f"{st['relay_cpu']:.2f}" if st["relay_cpu"] is not None else "-"
                rows.append(lead + [f"{st['e']:.2f}", st["each"], ideal_s, x_ideal, rate,
                                    f"{st['cpu']:.2f}", f"{st['rss']:.1f}", st["reqs_text"], conns,
                                    st["proto"], ratio, flag, relay_cpu, text])
                tsv.append("\t".join([name, where, tool, flag.split("/")[0],
                                      flag.split("/")[1].split()[0], f"{st['e']:.3f}",
                                      f"{sec:.3f}" if sec else "-", x_ideal, rate,
                                      f"{st['cpu']:.3f}", f"{st['rss']:.1f}", f"{st['reqs']:g}",
                                      f"{st['conns']:g}",
                                      f"{st['relay_conns']:g}" if st["relay_conns"] is not None else "-",
                                      f"{st['resumed']:g}", st["proto"], ratio, relay_cpu, text]))
    out += ["## Results", ""]
    out += md_table(["case", "path", "tool", "median s", "each run s", "ideal s", "x ideal",
                     "MiB/s or files/s", "CPU s", "peak RSS MiB", "requests",
                     "connections (= TLS handshakes on https)", "protocol", "haul time / tool",
                     "good runs", "relay CPU s", "notes"], rows, right={3, 5, 6, 7, 8, 9, 10, 11, 13, 15})
    out.append("")

    out += ["## Columns", "",
            "- **median s**: wall time of one download (bash's microsecond clock around the run); "
            "**each run s**: every good run, in round order.",
            "- **ideal s**: through the relay, size / (connections x per-connection cap, or the "
            "shared cap) + the round trips before the first byte (TCP connect, TLS 1.3 handshake, "
            "the request: 3 RTT on https, 2 on http); for the small files, ceil(files / jobs) request "
            "turns + 2 RTT. In the default case the connections are the tool's default ones. "
            "**x ideal** = median / ideal.",
            "- **CPU s**: user + sys CPU of the tool (GNU time); nginx's and the relay's are not in it. "
            "**relay CPU s**: the relay process's (user + sys) during the run, to see whether it could "
            "have been the bottleneck (it is single-threaded Python).",
            "- **peak RSS MiB**: GNU time's %M, the largest resident set of the tool's largest process.",
            "- **requests**, **connections**: from nginx's access log of the run: its lines, and the "
            "distinct $connection serial numbers among them (on https each is one TLS handshake; "
            "'(N resumed)' counts session resumptions). Medians; a range in brackets when runs "
            "differed. A connection that never completed a request is not in the log: the notes "
            "say 'relay accepted N connections' when the relay's count differs.",
            "- **protocol**: $server_protocol of the run's requests and, on https, the TLS version.",
            "- **haul time / tool**: haul's median time / this tool's, same case and path; below 1, "
            "haul was faster.",
            "- **good runs**: runs that passed the check / runs; failures are named after '!!!'.",
            "- **-**: the tool cannot do the case (the notes say why); it was not run.",
            ""]

    if commands:
        out += ["## Commands", "",
                "As run (RELAY is the relay's port, TLS_PORT and PORT nginx's; work/ is "
                "Benchmarks/work/relay/; a fresh HAUL_HOME and output directory every run).", ""]
        for (name, where, tool), texts in commands.items():
            out.append(f"- `{name}` {where} {tool}: `{texts[0]}`")
        out.append("")

    bad = [(key, r) for key, rs in groups.items() for r in rs if r["status"] != "ok"]
    if bad:
        out += ["## !!! Runs that failed or wrote a wrong file", ""]
        for (name, where, tool), r in bad:
            out.append(f"- !!! {name} {where} {tool} round {r['round']}: {r['status']} "
                       f"(exit {r['rc']}, {r['e']:.1f} s, {r['reqs']} requests, "
                       f"{r['sent'] / 1048576:.1f} MiB sent by nginx)")
        out.append("")
    print("\n".join(out))
    with open(args.tsv, "w") as f:
        f.write("\n".join(tsv) + "\n")


if __name__ == "__main__":
    main()
