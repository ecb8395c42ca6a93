#!/usr/bin/env bash
# many-files-bench.sh: Haul against aria2c on a list of many small files.
#
# A private nginx on 127.0.0.1 serves FILES files of 16 KiB (random data); both tools
# get the whole list with JOBS downloads at once, one connection per file:
#   haul get -q -j JOBS -i LIST -d OUT          (fresh HAUL_HOME every round)
#   aria2c -q -j JOBS -i LIST -d OUT ...        (-x 1 -s 1, its defaults)
# Then: the same command again on the finished output (Haul's target: no request),
# and Haul's peak RSS for one 16 KiB URL, for FILES entries and for LONG entries.
#
# Usage:  bash Benchmarks/many-files-bench.sh
# Env:    FILES (10000) ROUNDS (5) JOBS (16) LONG (100000; 0 skips)
#         LONG_TOOLS ("haul aria2c aria2c-deferred") TIMEOUT (600 s) LONG_TIMEOUT (1800 s)
#         PORT (18082) HAUL (.build-static/release/haul; HAUL_BIN works too)
set -euo pipefail

# --- settings ----------------------------------------------------------------
FILES=${FILES:-10000}
ROUNDS=${ROUNDS:-5}
JOBS=${JOBS:-16}
LONG=${LONG:-100000}          # entries in the long list; each file listed LONG/FILES times
LONG_TOOLS=${LONG_TOOLS:-"haul aria2c aria2c-deferred"}
TIMEOUT=${TIMEOUT:-600}       # per run: the haul being fixed may never exit after its last file
LONG_TIMEOUT=${LONG_TIMEOUT:-1800}   # per run on the long list
PORT=${PORT:-18082}           # not download-bench's 18080 or segmented-bench's 18081
FILE_SIZE=16384

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

for v in FILES ROUNDS JOBS TIMEOUT LONG_TIMEOUT PORT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
[[ $LONG =~ ^[0-9]+$ ]] || { echo "LONG must be a number (0 skips the long list), got '$LONG'" >&2; exit 2; }
((FILES <= 999999)) || { echo "FILES must be at most 999999" >&2; exit 2; }
for t in $LONG_TOOLS; do
    [[ $t == haul || $t == aria2c || $t == aria2c-deferred ]] ||
        { echo "LONG_TOOLS: any of haul aria2c aria2c-deferred, got '$t'" >&2; exit 2; }
done

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work/many-files  # git-ignored; own subdirectory, apart from the other benchmarks
RESULTS=$BENCH_DIR/results       # git-ignored
NGX=$WORK/nginx
SRC=$WORK/src                    # f000000 ... : the FILES source files, kept for reuse
LONGDIR=$WORK/long               # f000000-0 ... : symlinks into src, the long list's distinct paths
OUT=$WORK/out
TIMES=$WORK/times.tsv
REPORT=$RESULTS/many-files-$(date +%Y%m%d-%H%M%S).txt
mkdir -p "$WORK" "$RESULTS" "$NGX" "$SRC"
export LC_ALL=C                  # sort order of file names, the same in every step

HAUL=${HAUL:-${HAUL_BIN:-$PKG_ROOT/.build-static/release/haul}}
[[ $HAUL == /* ]] || HAUL=$PWD/$HAUL

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------
# Every exit path: no nginx left running, no 1.6 GB of downloads left on disk.
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
install_missing "nginx aria2c curl /usr/bin/time timeout" "nginx aria2 curl time"
[[ -x $HAUL ]] || die "haul binary not found or not executable: $HAUL (set HAUL=path; this script does not build it)"
log "haul: $HAUL ($("$HAUL" --version 2>/dev/null || echo 'version unknown'))"

BASE_URL=http://127.0.0.1:$PORT
curl -s -o /dev/null --max-time 2 "$BASE_URL/" && die "something already answers on port $PORT; set PORT"

stop_leftover_nginx

# --- source files ------------------------------------------------------------------
name() { printf 'f%06d' "$1"; }
make_small_files "$SRC" "$FILES" "$FILE_SIZE"
# names.txt: the FILES names in sort order; the digest of their contents in that order is
# what every download must reproduce (names, sizes and order together pin every byte).
seq 0 $((FILES - 1)) | awk '{ printf "f%06d\n", $1 }' > "$WORK/names.txt"
(cd "$SRC" && xargs cat < "$WORK/names.txt") > /dev/null   # into the page cache before round 1
LIST=$WORK/list.txt
sed "s|^|$BASE_URL/src/|" "$WORK/names.txt" > "$LIST"

# The long list: LONG distinct paths long/fNNNNNN-K (copy K of file NNNNNN), symlinks into
# src that nginx follows, so each entry is its own download and its own output file.
if ((LONG > 0)); then
    copies=$(((LONG + FILES - 1) / FILES))
    if [[ $(cat "$LONGDIR/.made" 2>/dev/null) != "$FILES $copies" ]]; then
        log "making $((FILES * copies)) symlinks in $LONGDIR for the $LONG-entry list"
        rm -rf "$LONGDIR"; mkdir -p "$LONGDIR"
        python3 - "$LONGDIR" "$FILES" "$copies" <<'PY'
import os, sys
d, files, copies = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(files):
    for k in range(copies):
        os.symlink(f"../src/f{i:06d}", os.path.join(d, f"f{i:06d}-{k}"))
PY
        echo "$FILES $copies" > "$LONGDIR/.made"
    fi
    # Entry j is copy j / FILES of file j % FILES: every file once, then every file again...
    seq 0 $((LONG - 1)) | awk -v n="$FILES" '{ printf "f%06d-%d\n", $1 % n, int($1 / n) }' |
        sort > "$WORK/long-names.txt"
    LONG_LIST=$WORK/long-list.txt
    seq 0 $((LONG - 1)) | awk -v n="$FILES" -v u="$BASE_URL/long/" '{ printf "%sf%06d-%d\n", u, $1 % n, int($1 / n) }' > "$LONG_LIST"
fi

DIGEST=$(small_files_digest "$SRC" "$WORK/names.txt")
((LONG > 0)) && LONG_DIGEST=$(small_files_digest "$SRC" "$WORK/long-names.txt")

# --- nginx ------------------------------------------------------------------------
# Its access log counts the requests of every run and of the re-run (see bench-lib.sh).
start_small_files_nginx

# --- measuring ---------------------------------------------------------------------
# tool_cmd TOOL LIST OUTDIR: fill CMD. Both tools: JOBS files at once, one connection each.
tool_cmd() {
    local tool=$1 list=$2 out=$3
    case $tool in
        # env execs haul in place, so GNU time still sees haul's own RSS.
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -q -j "$JOBS" -i "$list" -d "$out") ;;
        # -x 1 -s 1 are aria2c's defaults; spelled out so the comparison does not depend on them.
        aria2c) CMD=(aria2c -q -j "$JOBS" -x 1 -s 1 -i "$list" -d "$out"
                     --allow-overwrite=false --auto-file-renaming=false --file-allocation=none
                     --console-log-level=error --summary-interval=0) ;;
        # By default aria2c reads the whole list up front (its memory grows with it);
        # --deferred-input reads an entry when it needs the next one.
        aria2c-deferred) tool_cmd aria2c "$list" "$out"; CMD+=(--deferred-input=true) ;;
        *)      die "unknown tool $tool" ;;
    esac
}

# run_timed LIMIT_S: run CMD under timeout and GNU time; sets E U S M RC REQS BYTES
# (requests nginx logged during the run, and the body bytes it sent for them).
run_timed() {
    local lines0
    lines0=$(wc -l < "$ALOG")
    # At the limit, timeout sends SIGINT to its whole process group: haul checkpoints and exits
    # 130 (as on Ctrl-C), and GNU time still reports its CPU and peak RSS up to then.
    time_cmd "$1" INT "$WORK/tool.log"
    read -r REQS BYTES < <(tail -n "+$((lines0 + 1))" "$ALOG" | awk '{ b += $10 } END { print NR, b + 0 }')
}

# record PART TOOL ROUND ENTRIES STATUS: one line of $TIMES, one line on stderr.
record() {
    local part=$1 tool=$2 round=$3 n=$4 status=$5
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$part" "$tool" "$round" "$n" \
        "$E" "$U" "$S" "$M" "$status" "$REQS" "$BYTES" "$RC" >> "$TIMES"
    log "$(awk -v p="$part" -v r="$round" -v t="$tool" -v n="$n" -v e="$E" -v u="$U" -v s="$S" \
        -v m="$M" -v st="$status" -v q="$REQS" -v rc="$RC" 'BEGIN {
        printf "%-6s round %-2s %-15s %6d entries %8.2f s  cpu %6.2f s  rss %7.1f MiB  requests %-6s exit %-3s %s",
               p, r, t, n, e, u + s, m / 1024, q, rc, st }')"
}

# status_of RC CHECK: "ok", or what went wrong: TIMEOUT-files-ok (all files complete and
# correct but the tool did not exit in time), TIMEOUT-WRONG-NAMES, FAILED-ok (non-zero exit
# with a correct output), FAILED-WRONG-DATA, WRONG-SIZE (exit 0, bad output), ...
status_of() {
    local rc=$1 check=$2
    if ((rc == 124 || rc == 137)); then echo "TIMEOUT-${check/#ok/files-ok}"
    elif ((rc != 0)); then echo "FAILED-$check"
    else echo "$check"
    fi
}

loud() {   # a wrong or failed run: impossible to miss in the log
    log "!!!!!!!! $* !!!!!!!!"
    sed 's/^/    /' "$WORK/tool.log" | tail -n 5 >&2
}

# fresh_state: empty OUT, a new HAUL_HOME, the previous run's writeback flushed (not charged
# to this run).
fresh_state() {
    rm -rf "$OUT" "$WORK"/haul-home.*
    mkdir -p "$OUT"
    HAUL_HOME_DIR=$(mktemp -d "$WORK/haul-home.XXXXXX")
    sync
}

# measure_list PART TOOL ROUND LIST NAMES DIGEST N LIMIT_S: one fresh download of a whole
# list; returns 0 if it is complete and correct and the tool exited 0. Sets FILES_OK=1 when
# the output is complete and correct whatever the exit status (a re-run is then meaningful).
measure_list() {
    local part=$1 tool=$2 round=$3 list=$4 names=$5 digest=$6 n=$7 limit=$8 status check
    fresh_state
    tool_cmd "$tool" "$list" "$OUT"
    run_timed "$limit"
    check=$(check_small_files "$OUT" "$names" "$digest" "$n" "$FILE_SIZE")
    FILES_OK=$([[ $check == ok ]] && echo 1 || echo 0)
    status=$(status_of "$RC" "$check")
    record "$part" "$tool" "$round" "$n" "$status"
    [[ $status == ok ]] || { loud "$tool $part round $round: $status (exit $RC)"; return 1; }
}

# rerun TOOL ROUND: the same command again on the finished OUT (same HAUL_HOME). Haul must exit
# 0 and leave the files as they were; its target is zero requests. aria2c's re-run is for
# information: whatever it exits with, only the files must be unharmed.
rerun() {
    local tool=$1 round=$2 status check
    tool_cmd "$tool" "$LIST" "$OUT"
    sync
    run_timed "$TIMEOUT"
    check=$(check_small_files "$OUT" "$WORK/names.txt" "$DIGEST" "$FILES" "$FILE_SIZE")
    status=$(status_of "$RC" "$check")
    # aria2c exits 13 ("file already existed") here: expected, not a failure.
    [[ $tool == aria2c && $status == FAILED-ok ]] && status=ok
    record rerun "$tool" "$round" "$FILES" "$status"
    [[ $status == ok ]] || { loud "$tool re-run round $round: $status (exit $RC)"; return 1; }
    [[ $tool == haul ]] && ((REQS > 0)) && log "note: haul's re-run sent $REQS requests (target: none)"
    return 0
}

: > "$TIMES"
FAILS=0 FILES_OK=0

# --- part 1: the list, interleaved rounds, each followed by its re-run ------------------
log "part 1: $FILES files, -j $JOBS, $ROUNDS rounds"
for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order=(haul aria2c); else order=(aria2c haul); fi
    for tool in "${order[@]}"; do
        measure_list main "$tool" "$r" "$LIST" "$WORK/names.txt" "$DIGEST" "$FILES" "$TIMEOUT" ||
            FAILS=$((FAILS + 1))
        # A run that timed out with every file complete still gets its re-run: the hang at exit
        # does not make the state any less finished.
        if ((FILES_OK)); then rerun "$tool" "$r" || FAILS=$((FAILS + 1)); fi
    done
done

# --- part 2: memory: one URL, and the long list ----------------------------------------
log "part 2: peak RSS for one 16 KiB URL ($ROUNDS run(s) each)"
echo "$(name 0)" > "$WORK/one-name.txt"
ONE_DIGEST=$(small_files_digest "$SRC" "$WORK/one-name.txt")
echo "$BASE_URL/src/$(name 0)" > "$WORK/one-list.txt"
for ((r = 1; r <= ROUNDS; r++)); do
    for tool in haul aria2c; do
        measure_list idle "$tool" "$r" "$WORK/one-list.txt" "$WORK/one-name.txt" "$ONE_DIGEST" 1 "$TIMEOUT" ||
            FAILS=$((FAILS + 1))
    done
done

if ((LONG > 0)); then
    avail=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
    need=$((LONG * (FILE_SIZE / 1024 + 4) + 1048576))   # data, inodes' blocks, 1 GiB to spare
    ((avail > need)) || die "the long list needs about $((need / 1048576)) GiB free under $WORK; $((avail / 1048576)) GiB free"
    for tool in $LONG_TOOLS; do
        log "part 2: $tool on the $LONG-entry list (writes $((LONG * FILE_SIZE / 1048576)) MiB, deleted after)"
        measure_list long "$tool" 1 "$LONG_LIST" "$WORK/long-names.txt" "$LONG_DIGEST" "$LONG" "$LONG_TIMEOUT" ||
            FAILS=$((FAILS + 1))
        rm -rf "$OUT"
    done
fi
rm -rf "$OUT" "$WORK"/haul-home.*

# --- report ----------------------------------------------------------------------
MACHINE="$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), Linux $(uname -r), load average $LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
{
    python3 "$BENCH_DIR/many-files-summary.py" --times "$TIMES" --files "$FILES" --file-size "$FILE_SIZE" \
        --jobs "$JOBS" --rounds "$ROUNDS" --machine "$MACHINE" --haul-bin "$HAUL" \
        --haul-version "$("$HAUL" --version 2>/dev/null || echo unknown)" \
        --aria2c-version "$(aria2c --version | head -n 1)" --timeout "$TIMEOUT" --long-timeout "$LONG_TIMEOUT"
    printf '\nRaw runs (part tool round entries elapsed_s user_s sys_s maxrss_KiB status requests bytes_served exit):\n'
    cat "$TIMES"
} | tee "$REPORT"
log "written to $REPORT"

((FAILS == 0)) || die "$FAILS runs failed, timed out or wrote wrong files; see the log above"
