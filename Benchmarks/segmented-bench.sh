#!/usr/bin/env bash
# segmented-bench.sh: how well Haul splits one file over K connections, next to
# aria2c and axel, when every connection is rate-limited by the server.
#
# Part 1: a private nginx on 127.0.0.1 with limit_rate LIMIT per connection;
#         for each K in KS, haul -x K, aria2c -x min(K,16) -s K and axel -n K.
# Part 2: stragglers: haul-test-server makes every third connection slow
#         (256 KiB/s next to 4 MiB/s); K = STRAGGLER_K.
# Part 3: haul -x 8 against a test server that refuses (503, Retry-After: 1)
#         more than 4 concurrent bodies.
#
# Usage:  bash Benchmarks/segmented-bench.sh
# Env:    KS ("1 4 8 16 32 64") LIMIT (2m) RUN_SECS (10) SIZE_MB (auto) ROUNDS (3)
#         STRAGGLER_K (12) TS_MB (192) PARTS ("nginx straggler cap") PORT (18081)
#         HAUL_BIN / TEST_SERVER_BIN (default: built into .build-static/release/)
set -euo pipefail

# --- settings ----------------------------------------------------------------
KS=${KS:-"1 4 8 16 32 64"}
LIMIT=${LIMIT:-2m}          # nginx limit_rate syntax: bytes/s, k or m suffix (powers of 1024)
RUN_SECS=${RUN_SECS:-10}    # target length of one ideal run when SIZE_MB is auto
SIZE_MB=${SIZE_MB:-auto}    # auto: K x LIMIT x RUN_SECS, so every K runs equally long
ROUNDS=${ROUNDS:-3}
STRAGGLER_K=${STRAGGLER_K:-12}
TS_MB=${TS_MB:-192}         # test-server payload for parts 2 and 3
PARTS=${PARTS:-"nginx straggler cap"}
PORT=${PORT:-18081}         # not download-bench.sh's 18080, so both can run

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

for v in RUN_SECS ROUNDS STRAGGLER_K TS_MB PORT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
[[ $SIZE_MB == auto || $SIZE_MB =~ ^[1-9][0-9]*$ ]] || { echo "SIZE_MB must be 'auto' or MiB, got '$SIZE_MB'" >&2; exit 2; }
for k in $KS; do
    [[ $k =~ ^[1-9][0-9]*$ ]] && ((k <= 64)) || { echo "KS must be integers 1..64, got '$k'" >&2; exit 2; }
done
# LIMIT in bytes per second, the way nginx reads it.
case $LIMIT in
    *[kK]) LIMIT_BPS=$((${LIMIT%?} * 1024)) ;;
    *[mM]) LIMIT_BPS=$((${LIMIT%?} * 1048576)) ;;
    *)     LIMIT_BPS=$LIMIT ;;
esac
[[ $LIMIT_BPS =~ ^[1-9][0-9]*$ ]] || { echo "LIMIT must look like 2m, 512k or 1000000, got '$LIMIT'" >&2; exit 2; }

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work/segmented   # git-ignored; own subdirectory, apart from download-bench.sh
RESULTS=$BENCH_DIR/results       # git-ignored
NGX=$WORK/nginx
OUT=$WORK/out
TIMES=$WORK/times.tsv
REPORT=$RESULTS/segmented-$(date +%Y%m%d-%H%M%S).txt
mkdir -p "$WORK" "$RESULTS" "$NGX" "$OUT"

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------
NGINX_PID= TS_PID=
stop_test_server() {
    [[ -n $TS_PID ]] || return 0
    exec 3>&-                                  # EOF on its stdin: it exits by itself
    kill -TERM "$TS_PID" 2>/dev/null || true
    wait "$TS_PID" 2>/dev/null || true
    TS_PID=
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_test_server
    stop_nginx
    rm -rf "$OUT" "$WORK"/haul-home.* "$WORK"/*.tmp "$WORK/ts.fifo" 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

warn_if_loaded
install_missing "nginx aria2c axel curl /usr/bin/time timeout" "nginx aria2 axel curl time"

HAUL=${HAUL_BIN:-$(build_product haul)}
TS=${TEST_SERVER_BIN:-}
[[ " $PARTS " == *" straggler "* || " $PARTS " == *" cap "* ]] && TS=${TS:-$(build_product haul-test-server)}
[[ -x $HAUL ]] || die "haul binary not found: $HAUL"
log "haul: $HAUL"

# --- measuring ---------------------------------------------------------------------
# tool_cmd TOOL K URL OUT: fill CMD with TOOL's command line for K connections.
tool_cmd() {
    local tool=$1 k=$2 url=$3 out=$4
    case $tool in
        # env execs haul in place, so GNU time still sees haul's own RSS.
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -x "$k" -k 1M --quiet -o "$out" "$url") ;;
        # aria2c refuses -x above 16; -s K still asks for K pieces, but it
        # then opens at most 16 connections to the one server.
        aria2c) CMD=(aria2c -x "$((k < 16 ? k : 16))" -s "$k" -k 1M --file-allocation=none
                     --allow-overwrite=true -q -d "$(dirname "$out")" -o "$(basename "$out")" "$url") ;;
        axel)   CMD=(axel -n "$k" -q -o "$out" "$url") ;;
        *)      die "unknown tool $tool" ;;
    esac
}

# measure PART TOOL K SRC URL ROUND IDEAL_S: one timed download, cmp-checked, appended
# to $TIMES as "part tool k mb round elapsed user sys maxrss_kb status requests"
# (requests: lines nginx logged during the run; "-" for the test server).
# IDEAL_S only sets the timeout (60 s + 10 x ideal), so a stuck tool cannot stall the run.
measure() {
    local part=$1 tool=$2 k=$3 src=$4 url=$5 round=$6 ideal=$7
    local out=$OUT/download.bin status=ok rc e u s m bytes reqs=-
    local alog=$NGX/logs/access.log lines0=0
    bytes=$(stat -c %s "$src")

    rm -rf "$OUT" "$WORK"/haul-home.*; mkdir -p "$OUT"
    HAUL_HOME_DIR=$(mktemp -d "$WORK/haul-home.XXXXXX")
    tool_cmd "$tool" "$k" "$url" "$out"
    sync   # the previous run's writeback is not charged to this one
    [[ $part == nginx ]] && lines0=$(wc -l < "$alog")

    time_cmd "$(awk -v i="$ideal" 'BEGIN { printf "%d", 60 + 10 * i }')" TERM "$WORK/tool.log"
    rc=$RC e=$E u=$U s=$S m=$M
    [[ $part == nginx ]] && reqs=$(($(wc -l < "$alog") - lines0))

    if ((rc == 124 || rc == 137)); then
        status=TIMEOUT
    elif ((rc != 0)); then
        status=FAILED
    elif [[ ! -f $out ]]; then
        status=NO-FILE
    elif (($(stat -c %s "$out") != bytes)); then
        status=WRONG-SIZE
    elif ! cmp -s "$src" "$out"; then
        status=WRONG-FILE
    fi
    if [[ $status != ok ]]; then
        log "!!!!!!!! $tool K=$k round $round: $status (exit $rc) !!!!!!!!"
        sed 's/^/    /' "$WORK/tool.log" | tail -n 5 >&2
    fi

    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$part" "$tool" "$k" "$((bytes / 1048576))" \
        "$round" "$e" "${u:-0}" "${s:-0}" "${m:-0}" "$status" "$reqs" >> "$TIMES"
    log "$(awk -v p="$part" -v r="$round" -v t="$tool" -v k="$k" -v e="$e" -v u="${u:-0}" -v s="${s:-0}" \
        -v m="${m:-0}" -v st="$status" -v q="$reqs" 'BEGIN {
        printf "%-9s round %s  K=%-3s %-6s %8.2f s  cpu %6.2f s  rss %7.1f MiB  requests %-4s %s",
               p, r, k, t, e, u + s, m / 1024, q, st }')"
    rm -rf "$OUT" "$HAUL_HOME_DIR"
}

# The tools of one round, starting one further along each round, so no tool
# is always first (right after a sync of a big file) or always last.
rotated_tools() {   # rotated_tools ROUND TOOL...
    local r=$1; shift
    local tools=("$@") n=$# i
    for ((i = 0; i < n; i++)); do echo "${tools[(r - 1 + i) % n]}"; done
}

: > "$TIMES"

# --- part 1: nginx with limit_rate --------------------------------------------------
size_for_k() {   # MiB served for K connections
    if [[ $SIZE_MB == auto ]]; then
        local mb=$(($1 * LIMIT_BPS * RUN_SECS / 1048576))
        echo $((mb > 0 ? mb : 1))
    else
        echo "$SIZE_MB"
    fi
}
if [[ " $PARTS " == *" nginx "* ]]; then
    BASE_URL=http://127.0.0.1:$PORT
    curl -s -o /dev/null --max-time 2 "$BASE_URL/" && die "something already answers on port $PORT; set PORT"
    for k in $KS; do make_source "$(size_for_k "$k")"; done

    # The access log counts each tool's requests (how it splits); limit_rate is per request, so
    # per connection at any moment.
    rm -f "$NGX/logs/access.log"   # nginx creates it afresh: request counts start at 0
    start_nginx "$PORT" "$BASE_URL/" 1024 "    access_log $NGX/logs/access.log;
    limit_rate $LIMIT;
    keepalive_requests 10000;" " backlog=1024"
    log "nginx serving $WORK on $BASE_URL with limit_rate $LIMIT (pid $NGINX_PID)"

    # Interleaved: each round runs every K and every tool once.
    for ((r = 1; r <= ROUNDS; r++)); do
        for k in $KS; do
            mb=$(size_for_k "$k")
            ideal=$(awk -v mb="$mb" -v k="$k" -v l="$LIMIT_BPS" 'BEGIN {
                c = (k < mb ? k : mb); printf "%.3f", mb * 1048576 / (c * l) }')
            for tool in $(rotated_tools "$r" haul aria2c axel); do
                measure nginx "$tool" "$k" "$WORK/src-${mb}M.bin" "$BASE_URL/src-${mb}M.bin" "$r" "$ideal"
            done
        done
    done
fi

# --- parts 2 and 3: haul-test-server -----------------------------------------------
# start_test_server ARGS...: sets TS_URL. Its stdin is a fifo we hold open on fd 3,
# so it stops when we close fd 3 (or when this script dies for any reason).
TS_SRC=$WORK/ts-${TS_MB}M.bin
start_test_server() {
    local fifo=$WORK/ts.fifo
    rm -f "$fifo" "$WORK/ts.url"; mkfifo "$fifo"
    "$TS" --size "${TS_MB}M" "$@" < "$fifo" > "$WORK/ts.url" 2> "$WORK/ts.log" &
    TS_PID=$!
    exec 3> "$fifo"
    rm -f "$fifo"
    for i in {1..600}; do
        TS_URL=$(head -n 1 "$WORK/ts.url")
        [[ -n $TS_URL ]] && return 0
        kill -0 "$TS_PID" 2>/dev/null || { cat "$WORK/ts.log" >&2; die "haul-test-server exited at startup"; }
        ((i < 600)) || die "haul-test-server printed no URL within 60 s"
        sleep 0.1
    done
}
ts_payload() {   # write the test server's payload once, to cmp downloads against
    [[ -f $TS_SRC && $(stat -c %s "$TS_SRC") -eq $((TS_MB * 1048576)) ]] && return 0
    log "writing the test server's $TS_MB MiB payload to $TS_SRC"
    start_test_server --dump "$TS_SRC.tmp"; stop_test_server
    mv -f "$TS_SRC.tmp" "$TS_SRC"
}

if [[ " $PARTS " == *" straggler "* ]]; then
    [[ -x $TS ]] || die "haul-test-server not found: $TS"
    ts_payload
    k=$STRAGGLER_K
    fast=$((k - k / 3))   # connections 0,1 fast, 2 slow, 3,4 fast, ...
    ideal=$(awk -v mb="$TS_MB" -v f="$fast" 'BEGIN { printf "%.3f", mb / (f * 4) }')
    log "stragglers: K=$k, $fast fast connections at 4 MiB/s, every third at 256 KiB/s; fast-only ideal $ideal s"
    for ((r = 1; r <= ROUNDS; r++)); do
        for tool in $(rotated_tools "$r" haul aria2c axel); do
            # A fresh server per run, so every tool's n-th connection gets the same rate.
            start_test_server --connection-throttles 4194304,4194304,262144
            measure straggler "$tool" "$k" "$TS_SRC" "$TS_URL" "$r" "$ideal"
            stop_test_server
        done
    done
fi

if [[ " $PARTS " == *" cap "* ]]; then
    [[ -x $TS ]] || die "haul-test-server not found: $TS"
    ts_payload
    # 4 MiB/s per response, so the cap (not loopback speed) sets the pace: ideal is 4 x 4 MiB/s.
    ideal=$(awk -v mb="$TS_MB" 'BEGIN { printf "%.3f", mb / 16 }')
    log "cap: haul -x 8 against --cap 4 --retry-after 1 --throttle 4M; ideal (4 x 4 MiB/s) $ideal s"
    for ((r = 1; r <= ROUNDS; r++)); do
        start_test_server --cap 4 --retry-after 1 --throttle 4M
        measure cap haul 8 "$TS_SRC" "$TS_URL" "$r" "$ideal"
        stop_test_server
    done
fi

# --- report ----------------------------------------------------------------------
MACHINE="$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), Linux $(uname -r), load average $LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
{
    python3 "$BENCH_DIR/segmented-summary.py" --times "$TIMES" --limit-bps "$LIMIT_BPS" \
        --limit "$LIMIT" --rounds "$ROUNDS" --machine "$MACHINE" --haul-bin "$HAUL" \
        --size-rule "$([[ $SIZE_MB == auto ]] && echo "K x $LIMIT/s x $RUN_SECS s" || echo "$SIZE_MB MiB for every K")"
    printf '\nRaw runs (part tool K MiB round elapsed_s user_s sys_s maxrss_KiB status requests):\n'
    cat "$TIMES"
} | tee "$REPORT"
log "written to $REPORT"

if awk -F'\t' '$10 != "ok" { found = 1 } END { exit !found }' "$TIMES"; then
    die "some runs failed or wrote a wrong file; see the log above"
fi
