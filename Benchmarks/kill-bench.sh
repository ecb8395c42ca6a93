#!/usr/bin/env bash
# kill-bench.sh: how many bytes a download tool wastes when it is killed with SIGKILL again and
# again during one download and restarted each time (issue 19, "Kills that cost almost nothing").
#
# For each tool: start the download, SIGKILL it after a random 0..MAX_DELAY s, wait until it is
# gone, start the same command again (resume), KILLS times; then one run without a kill, to the
# end. A private nginx on 127.0.0.1 (limit_rate LIMIT per connection, keep-alive) logs every
# request with $bytes_sent; the figure is (bytes the server sent in all runs) / (file size).
# The file must then be byte-exact (sha256). Every tool gets the same delay sequence (SEED).
#
# Usage:  bash Benchmarks/kill-bench.sh
#         SIZE_MIB=32 KILLS=10 bash Benchmarks/kill-bench.sh          # quick mode
# Env:    SIZE_MIB (256) KILLS (100) MAX_DELAY (2) SEED (1) LIMIT (2m) PORT (a free one)
#         TOOLS ("haul-x1 haul-x8 haul-x16 aria2c-x1 aria2c-x8 axel-n8 curl")
#         FINAL_TIMEOUT (60 + 5 x ideal single-connection time) HAUL_BIN (.build-static/release/haul)
#         ARIA2_OPTS (extra aria2c options, e.g. "--auto-save-interval=1"; none by default)
set -euo pipefail

# --- settings ----------------------------------------------------------------
SIZE_MIB=${SIZE_MIB:-256}
KILLS=${KILLS:-100}
MAX_DELAY=${MAX_DELAY:-2}
SEED=${SEED:-1}
LIMIT=${LIMIT:-2m}
TOOLS=${TOOLS:-"haul-x1 haul-x8 haul-x16 aria2c-x1 aria2c-x8 axel-n8 curl"}
PORT=${PORT:-}
ARIA2_OPTS=${ARIA2_OPTS:-}

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

for v in SIZE_MIB SEED; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
[[ $KILLS =~ ^[0-9]+$ ]] || { echo "KILLS must be a number, got '$KILLS'" >&2; exit 2; }
[[ $MAX_DELAY =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "MAX_DELAY must be seconds, got '$MAX_DELAY'" >&2; exit 2; }
[[ -z $PORT || $PORT =~ ^[1-9][0-9]*$ ]] || { echo "PORT must be a port number, got '$PORT'" >&2; exit 2; }
case $LIMIT in
    *[kK]) LIMIT_BPS=$((${LIMIT%?} * 1024)) ;;
    *[mM]) LIMIT_BPS=$((${LIMIT%?} * 1048576)) ;;
    *)     LIMIT_BPS=$LIMIT ;;
esac
[[ $LIMIT_BPS =~ ^[1-9][0-9]*$ ]] || { echo "LIMIT must look like 2m, 512k or 1000000, got '$LIMIT'" >&2; exit 2; }
for t in $TOOLS; do
    case $t in haul-x[1-9]*|aria2c-x[1-9]*|axel-n[1-9]*|curl) ;;
        *) echo "unknown tool '$t' (haul-xN, aria2c-xN, axel-nN, curl)" >&2; exit 2 ;; esac
done

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work/kill        # git-ignored; nginx's root, own subdirectory
RESULTS=$BENCH_DIR/results       # git-ignored
NGX=$WORK/nginx
RUNS=$WORK/runs                  # one empty directory per tool
STAMP=$(date +%Y%m%d-%H%M%S)
TSV=$RESULTS/kill-$STAMP.tsv
REPORT=$RESULTS/kill-$STAMP.txt
mkdir -p "$WORK" "$RESULTS" "$NGX" "$RUNS"

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------
NGINX_PID= TOOL_PID=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [[ -n $TOOL_PID ]] && kill -KILL "$TOOL_PID" 2>/dev/null && wait "$TOOL_PID" 2>/dev/null
    stop_nginx
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

warn_if_loaded
install_missing "nginx aria2c axel curl timeout python3 sha256sum" "nginx aria2 axel curl coreutils python3"
stop_leftover_nginx

# --- haul binary: as the other benchmarks, a static release build in .build-static ---
need_haul=0
for t in $TOOLS; do [[ $t == haul-* ]] && need_haul=1; done
HAUL=
if ((need_haul)); then
    HAUL=${HAUL_BIN:-$(build_product haul)}
    [[ -x $HAUL ]] || die "haul binary not found or not executable: $HAUL"
    log "haul: $HAUL"
fi

# --- the delays: one seeded list, the same for every tool ---------------------------
DELAYS_FILE=$WORK/delays.txt
python3 - "$SEED" "$KILLS" "$MAX_DELAY" > "$DELAYS_FILE" <<'PY'
import random, sys
seed, kills, top = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(seed)   # Mersenne Twister: the same list on every machine and Python 3
for _ in range(kills):
    print(f"{rng.uniform(0, top):.3f}")
PY
mapfile -t DELAYS < "$DELAYS_FILE"
log "delays (SEED=$SEED): $(head -n 5 "$DELAYS_FILE" | tr '\n' ' ')... mean $(awk '{ s += $1 } END { printf "%.3f", NR ? s / NR : 0 }' "$DELAYS_FILE") s"

# --- server --------------------------------------------------------------------
PORT=${PORT:-$(free_port)}
STATUS_PORT=$(free_port)
while [[ $STATUS_PORT == "$PORT" ]]; do STATUS_PORT=$(free_port); done
BASE_URL=http://127.0.0.1:$PORT
curl -s -o /dev/null --max-time 2 "$BASE_URL/" && die "something already answers on port $PORT; set PORT"

make_source "$SIZE_MIB"
SRC=$WORK/src-${SIZE_MIB}M.bin
SIZE=$(stat -c %s "$SRC")
log "sha256 of the source"
SRC_SHA=$(sha256sum "$SRC" | cut -d' ' -f1)

# The access log: one line per request, written when nginx finishes it; a request whose client
# was killed is finished (and logged) when nginx notices the closed connection. The query
# string (?t=TOOL) names the tool, so a late line can never be counted for the next one.
# stub_status on a second port (not logged) says when nginx holds no connection any more.
ALOG=$NGX/logs/access.log
rm -f "$ALOG"
start_nginx "$PORT" "$BASE_URL/" 1024 "    log_format killbench '\$msec \$status \$bytes_sent \$body_bytes_sent \$request_time \$connection \$connection_requests \$request_uri \"\$http_range\"';
    access_log $ALOG killbench;
    limit_rate $LIMIT;
    keepalive_timeout 75s;
    keepalive_requests 100000;
    $(status_server_block "$STATUS_PORT")" " backlog=1024"
log "nginx $(nginx -v 2>&1 | sed 's/.*\///') serving $WORK on $BASE_URL, limit_rate $LIMIT per connection (pid $NGINX_PID)"

# --- tools ---------------------------------------------------------------------
# tool_cmd TOOL URL OUT HOME: fill CMD with TOOL's command line. Resuming is the same command
# again in the same directory (haul: the same HAUL_HOME).
tool_cmd() {
    local tool=$1 url=$2 out=$3 home=$4 n
    case $tool in
        # env execs haul in place: the pid we kill is haul's.
        haul-x*)   n=${tool#haul-x}
                   CMD=(env "HAUL_HOME=$home" "$HAUL" get -x "$n" --quiet -o "$out" "$url") ;;
        # ARIA2_OPTS unquoted on purpose: a list of options.
        aria2c-x*) n=${tool#aria2c-x}
                   CMD=(aria2c -x "$n" -s "$n" -c --allow-overwrite=false --auto-file-renaming=false
                        -q --console-log-level=error --summary-interval=0 $ARIA2_OPTS
                        -d "$(dirname "$out")" -o "$(basename "$out")" "$url") ;;
        axel-n*)   n=${tool#axel-n}
                   CMD=(axel -n "$n" -q -o "$out" "$url") ;;
        curl)      CMD=(curl -sS -f -C - -o "$out" "$url") ;;
    esac
}

ideal_one=$(awk -v s="$SIZE" -v l="$LIMIT_BPS" 'BEGIN { printf "%d", s / l + 1 }')
FINAL_TIMEOUT=${FINAL_TIMEOUT:-$((60 + 5 * ideal_one))}

printf 'tool\tkills\truns\tfinished_early\tfailed_runs\tbytes_sent\tfile_bytes\tsent_per_size\trequests\tsha256\tfinal_exit\tfinal_s\tall_runs_s\n' > "$TSV"
BAD=()

# bench TOOL: the kills, the final run, the figures.
bench() {
    local tool=$1 dir=$RUNS/$1 out url rc i d t0 t1 run_t0 kills=0 runs=0 fails=0 early=- final_rc=- final_s=-
    local sent reqs ratio sha=WRONG all_s=0
    rm -rf "$dir"; mkdir -p "$dir/out" "$dir/home"
    out=$dir/out/src.bin
    url="$BASE_URL/src-${SIZE_MIB}M.bin?t=$tool"
    tool_cmd "$tool" "$url" "$out" "$dir/home"
    log "$tool: ${CMD[*]}"
    wait_server_idle

    for ((i = 0; i < KILLS; i++)); do
        d=${DELAYS[i]}
        t0=$EPOCHREALTIME
        "${CMD[@]}" </dev/null >>"$dir/tool.log" 2>&1 &
        TOOL_PID=$!
        sleep "$d"
        kill -KILL "$TOOL_PID" 2>/dev/null || true
        # Reaped: the process is gone before the next start. (2>/dev/null: bash's "Killed" notice.)
        rc=0; wait "$TOOL_PID" 2>/dev/null || rc=$?
        TOOL_PID=
        t1=$EPOCHREALTIME
        all_s=$(awk -v a="$all_s" -v b="$t0" -v c="$t1" 'BEGIN { printf "%.3f", a + c - b }')
        runs=$((runs + 1))
        if ((rc == 137)); then
            kills=$((kills + 1))
        elif ((rc == 0)); then
            # Done before its kill: that run went to the end unkilled, it is the final run.
            early=$runs final_rc=0
            final_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
            log "$tool: finished by itself in run $runs, after $kills kills"
            break
        else
            fails=$((fails + 1))
            log "$tool: run $runs exited $rc by itself (not killed)"
            tail -n 3 "$dir/tool.log" | sed 's/^/    /' >&2
        fi
    done

    if [[ $early == - ]]; then
        t0=$EPOCHREALTIME
        final_rc=0
        timeout -k 5 "$FINAL_TIMEOUT" "${CMD[@]}" </dev/null >>"$dir/tool.log" 2>&1 || final_rc=$?
        t1=$EPOCHREALTIME
        runs=$((runs + 1))
        final_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        all_s=$(awk -v a="$all_s" -v b="$t0" -v c="$t1" 'BEGIN { printf "%.3f", a + c - b }')
        ((final_rc == 124 || final_rc == 137)) && log "$tool: the final run hit the ${FINAL_TIMEOUT} s limit"
    fi

    wait_server_idle
    read -r sent reqs < <(awk -v t="$tool" '{ i = index($8, "?t="); if (i && substr($8, i + 3) == t) { s += $3; n++ } }
        END { printf "%.0f %d\n", s, n }' "$ALOG")
    ratio=$(awk -v s="$sent" -v f="$SIZE" 'BEGIN { printf "%.3f", s / f }')
    if [[ -f $out ]] && [[ $(sha256sum "$out" | cut -d' ' -f1) == "$SRC_SHA" ]]; then
        sha=ok
    elif [[ -f $out ]]; then
        sha=WRONG
    else
        sha=NO-FILE
    fi
    if [[ $sha != ok || $final_rc != 0 ]]; then
        BAD+=("$tool: sha256 $sha, final run exit $final_rc")
        {
            printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n'
            printf '!!! %s: the file is %s (final run exit %s)\n' "$tool" "$sha" "$final_rc"
            [[ $sha == WRONG ]] && printf '!!! size %s of %s; kept in %s\n' "$(stat -c %s "$out")" "$SIZE" "$dir"
            printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n'
            tail -n 5 "$dir/tool.log" | sed 's/^/    /'
        } >&2
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$kills" "$runs" "$early" "$fails" \
        "$sent" "$SIZE" "$ratio" "$reqs" "$sha" "$final_rc" "$final_s" "$all_s" >> "$TSV"
    log "$(printf '%-10s kills %-4s sent/size %s  requests %-5s sha256 %s  final run %s s' \
        "$tool" "$kills" "$ratio" "$reqs" "$sha" "$final_s")"
    # Keep a wrong file for a look; a good one only takes space.
    [[ $sha == ok ]] && rm -rf "$dir/out" "$dir/home"
    return 0
}

log "$SIZE_MIB MiB, up to $KILLS kills at 0..$MAX_DELAY s, limit_rate $LIMIT; final run limit $FINAL_TIMEOUT s"
for tool in $TOOLS; do bench "$tool"; done

# --- report ----------------------------------------------------------------------
{
    echo "kill-bench: $SIZE_MIB MiB file, up to $KILLS SIGKILLs per tool at 0..$MAX_DELAY s after each start (SEED=$SEED),"
    echo "then one run to the end; nginx $(nginx -v 2>&1 | sed 's/.*\///') on 127.0.0.1 with limit_rate $LIMIT per connection."
    echo "sent/size = bytes nginx sent in all runs / file size (1.000 = nothing wasted)."
    echo "$(nproc) CPUs, Linux $(uname -r), load average $LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
    [[ -n $HAUL ]] && echo "haul: $HAUL ($("$HAUL" --version 2>/dev/null || echo '?'))"
    echo "aria2c $(aria2c --version | sed -n '1s/.* //p'), $(axel --version | head -n 1), curl $(curl --version | sed -n '1s/^curl \([^ ]*\).*/\1/p')"
    echo
    printf '%-10s %6s %6s %10s %9s %8s %12s %11s\n' tool kills runs sent/size requests sha256 "final run s" "all runs s"
    awk -F'\t' 'NR > 1 {
        note = ($4 != "-") ? sprintf("  (finished by itself in run %s)", $4) : ""
        if ($5 > 0) note = note sprintf("  (%s runs exited by themselves with an error)", $5)
        if ($11 != 0) note = note sprintf("  (final run exit %s)", $11)
        printf "%-10s %6s %6s %10s %9s %8s %12s %11s%s\n", $1, $2, $3, $8, $9, $10, $12, $13, note }' "$TSV"
    echo
    echo "Raw: $TSV; access log: $ALOG; tool output: $RUNS/TOOL/tool.log"
} | tee "$REPORT"
log "written to $REPORT"

if ((${#BAD[@]})); then
    printf '\n!!!!!!!! FAILED: %s\n' "${BAD[@]}" >&2
    exit 1
fi
