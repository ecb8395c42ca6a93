#!/usr/bin/env bash
# mirror-bench.sh: what one slow mirror costs a download from several mirrors (issue 21, "Sources:
# mirrors": "One mirror 20x slower than the rest must cost at most 1.5x the time without it"),
# Haul next to aria2c.
#
# Three haul-test-servers on 127.0.0.1 serve the same file (SIZE_MB MiB, the same seed), three
# mirrors: A and B at LIMIT per response (so per connection), S at LIMIT / SLOW_FACTOR; fresh
# servers for every run. For each K in KS, each tool downloads it over K connections in three cases:
#   two         A B      (the time without the slow mirror)
#   slow-last   A B S
#   slow-first  S A B    (first-listed mirrors are often preferred)
# haul: haul get -x K --mirrors URL... ; aria2c: aria2c -x K -s K URL... (its mirrors of one file).
# Every file's sha256 is checked against the source; the report gives each tool's ratio
# (with the slow mirror) / (without it).
#
# Usage:  bash Benchmarks/mirror-bench.sh
#         SIZE_MB=64 ROUNDS=1 bash Benchmarks/mirror-bench.sh          # quick look
# Env:    SIZE_MB (256) LIMIT (4m) SLOW_FACTOR (20) KS (4) ROUNDS (2) TOOLS ("haul aria2c")
#         CASES ("two slow-last slow-first") HAUL_BIN, TEST_SERVER_BIN (build) HAUL_VERBOSE (1)
#         TIMEOUT_S (60 + 2 x SLOW_FACTOR x ideal)
set -euo pipefail

# --- settings ----------------------------------------------------------------
SIZE_MB=${SIZE_MB:-256}
LIMIT=${LIMIT:-4m}          # bytes/s per connection of A and B, k or m suffix (powers of 1024)
SLOW_FACTOR=${SLOW_FACTOR:-20}
KS=${KS:-4}
ROUNDS=${ROUNDS:-2}
TOOLS=${TOOLS:-"haul aria2c"}
CASES=${CASES:-"two slow-last slow-first"}
HAUL_VERBOSE=${HAUL_VERBOSE:-1}

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

for v in SIZE_MB SLOW_FACTOR ROUNDS ${TIMEOUT_S:+TIMEOUT_S}; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
for k in $KS; do
    # aria2c refuses -x above 16; above it the tools would not get the same connections.
    [[ $k =~ ^[1-9][0-9]*$ ]] && ((k <= 16)) || { echo "KS must be integers 1..16, got '$k'" >&2; exit 2; }
done
for t in $TOOLS; do
    [[ $t == haul || $t == aria2c ]] || { echo "TOOLS: haul and/or aria2c, got '$t'" >&2; exit 2; }
done
for c in $CASES; do
    [[ $c == two || $c == slow-last || $c == slow-first ]] || { echo "CASES: two, slow-last, slow-first; got '$c'" >&2; exit 2; }
done
[[ $HAUL_VERBOSE == 0 || $HAUL_VERBOSE == 1 ]] || { echo "HAUL_VERBOSE must be 0 or 1" >&2; exit 2; }
case $LIMIT in
    *[kK]) LIMIT_BPS=$((${LIMIT%?} * 1024)) ;;
    *[mM]) LIMIT_BPS=$((${LIMIT%?} * 1048576)) ;;
    *)     LIMIT_BPS=$LIMIT ;;
esac
[[ $LIMIT_BPS =~ ^[1-9][0-9]*$ ]] || { echo "LIMIT must look like 2m, 512k or 1000000, got '$LIMIT'" >&2; exit 2; }
SLOW_BPS=$((LIMIT_BPS / SLOW_FACTOR))
((SLOW_BPS > 0)) || { echo "LIMIT / SLOW_FACTOR is under 1 byte/s" >&2; exit 2; }

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work/mirror      # git-ignored; own subdirectory
RESULTS=$BENCH_DIR/results       # git-ignored
OUT=$WORK/out
LOGS=$WORK/logs                  # every run's tool output (haul -v), kept for a look afterwards
RUNS=$WORK/runs.tsv              # one line per run, read by mirror-summary.py
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT=$RESULTS/mirror-$STAMP.md
mkdir -p "$WORK" "$RESULTS"
rm -rf "$LOGS"; mkdir -p "$LOGS"

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------
TS_PIDS=()
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_mirrors
    rm -rf "$OUT" "$WORK"/haul-home.* "$WORK"/*.tmp "$WORK/ts.fifo" 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

warn_if_loaded
need_cmds="/usr/bin/time timeout sha256sum python3" need_pkgs="time coreutils python3"
[[ " $TOOLS " == *" aria2c "* ]] && need_cmds+=" aria2c" need_pkgs+=" aria2"
install_missing "$need_cmds" "$need_pkgs"

HAUL=
if [[ " $TOOLS " == *" haul "* ]]; then
    HAUL=${HAUL_BIN:-$(build_product haul)}
    [[ -x $HAUL ]] || die "haul binary not found or not executable: $HAUL"
    log "haul: $HAUL"
fi
TS=${TEST_SERVER_BIN:-$(build_product haul-test-server)}
[[ -x $TS ]] || die "haul-test-server not found or not executable: $TS"

# --- the file and the three mirrors ---------------------------------------------------
# Why not nginx with limit_rate, as the other benchmarks: nginx lets every request send one
# second's worth (limit_rate x 1 s, up to 2 s at a second's boundary) before the limit bites.
# Haul asks for a file in pieces of size / (4 K), one request each: with 32 MiB at 2 MiB/s and
# K = 4 the pieces are 2 MiB and came almost entirely from the head start (0.18 s against an
# ideal 4 s). Who wins would depend on request counts, not on scheduling. haul-test-server's
# throttle has no head start (10 ms of credit, catch-up capped at 0.2 s).
NAME=download.bin
SRC=$WORK/ts-${SIZE_MB}M.bin
if [[ -f $SRC && $(stat -c %s "$SRC") -eq $((SIZE_MB * 1048576)) ]]; then
    log "reusing $SRC"
else
    log "writing the test server's $SIZE_MB MiB payload to $SRC"
    "$TS" --size "${SIZE_MB}M" --dump "$SRC.tmp" < /dev/null > /dev/null & p=$!
    # It serves once dumped (stdin at EOF stops it at once); wait for it either way.
    wait "$p" || true
    [[ -f $SRC.tmp && $(stat -c %s "$SRC.tmp") -eq $((SIZE_MB * 1048576)) ]] || die "haul-test-server did not write its payload"
    mv -f "$SRC.tmp" "$SRC"
fi
SIZE=$(stat -c %s "$SRC")
log "sha256 of the payload"
SRC_SHA=$(sha256_of "$SRC")

# start_mirrors: three fresh haul-test-servers, A and B at LIMIT_BPS, S at SLOW_BPS, each
# logging its responses on exit (--log). Their stdin is one fifo we hold open on fd 3: closing
# it (or this script dying) stops them all. Sets URL_A, URL_B, URL_S.
start_mirrors() {
    local fifo=$WORK/ts.fifo m rate i url
    rm -f "$fifo" "$WORK"/ts-[ABS].{url,log,err}; mkfifo "$fifo"
    TS_PIDS=()
    for m in A B S; do
        rate=$LIMIT_BPS; [[ $m == S ]] && rate=$SLOW_BPS
        "$TS" --size "${SIZE_MB}M" --throttle "$rate" --log "$WORK/ts-$m.log" \
            < "$fifo" > "$WORK/ts-$m.url" 2> "$WORK/ts-$m.err" &
        TS_PIDS+=($!)
    done
    exec 3> "$fifo"
    for m in A B S; do
        for i in {1..600}; do
            url=$(head -n 1 "$WORK/ts-$m.url" 2>/dev/null || true)
            [[ -n $url ]] && break
            ((i < 600)) || { cat "$WORK/ts-$m.err" >&2; die "haul-test-server $m printed no URL within 60 s"; }
            sleep 0.1
        done
        printf -v "URL_$m" '%s' "$url"
    done
    rm -f "$fifo"   # only now: each server opened it before it printed its URL
}

# stop_mirrors: EOF on their stdin and SIGTERM; each writes its log as it exits.
stop_mirrors() {
    ((${#TS_PIDS[@]})) || return 0
    exec 3>&-
    kill -TERM "${TS_PIDS[@]}" 2>/dev/null || true
    wait "${TS_PIDS[@]}" 2>/dev/null || true
    TS_PIDS=()
}

# --- measuring ---------------------------------------------------------------------
# urls_for CASE: the mirror URLs of a case, in the order given to the tool.
urls_for() {
    case $1 in
        two)        echo "$URL_A $URL_B" ;;
        slow-last)  echo "$URL_A $URL_B $URL_S" ;;
        slow-first) echo "$URL_S $URL_A $URL_B" ;;
    esac
}

# tool_cmd TOOL K OUT URL...: fill CMD with TOOL's command line for K connections in all.
tool_cmd() {
    local tool=$1 k=$2 out=$3; shift 3
    # -v says how many requests and connections it took; it prints that only without -q (its
    # progress then goes to the log as plain lines, stderr being no terminal).
    local v=(-q)
    ((HAUL_VERBOSE)) && v=(-v)
    case $tool in
        # env execs haul in place, so GNU time sees haul's own RSS. -x is the connections of
        # the download over all its mirrors (the host budget defaults to -x too).
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -x "$k" "${v[@]}" -o "$out" --mirrors "$@") ;;
        # -s K: the download split over K connections across the URIs, which aria2c takes as
        # mirrors of one file; -x K: it may put all of them on one server. -k 1M: haul's piece
        # floor (aria2c's 20M default is about splitting small files, not mirrors).
        aria2c) CMD=(aria2c -x "$k" -s "$k" -k 1M --file-allocation=none --allow-overwrite=true
                     --auto-file-renaming=false -q -d "$(dirname "$out")" -o "$(basename "$out")" "$@") ;;
    esac
}

# server_view: per mirror (A, B, S), from the logs of the servers just stopped: the responses
# and the payload bytes they handed to the kernel (a request cut short by the client counts what
# was sent). Sets VIEW to "reqsA reqsB reqsS bytesA bytesB bytesS".
server_view() {
    local m r x n=() b=()
    for m in A B S; do
        read -r r x < <(awk -F'\t' '{ n++; bytes += $5 } END { printf "%d %d\n", n, bytes }' "$WORK/ts-$m.log" 2>/dev/null || echo "0 0")
        n+=("$r") b+=("$x")
        cp "$WORK/ts-$m.log" "$RUN_LOG.server-$m.tsv" 2>/dev/null || true
    done
    VIEW="${n[*]} ${b[*]}"
}

# measure TOOL CASE K ROUND: one download, checked (size, sha256), one line of $RUNS.
measure() {
    local tool=$1 case=$2 k=$3 round=$4 out=$OUT/$NAME status=ok log says=- size
    local -a urls
    rm -rf "$OUT" "$WORK"/haul-home.*; mkdir -p "$OUT"
    start_mirrors
    read -r -a urls <<< "$(urls_for "$case")"
    HAUL_HOME_DIR=$(mktemp -d "$WORK/haul-home.XXXXXX")
    tool_cmd "$tool" "$k" "$out" "${urls[@]}"
    if ((round == 1)); then   # the command for the report, paths shortened
        local c
        c=$(printf '%q ' "${CMD[@]}")
        c=${c//"$HAUL_HOME_DIR"/work/haul-home.NEW}
        [[ -n $HAUL ]] && c=${c//"$HAUL"/haul}
        c=${c//"$WORK"/work}
        c=${c//"$URL_A"/URL_A}; c=${c//"$URL_B"/URL_B}; c=${c//"$URL_S"/URL_S}
        printf '%s\t%s\t%s\t%s\n' "$tool" "$case" "$k" "$c" >> "$WORK/commands.tsv"
    fi
    log=$LOGS/$tool-$case-k$k-r$round.log RUN_LOG=$log
    sync   # the previous run's writeback is not charged to this one
    time_cmd "$TIMEOUT" INT "$log"
    stop_mirrors
    server_view
    if ((RC == 124 || RC == 137)); then status=TIMEOUT
    elif ((RC != 0)); then status=FAILED
    elif [[ ! -f $out ]]; then status=NO-FILE
    elif size=$(stat -c %s "$out"); ((size != SIZE)); then status=WRONG-SIZE
    elif [[ $(sha256sum "$out" | cut -d' ' -f1) != "$SRC_SHA" ]]; then status=WRONG-SHA256
    fi
    [[ $tool == haul ]] && says=$(grep -m 1 -oE '[0-9]+ requests? over [0-9]+ connections?[^,]*' "$log" || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$case" "$k" "$round" "$E" "$U" "$S" "$M" \
        "$status" "$RC" "${VIEW// /$'\t'}" "${says:--}" >> "$RUNS"
    log "$(awk -v t="$tool" -v c="$case" -v k="$k" -v r="$round" -v e="$E" -v u="$U" -v s="$S" -v m="$M" \
        -v st="$status" -v view="$VIEW" 'BEGIN { split(view, v, " ")
        printf "K=%-2s round %s  %-6s %-10s %8.2f s  cpu %6.2f s  rss %6.1f MiB  req A/B/S %d/%d/%d  MiB A/B/S %.0f/%.0f/%.1f  %s",
               k, r, t, c, e, u + s, m / 1024, v[1], v[2], v[3], v[4] / 1048576, v[5] / 1048576, v[6] / 1048576, st }')"
    if [[ $status != ok ]]; then
        FAILS=$((FAILS + 1))
        log "!!!!!!!! $tool $case K=$k round $round: $status (exit $RC) !!!!!!!!"
        sed 's/^/    /' "$log" | tail -n 5 >&2
    fi
    rm -rf "$OUT" "$HAUL_HOME_DIR"
}

# rotated ROUND WORD...: the words, starting one further along each round, so no run is always
# first (right after another tool's sync) or always last.
rotated() {
    local r=$1; shift
    local words=("$@") n=$# i
    for ((i = 0; i < n; i++)); do echo "${words[(r - 1 + i) % n]}"; done
}

: > "$RUNS"; : > "$WORK/commands.tsv"
FAILS=0
RUNS_LIST=()
for tool in $TOOLS; do for c in $CASES; do RUNS_LIST+=("$tool/$c"); done; done
declare -A TIMEOUT_FOR
for k in $KS; do
    ideal=$(awk -v b="$SIZE" -v k="$k" -v l="$LIMIT_BPS" 'BEGIN { printf "%.1f", b / (k * l) }')
    # A stuck tool cannot stall the run: 2 x SLOW_FACTOR x ideal is twice what all K connections
    # on the slow mirror alone would take.
    TIMEOUT_FOR[$k]=${TIMEOUT_S:-$(awk -v i="$ideal" -v f="$SLOW_FACTOR" 'BEGIN { printf "%d", 60 + 2 * f * i }')}
    log "K=$k: ideal without the slow mirror $ideal s (size / (K x LIMIT)); limit per run ${TIMEOUT_FOR[$k]} s"
done
for ((r = 1; r <= ROUNDS; r++)); do
    for k in $KS; do
        TIMEOUT=${TIMEOUT_FOR[$k]}
        for run in $(rotated "$r" "${RUNS_LIST[@]}"); do
            measure "${run%%/*}" "${run#*/}" "$k" "$r"
        done
    done
done

# --- report ----------------------------------------------------------------------
MACHINE="$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), Linux $(uname -r), load average $LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
{
    [[ -n $HAUL ]] && echo "haul	$("$HAUL" --version 2>/dev/null || echo unknown) ($HAUL)"
    [[ " $TOOLS " == *" aria2c "* ]] && echo "aria2c	$(aria2c --version | head -n 1)"
    echo "haul-test-server	$TS"
} > "$WORK/versions.tsv"
cp "$RUNS" "$RESULTS/mirror-$STAMP-runs.tsv"
python3 "$BENCH_DIR/mirror-summary.py" --runs "$RUNS" --versions "$WORK/versions.tsv" \
    --commands "$WORK/commands.tsv" --size "$SIZE" --limit-bps "$LIMIT_BPS" --slow-bps "$SLOW_BPS" \
    --rounds "$ROUNDS" --machine "$MACHINE" > "$REPORT"
cat "$REPORT"
log "written to $REPORT and $RESULTS/mirror-$STAMP-runs.tsv (every run); tool output in $LOGS"

((FAILS == 0)) || die "$FAILS runs failed, timed out or wrote wrong files; see the !!!! lines above"
