#!/usr/bin/env bash
# download-bench.sh: compare Haul's single-connection download speed, CPU and
# memory with curl, wget, aria2c and axel against a local nginx.
#
# Why a local nginx: it takes the network out of the picture, so what we see is
# the client's own cost (syscalls, copies, hashing, bookkeeping) per byte.
# Every tool uses one connection, so this is a per-connection efficiency test,
# not a "who splits the file into the most pieces" test.
#
# Usage:  bash Benchmarks/download-bench.sh [--rss-sizes "64 1024 4096"]
# Env:    SIZE_MB (1024) ROUNDS (3) PORT (18080) HAUL_BIN (build it) RSS_SIZES ("")
set -euo pipefail

# --- settings ----------------------------------------------------------------
SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18080}
RSS_SIZES=${RSS_SIZES:-}

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
    case $1 in
        --rss-sizes) RSS_SIZES=${2:?--rss-sizes needs a list such as \"64 1024 4096\"}; shift 2 ;;
        --rss-sizes=*) RSS_SIZES=${1#*=}; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

for v in SIZE_MB ROUNDS PORT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
for s in $RSS_SIZES; do
    [[ $s =~ ^[1-9][0-9]*$ ]] || { echo "RSS sizes must be positive integers (MiB), got '$s'" >&2; exit 2; }
done

# Locate everything relative to this script so the checkout can live anywhere.
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work          # git-ignored; source files, nginx state, outputs
RESULTS=$BENCH_DIR/results    # git-ignored
NGX=$WORK/nginx               # nginx prefix: conf, pid, logs, temp dirs
OUT=$WORK/out                 # download target; same disk as the source
TIMES=$WORK/times.tsv         # one line per timed run, read by summarize.py
mkdir -p "$WORK" "$RESULTS" "$NGX" "$OUT"

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------
# Runs on every exit path (success, error under set -e, Ctrl-C) so no nginx and
# no half-written multi-GiB files are left behind.
NGINX_PID=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_nginx
    rm -rf "$OUT" "$WORK"/haul-home.* "$WORK"/src-*.bin.tmp 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- load and tools -------------------------------------------------------------
warn_if_loaded
install_missing "nginx aria2c axel curl wget /usr/bin/time" "nginx aria2 axel curl wget time"

# --- haul binary ---------------------------------------------------------------
# Resolved before the test file and nginx, so a failed build wastes nothing.
# Static (about 5 MiB less peak RSS than the shared libraries).
HAUL=${HAUL_BIN:-$(build_product haul)}
[[ -x $HAUL ]] || die "haul binary not found or not executable: $HAUL"
log "haul: $HAUL"

# --- the port ---------------------------------------------------------------------
stop_leftover_nginx

# Fail fast, before spending seconds on a big file, if the port is taken:
# we would otherwise benchmark somebody else's server.
BASE_URL=http://127.0.0.1:$PORT
curl -s -o /dev/null --max-time 2 "$BASE_URL/" && die "something already answers on port $PORT; set PORT"

# --- test file ------------------------------------------------------------------
src_file() { echo "$WORK/src-${1}M.bin"; }
make_source "$SIZE_MB"

# --- nginx ------------------------------------------------------------------
# One worker, one connection at a time, no access log: the server's cost stays flat.
start_nginx "$PORT" "$BASE_URL/$(basename "$(src_file "$SIZE_MB")")" 64 "    access_log off;" ""
log "nginx $(nginx -v 2>&1 | sed 's/.*\///') serving $WORK on $BASE_URL (pid $NGINX_PID)"

# --- timed runs -------------------------------------------------------------
TOOLS=(haul curl wget aria2c axel)

# tool_cmd TOOL URL OUT: fill the array CMD with TOOL's command line.
# All tools use a single connection and write straight to OUT.
tool_cmd() {
    local tool=$1 url=$2 out=$3
    case $tool in
        # env execs haul in place, so GNU time still sees haul's own RSS.
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get "$url" -o "$out" --quiet) ;;
        curl)   CMD=(curl -s -o "$out" "$url") ;;
        wget)   CMD=(wget -q -O "$out" "$url") ;;
        aria2c) CMD=(aria2c -x1 -s1 --allow-overwrite=true --file-allocation=none -q
                     -d "$(dirname "$out")" -o "$(basename "$out")" "$url") ;;
        axel)   CMD=(axel -q -n 1 -o "$out" "$url") ;;
        *)      die "unknown tool $tool" ;;
    esac
}

# measure TOOL MB CHECK_CONTENT ROUND: one timed download, appended to $TIMES as
# "round tool mb elapsed user sys maxrss_kb ok".
# Wall time comes from bash's microsecond clock ($EPOCHREALTIME) because GNU
# time's %e has only 10 ms resolution, coarse for a 0.3 s localhost download;
# GNU time supplies the tool's user/sys CPU and peak RSS.
measure() {
    local tool=$1 mb=$2 check=$3 round=$4
    local src out tf t0 t1 rc=0 ok=1 e u s m
    src=$(src_file "$mb")
    out=$OUT/$(basename "$src")
    tf=$WORK/time.out

    # Fresh start: no output, no .part/.aria2/.st control files, no haul state
    # that could turn a download into a no-op "already complete" resume.
    rm -rf "$OUT" "$WORK"/haul-home.*; mkdir -p "$OUT"
    HAUL_HOME_DIR=$(mktemp -d "$WORK/haul-home.XXXXXX")
    tool_cmd "$tool" "$BASE_URL/$(basename "$src")" "$out"
    # Flush the previous run's dirty pages now, so their writeback is not
    # charged to whichever tool happens to run next.
    sync

    t0=$EPOCHREALTIME
    /usr/bin/time -f '%e %U %S %M' -o "$tf" -- "${CMD[@]}" </dev/null || rc=$?
    t1=$EPOCHREALTIME

    # A tool that fails, or stops early, must not post a fast time.
    if ((rc != 0)); then
        log "$tool: exit status $rc"; ok=0
    elif [[ ! -f $out ]]; then
        log "$tool: no output file"; ok=0
    elif (( $(stat -c %s "$out") != mb * 1048576 )); then
        log "$tool: output is $(stat -c %s "$out") bytes, expected $((mb * 1048576))"; ok=0
    elif ((check)) && ! cmp -s "$src" "$out"; then
        log "$tool: output differs from the source"; ok=0
    fi

    # On failure GNU time first prints "Command exited with non-zero status N",
    # so take the last line.
    read -r _ u s m < <(tail -n 1 "$tf")
    e=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tool" "$mb" "$e" "$u" "$s" "$m" "$ok" >> "$TIMES"
    log "$(awk -v r="$round" -v t="$tool" -v e="$e" -v u="$u" -v s="$s" -v m="$m" -v ok="$ok" 'BEGIN {
        printf "round %-3s %-6s %8.3f s  cpu %6.2f s  rss %7.1f MiB  %s", r, t, e, u + s, m / 1024, ok ? "ok" : "FAILED" }')"
    rm -rf "$OUT" "$HAUL_HOME_DIR"
}

: > "$TIMES"
# Interleaved: every round runs every tool once, so slow drift (thermal,
# background jobs, page cache churn) hits all tools alike instead of one.
# The starting tool rotates each round so no tool always runs first (first
# after a round-1 cmp, or first after startup) or always last.
n=${#TOOLS[@]}
for ((r = 1; r <= ROUNDS; r++)); do
    for ((i = 0; i < n; i++)); do
        tool=${TOOLS[(r - 1 + i) % n]}
        measure "$tool" "$SIZE_MB" $((r == 1)) "$r"   # full cmp only in round 1: it costs a re-read
    done
done

# --- optional: haul memory vs file size --------------------------------------
# A streaming downloader's peak RSS should not grow with the file; one haul run
# per size is enough to see that. Content is cmp-checked every time here.
if [[ -n $RSS_SIZES ]]; then
    for mb in $RSS_SIZES; do
        make_source "$mb"
        measure haul "$mb" 1 "rss"
    done
fi

# --- report -------------------------------------------------------------------
MACHINE="$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), Linux $(uname -r), load average $LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
python3 "$BENCH_DIR/summarize.py" --times "$TIMES" --size-mb "$SIZE_MB" --rounds "$ROUNDS" \
    --machine "$MACHINE" --haul-bin "$HAUL" --url "$BASE_URL" | tee "$RESULTS/latest.md"
log "written to $RESULTS/latest.md"

# Non-zero exit if any run failed, so CI or a wrapper notices.
if awk -F'\t' '$8 == 0 { found = 1 } END { exit !found }' "$TIMES"; then
    die "some runs failed; see the log above"
fi
