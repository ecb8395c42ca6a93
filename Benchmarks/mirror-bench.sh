#!/usr/bin/env bash
# mirror-bench.sh: what one slow mirror costs a download from several mirrors (issue 21, "Sources:
# mirrors": "One mirror 20x slower than the rest must cost at most 1.5x the time without it"),
# Haul next to aria2c.
#
# One private nginx on 127.0.0.1 serves the same file (SIZE_MB MiB of random data) on three
# ports, three mirrors: A and B at LIMIT per connection (nginx limit_rate), S at LIMIT /
# SLOW_FACTOR. For each K in KS, each tool downloads it over K connections in three cases:
#   two         A B      (the time without the slow mirror)
#   slow-last   A B S
#   slow-first  S A B    (first-listed mirrors are often preferred)
# haul: haul get -x K --mirrors URL... ; aria2c: aria2c -x K -s K URL... (its mirrors of one file).
# Every file's sha256 is checked against the source; the report gives each tool's ratio
# (with the slow mirror) / (without it).
#
# Usage:  bash Benchmarks/mirror-bench.sh
#         SIZE_MB=64 ROUNDS=1 bash Benchmarks/mirror-bench.sh          # quick look
# Env:    SIZE_MB (256) LIMIT (2m) SLOW_FACTOR (20) KS (4) ROUNDS (2) TOOLS ("haul aria2c")
#         CASES ("two slow-last slow-first") HAUL_BIN (build) HAUL_VERBOSE (1) TIMEOUT
set -euo pipefail

# --- settings ----------------------------------------------------------------
SIZE_MB=${SIZE_MB:-256}
LIMIT=${LIMIT:-2m}          # nginx limit_rate syntax: bytes/s, k or m suffix (powers of 1024)
SLOW_FACTOR=${SLOW_FACTOR:-20}
KS=${KS:-4}
ROUNDS=${ROUNDS:-2}
TOOLS=${TOOLS:-"haul aria2c"}
CASES=${CASES:-"two slow-last slow-first"}
HAUL_VERBOSE=${HAUL_VERBOSE:-1}

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

for v in SIZE_MB SLOW_FACTOR ROUNDS; do
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
WORK=$BENCH_DIR/work/mirror      # git-ignored; nginx's root, own subdirectory
RESULTS=$BENCH_DIR/results       # git-ignored
NGX=$WORK/nginx
OUT=$WORK/out
LOGS=$WORK/logs                  # every run's tool output (haul -v), kept for a look afterwards
RUNS=$WORK/runs.tsv              # one line per run, read by mirror-summary.py
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT=$RESULTS/mirror-$STAMP.md
mkdir -p "$WORK" "$RESULTS" "$NGX"
rm -rf "$LOGS"; mkdir -p "$LOGS"

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------
NGINX_PID=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_nginx
    rm -rf "$OUT" "$WORK"/haul-home.* "$WORK"/*.tmp 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

warn_if_loaded
need_cmds="nginx curl /usr/bin/time timeout sha256sum python3" need_pkgs="nginx curl time coreutils python3"
[[ " $TOOLS " == *" aria2c "* ]] && need_cmds+=" aria2c" need_pkgs+=" aria2"
install_missing "$need_cmds" "$need_pkgs"
stop_leftover_nginx

HAUL=
if [[ " $TOOLS " == *" haul "* ]]; then
    HAUL=${HAUL_BIN:-$(build_product haul)}
    [[ -x $HAUL ]] || die "haul binary not found or not executable: $HAUL"
    log "haul: $HAUL"
fi

# --- the file and the three mirrors ---------------------------------------------------
make_source "$SIZE_MB"
NAME=src-${SIZE_MB}M.bin
SIZE=$(stat -c %s "$WORK/$NAME")
log "sha256 of the source"
SRC_SHA=$(sha256_of "$WORK/$NAME")

# Four free ports, all different: mirrors A, B, S and nginx's stub_status.
PORTS=()
while ((${#PORTS[@]} < 4)); do
    p=$(free_port)
    [[ " ${PORTS[*]} " == *" $p "* ]] || PORTS+=("$p")
done
PORT_A=${PORTS[0]} PORT_B=${PORTS[1]} PORT_S=${PORTS[2]} STATUS_PORT=${PORTS[3]}
URL_A=http://127.0.0.1:$PORT_A/$NAME
URL_B=http://127.0.0.1:$PORT_B/$NAME
URL_S=http://127.0.0.1:$PORT_S/$NAME

# One nginx (one worker), three server blocks with the same root: A is start_nginx's own server
# (limit_rate from the http block), B the same on another port, S with its own, lower
# limit_rate. limit_rate is per request, so per connection at any moment; nginx lets each
# request send one second's worth before the limit bites (see the README). The access log has
# the port, so every request and byte is counted per mirror.
ALOG=$NGX/logs/access.log
rm -f "$ALOG"
start_nginx "$PORT_A" "$URL_A" 1024 "    log_format mirrorbench '\$server_port\t\$status\t\$bytes_sent\t\$body_bytes_sent\t\$connection\t\$request_time\t\$http_range';
    access_log $ALOG mirrorbench;
    limit_rate $LIMIT_BPS;
    keepalive_timeout 75s;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:$PORT_B backlog=1024;
        root $WORK;
        location / { }
    }
    server {
        listen 127.0.0.1:$PORT_S backlog=1024;
        root $WORK;
        limit_rate $SLOW_BPS;
        location / { }
    }
    $(status_server_block "$STATUS_PORT")" " backlog=1024"
for u in "$URL_B" "$URL_S"; do
    curl -s -f -o /dev/null -I "$u" || die "nginx does not serve $u"
done
log "nginx $(nginx_version) (pid $NGINX_PID): mirrors A :$PORT_A and B :$PORT_B at $LIMIT_BPS B/s per connection, S :$PORT_S at $SLOW_BPS B/s (1/$SLOW_FACTOR)"

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
    local v=()
    ((HAUL_VERBOSE)) && v=(-v)
    case $tool in
        # env execs haul in place, so GNU time sees haul's own RSS. -x is the connections of
        # the download over all its mirrors (the host budget defaults to -x too).
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -x "$k" -q "${v[@]}" -o "$out" --mirrors "$@") ;;
        # -s K: the download split over K connections across the URIs, which aria2c takes as
        # mirrors of one file; -x K: it may put all of them on one server. -k 1M: haul's piece
        # floor (aria2c's 20M default is about splitting small files, not mirrors).
        aria2c) CMD=(aria2c -x "$k" -s "$k" -k 1M --file-allocation=none --allow-overwrite=true
                     --auto-file-renaming=false -q -d "$(dirname "$out")" -o "$(basename "$out")" "$@") ;;
    esac
}

# server_view FIRST_LINE: per mirror (A, B, S), the requests nginx logged from FIRST_LINE on and
# the body bytes it sent (a request cut short by the client counts what was sent). Sets VIEW to
# "reqsA reqsB reqsS bytesA bytesB bytesS".
server_view() {
    wait_server_idle
    VIEW=$(tail -n "+$1" "$ALOG" | awk -F'\t' -v a="$PORT_A" -v b="$PORT_B" -v s="$PORT_S" '
        { n[$1]++; bytes[$1] += $4 }
        END { printf "%d %d %d %d %d %d\n", n[a], n[b], n[s], bytes[a], bytes[b], bytes[s] }')
}

# measure TOOL CASE K ROUND: one download, checked (size, sha256), one line of $RUNS.
measure() {
    local tool=$1 case=$2 k=$3 round=$4 out=$OUT/$NAME status=ok lines0 log says=- size
    local -a urls
    read -r -a urls <<< "$(urls_for "$case")"
    rm -rf "$OUT" "$WORK"/haul-home.*; mkdir -p "$OUT"
    HAUL_HOME_DIR=$(mktemp -d "$WORK/haul-home.XXXXXX")
    tool_cmd "$tool" "$k" "$out" "${urls[@]}"
    if ((round == 1)); then   # the command for the report, paths shortened
        local c
        c=$(printf '%q ' "${CMD[@]}")
        c=${c//"$HAUL_HOME_DIR"/work/haul-home.NEW}
        [[ -n $HAUL ]] && c=${c//"$HAUL"/haul}
        c=${c//"$WORK"/work}
        printf '%s\t%s\t%s\t%s\n' "$tool" "$case" "$k" "$c" >> "$WORK/commands.tsv"
    fi
    log=$LOGS/$tool-$case-k$k-r$round.log
    sync   # the previous run's writeback is not charged to this one
    lines0=$(($(wc -l < "$ALOG") + 1))
    time_cmd "$TIMEOUT" INT "$log"
    server_view "$lines0"
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
for k in $KS; do
    ideal=$(awk -v b="$SIZE" -v k="$k" -v l="$LIMIT_BPS" 'BEGIN { printf "%.1f", b / (k * l) }')
    # A stuck tool cannot stall the run; 40 x ideal is twice what all K connections on the
    # slow mirror alone would take with SLOW_FACTOR 20.
    TIMEOUT=${TIMEOUT_S:-$(awk -v i="$ideal" -v f="$SLOW_FACTOR" 'BEGIN { printf "%d", 60 + 2 * f * i }')}
    log "K=$k: ideal without the slow mirror $ideal s (size / (K x LIMIT)); limit per run $TIMEOUT s"
done
for ((r = 1; r <= ROUNDS; r++)); do
    for k in $KS; do
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
    echo "nginx	$(nginx_version), 1 worker"
} > "$WORK/versions.tsv"
cp "$RUNS" "$RESULTS/mirror-$STAMP-runs.tsv"
python3 "$BENCH_DIR/mirror-summary.py" --runs "$RUNS" --versions "$WORK/versions.tsv" \
    --commands "$WORK/commands.tsv" --size "$SIZE" --limit-bps "$LIMIT_BPS" --slow-bps "$SLOW_BPS" \
    --rounds "$ROUNDS" --machine "$MACHINE" --ports "$PORT_A $PORT_B $PORT_S" > "$REPORT"
cat "$REPORT"
log "written to $REPORT and $RESULTS/mirror-$STAMP-runs.tsv (every run); tool output in $LOGS"

((FAILS == 0)) || die "$FAILS runs failed, timed out or wrote wrong files; see the !!!! lines above"
