#!/usr/bin/env bash
# footprint.sh: the peak resident memory of haul next to curl, wget and aria2c, in the three
# cases issue 33 sets targets for: printing the version, one large file over one plain HTTP
# connection, and the same file over 64 TLS connections (aria2c: 16, its most; curl and wget
# have one). Rounds are interleaved; the table shows the median and the range of each.
#
# Peak RSS counts the pages of the program's file it touched. The kernel keeps those pages, and
# maps them in 64 KiB windows from the page cache, so a run right after another reads lower or
# higher than a cold one: as root, the page cache is dropped before every run (DROP_CACHES=0
# keeps it). Every download is checked (size and SHA-256).
#
# Usage:  bash Benchmarks/footprint.sh
#         SIZE_MB=256 ROUNDS=3 bash Benchmarks/footprint.sh
# Env:    SIZE_MB (1024) ROUNDS (5) TOOLS ("haul curl wget aria2c") DROP_CACHES (1 as root)
#         HAUL_BIN (default: Packaging/package.sh's build, stripped into the work directory)
set -euo pipefail

SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-5}
TOOLS=${TOOLS:-"haul curl wget aria2c"}
DROP_CACHES=${DROP_CACHES:-$((EUID == 0 ? 1 : 0))}
for v in SIZE_MB ROUNDS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
for t in $TOOLS; do
    [[ " haul curl wget aria2c " == *" $t "* ]] || { echo "TOOLS: any of haul curl wget aria2c; got '$t'" >&2; exit 2; }
done

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work/footprint   # git-ignored
RESULTS=$BENCH_DIR/results       # git-ignored
NGX=$WORK/nginx
CERTS=$WORK/certs
CA=$CERTS/ca.pem
OUT=$WORK/out
RUNS=$WORK/runs.tsv
REPORT=$RESULTS/footprint-$(date +%Y%m%d-%H%M%S).md
mkdir -p "$WORK" "$RESULTS" "$NGX"
# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

NGINX_PID=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_nginx
    rm -rf "$OUT" "$WORK"/haul-home 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

warn_if_loaded
install_missing "nginx curl wget aria2c openssl /usr/bin/time sha256sum" "nginx curl wget aria2 openssl time coreutils"
if [[ -z ${HAUL_BIN:-} ]]; then
    [[ -x $PKG_ROOT/.build-release/release/haul ]] ||
        die "no release build: run Packaging/package.sh first, or set HAUL_BIN"
    strip -o "$WORK/haul" "$PKG_ROOT/.build-release/release/haul"
    HAUL_BIN=$WORK/haul
fi
HAUL=$HAUL_BIN

make_source "$SIZE_MB"
BIG=src-${SIZE_MB}M.bin
SUM=$(sha256_of "$WORK/$BIG")
make_tls_cert "$CERTS"
PORT=$(free_port) TLS_PORT=$(free_port) STATUS_PORT=$(free_port)
start_bench_nginx "http://127.0.0.1:$PORT/$BIG" "https://127.0.0.1:$TLS_PORT/$BIG"

# case_cmd CASE TOOL: sets CMD, or returns 1 when the tool has no such case.
case_cmd() {
    local plain=http://127.0.0.1:$PORT/$BIG tls=https://127.0.0.1:$TLS_PORT/$BIG out=$OUT/$BIG
    case $1/$2 in
        version/haul) CMD=("$HAUL" --version) ;;
        version/curl) CMD=(curl --version) ;;
        version/wget) CMD=(wget --version) ;;
        version/aria2c) CMD=(aria2c --version) ;;
        one/haul) CMD=(env HAUL_HOME="$WORK/haul-home" "$HAUL" get -q --no-config -x 1 -d "$OUT" "$plain") ;;
        one/curl) CMD=(curl -sS -o "$out" "$plain") ;;
        one/wget) CMD=(wget -q -O "$out" "$plain") ;;
        one/aria2c) CMD=(aria2c -q -x 1 -s 1 --file-allocation=none -d "$OUT" -o "$BIG" "$plain") ;;
        tls64/haul) CMD=(env HAUL_HOME="$WORK/haul-home" "$HAUL" get -q --no-config -x 64 --cacert "$CA" -d "$OUT" "$tls") ;;
        tls64/aria2c) CMD=(aria2c -q -x 16 -s 64 -k 1M --file-allocation=none --ca-certificate="$CA" -d "$OUT" -o "$BIG" "$tls") ;;
        *) return 1 ;;
    esac
}

: > "$RUNS"
for round in $(seq "$ROUNDS"); do
    for case in version one tls64; do
        for tool in $(rotated "$round" $TOOLS); do
            case_cmd "$case" "$tool" || continue
            rm -rf "$OUT" "$WORK/haul-home"
            mkdir -p "$OUT"
            sync
            # The tools' files cold, the served file warm again: nginx's disk reads are not timed.
            ((DROP_CACHES)) && echo 3 > /proc/sys/vm/drop_caches && cat "$WORK/$BIG" > /dev/null
            time_cmd 600 TERM "$WORK/tool.log"
            status=ok
            if [[ $case != version ]]; then
                [[ -f $OUT/$BIG && $(sha256sum "$OUT/$BIG" | cut -d' ' -f1) == "$SUM" ]] || status=bad-file
            fi
            ((RC == 0)) || status="exit $RC"
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$tool" "$round" "$M" "$E" "$status" >> "$RUNS"
            log "$(printf '%-7s %-7s round %s  %7.1f MiB  %6.2f s  %s' "$case" "$tool" "$round" \
                "$(awk -v m="$M" 'BEGIN { print m / 1024 }')" "$E" "$status")"
        done
    done
done

{
    echo "# Peak RSS: haul and its peers ($(date -u +%F))"
    echo
    echo "$(machine_line). $SIZE_MB MiB over nginx on loopback, $ROUNDS rounds, page cache"
    echo "$( ((DROP_CACHES)) && echo "dropped before each run" || echo "kept between runs")."
    echo
    echo "| case | tool | median peak RSS KiB | range KiB | median s | runs not ok |"
    echo "|---|---|---:|---:|---:|---:|"
    python3 - "$RUNS" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    case, tool, _, rss, secs, status = line.rstrip("\n").split("\t")
    runs.setdefault((case, tool), []).append((int(rss), float(secs), status))
for (case, tool), rows in sorted(runs.items(), key=lambda kv: (["version", "one", "tls64"].index(kv[0][0]), kv[0][1])):
    rss = [r for r, _, _ in rows]
    print(f"| {case} | {tool} | {statistics.median(rss):.0f} | {min(rss)}-{max(rss)} | "
          f"{statistics.median(s for _, s, _ in rows):.2f} | {sum(st != 'ok' for _, _, st in rows)} |")
PY
    echo
    echo "haul: $("$HAUL" --version), $(stat -c %s "$HAUL") bytes; $(tool_version curl | cut -f2); $(tool_version aria2c | cut -f2); $(wget --version | head -n 1)"
} > "$REPORT"
cat "$REPORT"
log "report: $REPORT"
