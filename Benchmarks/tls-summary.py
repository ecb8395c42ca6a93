#!/usr/bin/env python3
"""Turn tls-bench.sh's per-run TSV into the Markdown report and a TSV of medians.

Runs (one line each): part (large|small), scheme, k (connections, or files for "small"), tool,
round, elapsed_s, user_s, sys_s, maxrss_kib, status, requests, connections, resumed (TLS
sessions resumed among those connections), protocols, non-2xx answers, bytes nginx sent, exit.
Notes: part, scheme, k, tool, text; a text starting with "n/a" means the tool did not run there.
Commands: part, scheme, k, tool, the command line as run.

Medians over the runs whose status is "ok"; any other status is listed loudly and left out
(a short or wrong file is no speed record).
"""
import argparse
from collections import OrderedDict

from summary_lib import md_table, run_summary, versions_table


def load_runs(path):
    groups = OrderedDict()  # (part, scheme, k, tool) -> runs
    with open(path) as f:
        for line in f:
            (part, scheme, k, tool, rnd, e, u, s, m, status, reqs, conns, resumed, proto, non2xx,
             sent, rc, tls, says) = line.rstrip("\n").split("\t")
            groups.setdefault((part, scheme, int(k), tool), []).append(dict(
                round=rnd, e=float(e), cpu=float(u) + float(s), rss=int(m) / 1024, status=status,
                reqs=int(reqs), conns=int(conns), resumed=int(resumed), proto=proto,
                non2xx=int(non2xx), sent=int(sent), rc=int(rc), tls=tls, says=says))
    return groups


def load_keyed(path):
    out = OrderedDict()  # (part, scheme, k, tool) -> [text]
    with open(path) as f:
        for line in f:
            part, scheme, k, tool, text = line.rstrip("\n").split("\t", 4)
            out.setdefault((part, scheme, int(k), tool), []).append(text)
    return out


def summary(runs):
    return run_summary(runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for name in ("--runs", "--notes", "--versions", "--commands", "--tools", "--small-tools",
                 "--machine", "--tsv"):
        ap.add_argument(name, required=True)
    for name in ("--size-mb", "--rounds", "--jobs", "--file-size"):
        ap.add_argument(name, type=int, required=True)
    args = ap.parse_args()
    groups = load_runs(args.runs)
    notes = load_keyed(args.notes)
    commands = load_keyed(args.commands)
    tools = {"large": args.tools.split(), "small": args.small_tools.split()}

    out = ["# Haul and its peers: one large file and many small files, plain and TLS", "",
           f"Machine: {args.machine}.", "",
           f"Medians of {args.rounds} round{'s' * (args.rounds != 1)} (interleaved: every scenario and "
           "tool once per round, the first tool rotating), over the runs that passed the check "
           "(exit 0, exact size, SHA-256 of the file, or of every small file, equal to the source's). "
           "nginx on 127.0.0.1 with one worker, HTTP/2 offered on the TLS port (ALPN), a private CA "
           "every tool trusts (axel and hf_transfer through SSL_CERT_FILE).", ""]
    out += versions_table(args.versions)

    scenarios = OrderedDict()  # (part, scheme, k) -> None, in run order, notes included
    for key in list(groups) + list(notes):
        scenarios.setdefault(key[:3], None)
    tsv = ["\t".join(["part", "scheme", "k", "tool", "good_runs", "runs", "median_s", "mib_s_or_files_s",
                      "cpu_s", "peak_rss_mib", "requests", "connections", "tls_resumed", "protocols",
                      "haul_time_ratio", "note"])]
    for part in ("large", "small"):
        for (p, scheme, k) in [s for s in scenarios if s[0] == part]:
            if part == "large":
                out.append(f"## {args.size_mb} MiB over {scheme}, {k} connection{'s' * (k != 1)}")
            else:
                out.append(f"## {k} files of {args.file_size // 1024} KiB over {scheme}"
                           f"{' (h2 offered)' if scheme == 'https' else ''}, {args.jobs} at once")
            out.append("")
            stats = {}
            for tool in tools[part]:
                runs = groups.get((part, scheme, k, tool))
                if runs:
                    stats[tool] = summary(runs)
            haul = stats.get("haul", (None, ""))[0]
            rows = []
            for tool in tools[part]:
                text = "; ".join(notes.get((part, scheme, k, tool), []))
                if tool not in stats:
                    if text:
                        rows.append([tool] + ["n/a"] + [""] * 8 + [text])
                        tsv.append("\t".join([part, scheme, str(k), tool, "0", "0"] + ["n/a"] * 9 + [text]))
                    continue
                st, flag = stats[tool]
                if st is None:
                    rows.append([tool, "FAILED", "", "", "", "", "", "", "", flag, text])
                    tsv.append("\t".join([part, scheme, str(k), tool, "0", flag.split("/")[1].split()[0]]
                                         + ["FAILED"] * 9 + [text]))
                    continue
                rate = args.size_mb / st["e"] if part == "large" else k / st["e"]
                ratio = f"{haul['e'] / st['e']:.2f}" if haul else "n/a"
                conns = st["conns_text"]
                if scheme == "https" and st["resumed"]:
                    conns += f" ({st['resumed']:g} resumed)"
                extra = []
                if part == "large" and st["conns"] < k:
                    extra.append(f"used {st['conns']:g} connection{'s' * (st['conns'] != 1)}, not {k}")
                if st["non2xx"]:
                    extra.append(f"{st['non2xx']} answers not 200/206 in a run")
                if st["says"]:
                    extra.append(f"haul -v: {st['says']}")
                text = "; ".join(([text] if text else []) + extra)
                rows.append([tool, f"{st['e']:.2f}", f"{rate:.0f}", f"{st['cpu']:.2f}", f"{st['rss']:.1f}",
                             st["reqs_text"], conns, st["proto"], ratio, flag, text])
                tsv.append("\t".join([part, scheme, str(k), tool, flag.split("/")[0],
                                      flag.split("/")[1].split()[0], f"{st['e']:.3f}", f"{rate:.1f}",
                                      f"{st['cpu']:.3f}", f"{st['rss']:.1f}", f"{st['reqs']:g}",
                                      f"{st['conns']:g}", f"{st['resumed']:g}", st["proto"], ratio, text]))
            conn_head = "connections (= TLS handshakes)" if scheme == "https" else "connections"
            out += md_table(["tool", "median s", "MiB/s" if part == "large" else "files/s", "CPU s",
                             "peak RSS MiB", "requests", conn_head, "protocol", "haul time / tool",
                             "good runs", "notes"], rows, right={1, 2, 3, 4, 5, 6, 8})
            out.append("")

    out += ["## Columns", "",
            "- **median s**: wall time of one download (bash's microsecond clock around the run).",
            "- **MiB/s**, **files/s**: size or file count / median time.",
            "- **CPU s**: user + sys CPU of the tool (GNU time; nginx's CPU is not included).",
            "- **peak RSS MiB**: GNU time's %M, the largest resident set of the tool's largest process "
            "(hf_transfer's includes the Python interpreter it runs in).",
            "- **requests**, **connections**: from nginx's access log of the run: its lines, and the "
            "distinct $connection serial numbers among them. On https every connection is one TLS "
            "handshake; '(N resumed)' counts those nginx logged as session resumptions "
            "($ssl_session_reused). A connection that never completed a request is not in the log. "
            "Medians; a range in brackets when the runs differed.",
            "- **protocol**: $server_protocol of the run's requests (HTTP/2.0: the tool took the h2 "
            "nginx offered) and, on https, the TLS version ($ssl_protocol).",
            "- **haul time / tool**: haul's median time / this tool's; below 1, haul was faster.",
            "- **good runs**: runs that passed the check / runs; failures are named after '!!!'.",
            ""]

    cmds = OrderedDict()
    for (part, scheme, k, tool), texts in commands.items():
        cmds[(part, tool)] = (scheme, k, texts[0])  # the last scenario run: the widest
    if cmds:
        out += ["## Commands (the last scenario of each; K, files and CA options vary)", ""]
        for (part, tool), (scheme, k, text) in cmds.items():
            what = f"{scheme}, K={k}" if part == "large" else f"{scheme}, {k} files"
            out.append(f"- {part} {tool} ({what}): `{text}`")
        out.append("")

    bad = [(key, r) for key, rs in groups.items() for r in rs if r["status"] != "ok"]
    if bad:
        out += ["## !!! Runs that failed or wrote a wrong file", ""]
        for (part, scheme, k, tool), r in bad:
            out.append(f"- !!! {part} {scheme} {k} {tool} round {r['round']}: {r['status']} "
                       f"(exit {r['rc']}, {r['e']:.1f} s, {r['reqs']} requests)")
        out.append("")
    print("\n".join(out))
    with open(args.tsv, "w") as f:
        f.write("\n".join(tsv) + "\n")


if __name__ == "__main__":
    main()
