#!/usr/bin/env bash
# fleet-bench.sh: fleet mode: many small files through one `haul serve` host, and through
# several hosts sharing one PostgreSQL queue, all on this machine.
#
# A private nginx on 127.0.0.1 serves FILES files of 16 KiB (random data); a private
# PostgreSQL (Debian's, as the postgres user when run as root) holds the fleet's queue. Each
# configuration HOSTSxJOBS runs HOSTS hosts, each
#   HAUL_HOME=<own dir> haul serve --store postgres://... --fleet-name hostK --port 0 -d OUT -j JOBS
# all writing into one OUT; `haul add -i LIST` through host 1 queues the FILES URLs, and the
# run ends when PostgreSQL says all FILES are completed. Default configurations: 1x16 (one
# host), 3x16 (three times the slots) and 3x6 (about one host's slots, split over three hosts:
# the cost of coordinating alone). Every run starts from a fresh database, fresh HAUL_HOMEs
# and an empty OUT; every file is checked (names, 16384 bytes each, contents hashed).
# Measured: wall time from `haul add` to all completed, files/s, time to the first claim,
# each host's CPU and peak RSS (/proc), PostgreSQL's and nginx's CPU, what other processes
# took meanwhile (noise), the hosts' logs above info; then EXPLAIN ANALYZE of the claim query
# on FILES queued rows. Report: Benchmarks/results/fleet-DATE.md (markdown, medians).
#
# Usage:  bash Benchmarks/fleet-bench.sh
# Env:    FILES (10000) ROUNDS (3) CONFIGS ("1x16 3x16 3x6") TIMEOUT (600 s per run)
#         STALL (120 s without a completion ends a run) PORT (18083, nginx) PG_PORT (a free one)
#         HAUL (built: swift build -c release --static-swift-stdlib --build-path .build-bench)
#         LIMIT_RATE (each host's --limit-rate, e.g. 1M: the issue's capped-bandwidth case; empty: none)
set -euo pipefail

# --- settings ----------------------------------------------------------------
FILES=${FILES:-10000}
ROUNDS=${ROUNDS:-3}
CONFIGS=${CONFIGS:-"1x16 3x16 3x6"}
TIMEOUT=${TIMEOUT:-600}       # per run, from `haul add` to all completed
STALL=${STALL:-120}           # a run whose completed count stands still this long is stuck
PORT=${PORT:-18083}           # not download-bench's 18080, segmented's 18081 or many-files' 18082
PG_PORT=${PG_PORT:-}          # empty: a free port
LIMIT_RATE=${LIMIT_RATE:-}    # each host's --limit-rate; empty: none
FILE_SIZE=16384
LEASE_TIMEOUT=15              # haul serve's default, spelled out (EXPLAIN uses it too)
IDLE_S=2                      # the hosts' idle CPU is measured over this long before each add

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

for v in FILES ROUNDS TIMEOUT STALL PORT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
[[ -z $PG_PORT || $PG_PORT =~ ^[1-9][0-9]*$ ]] || { echo "PG_PORT must be a port number, got '$PG_PORT'" >&2; exit 2; }
((FILES <= 999999)) || { echo "FILES must be at most 999999" >&2; exit 2; }
for c in $CONFIGS; do
    [[ $c =~ ^[1-9][0-9]?x[1-9][0-9]*$ ]] || { echo "CONFIGS: HOSTSxJOBS words like 3x16, got '$c'" >&2; exit 2; }
done
[[ -n ${CONFIGS// /} ]] || { echo "CONFIGS is empty" >&2; exit 2; }

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_ROOT=$(dirname "$BENCH_DIR")
WORK=$BENCH_DIR/work/fleet       # git-ignored; own subdirectory, apart from the other benchmarks
RESULTS=$BENCH_DIR/results       # git-ignored
NGX=$WORK/nginx
SRC=$WORK/src                    # f000000 ... : the FILES source files, kept for reuse
OUT=$WORK/out                    # every host of a run downloads into it
RUN=$WORK/run                    # one run's HAUL_HOMEs, host logs, add output
LOGS=$WORK/logs                  # every run's host logs, CONFIG-rROUND/; replaced on the next start
PGDIR=$WORK/pg                   # the PostgreSQL cluster (data/, server.log, socket); deleted at exit
# The server's Unix socket, PGDIR/.s.PGSQL.PORT, must fit in 107 bytes.
((${#PGDIR} <= 90)) || PGDIR=/tmp/haul-fleet-bench-pg-$EUID
TIMES=$WORK/times.tsv
REPORT=$RESULTS/fleet-$(date +%Y%m%d-%H%M%S).md
mkdir -p "$WORK" "$RESULTS" "$NGX" "$SRC"
export LC_ALL=C                  # sort order of file names, the same in every step
# A developer's PGHOST, PGPASSWORD, ... must not redirect psql.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^PG' || true)

# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"

# --- cleanup -------------------------------------------------------------------
# Every exit path: no haul host, nginx or PostgreSQL left running, no downloads left on disk.
NGINX_PID= PG_STARTED=0 PQ_PID=
declare -a HOST_PIDS=()
stop_postgres() {
    ((PG_STARTED)) || return 0
    PG_STARTED=0
    as_pg "$PG_BIN/pg_ctl" -D "$PGDIR/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
}
cleanup() {
    local rc=$? p
    trap - EXIT INT TERM
    for p in "${HOST_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${HOST_PIDS[@]}"; do
        for _ in {1..50}; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
    [[ -n $PQ_PID ]] && kill "$PQ_PID" 2>/dev/null || true
    stop_nginx
    stop_postgres
    rm -rf "$OUT" "$RUN" "$PGDIR" "$WORK"/*.tmp 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

warn_if_loaded
install_missing "nginx curl psql /usr/bin/time" "nginx curl postgresql time"
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[[ -x $PG_BIN/initdb ]] || die "no /usr/lib/postgresql/<version>/bin/initdb: apt-get install postgresql"
# PostgreSQL refuses to run as root: its programs then run as the postgres user.
if ((EUID == 0)); then
    id postgres >/dev/null 2>&1 || die "running as root and there is no postgres user to run PostgreSQL as"
    as_pg() { (cd "$PGDIR" && runuser -u postgres -- "$@"); }
else
    as_pg() { (cd "$PGDIR" && "$@"); }
fi

# --- haul ----------------------------------------------------------------------
if [[ -z ${HAUL:-} ]]; then
    log "building haul: swift build -c release --static-swift-stdlib --build-path .build-bench --product haul"
    (cd "$PKG_ROOT" && swift build -c release --static-swift-stdlib --build-path .build-bench --product haul) >&2 ||
        die "the build failed"
    HAUL=$PKG_ROOT/.build-bench/release/haul
fi
[[ $HAUL == /* ]] || HAUL=$PWD/$HAUL
[[ -x $HAUL ]] || die "haul binary not found or not executable: $HAUL"
HAUL_VERSION=$("$HAUL" --version 2>/dev/null || echo 'version unknown')
log "haul: $HAUL ($HAUL_VERSION)"

BASE_URL=http://127.0.0.1:$PORT
curl -s -o /dev/null --max-time 2 "$BASE_URL/" && die "something already answers on port $PORT; set PORT"

# A previous run killed with SIGKILL may have left our nginx or PostgreSQL behind; stop them
# only if they are provably ours.
stop_leftover_nginx
if [[ -f $PGDIR/data/postmaster.pid ]]; then
    log "stopping leftover benchmark PostgreSQL in $PGDIR"
    as_pg "$PG_BIN/pg_ctl" -D "$PGDIR/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
fi
rm -rf "$OUT" "$RUN" "$PGDIR" "$LOGS"

# --- source files ------------------------------------------------------------------
make_small_files "$SRC" "$FILES" "$FILE_SIZE"
seq 0 $((FILES - 1)) | awk '{ printf "f%06d\n", $1 }' > "$WORK/names.txt"
(cd "$SRC" && xargs cat < "$WORK/names.txt") > /dev/null   # into the page cache before round 1
LIST=$WORK/list.txt
sed "s|^|$BASE_URL/src/|" "$WORK/names.txt" > "$LIST"
DIGEST=$( (cd "$SRC" && xargs cat < "$WORK/names.txt") | sha256sum | cut -d' ' -f1)

# --- nginx ------------------------------------------------------------------------
start_small_files_nginx

# --- PostgreSQL ---------------------------------------------------------------------
# As HaulTesting's PostgresServer does it: initdb in a directory of our own, the superuser
# over the Unix socket without a password, everyone else over TCP on 127.0.0.1 with one
# (scram-sha-256). Server settings are initdb's defaults (fsync and synchronous_commit on).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PG_PORT=${PG_PORT:-$(free_port)}
PG_PASSWORD=haul-bench
PG_URL="postgres://haul:$PG_PASSWORD@127.0.0.1:$PG_PORT/haul"
mkdir -p "$PGDIR"
((EUID == 0)) && chown postgres: "$PGDIR"
as_pg "$PG_BIN/initdb" -D "$PGDIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C --no-sync > "$PGDIR/initdb.log" 2>&1 || { cat "$PGDIR/initdb.log" >&2; die "initdb failed"; }
as_pg tee "$PGDIR/data/pg_hba.conf" > /dev/null <<EOF
local all postgres trust
host all all 127.0.0.1/32 scram-sha-256
EOF
as_pg tee "$PGDIR/data/haul.conf" > /dev/null <<EOF
# Written by fleet-bench.sh.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PGDIR'
password_encryption = 'scram-sha-256'
max_connections = 100
EOF
echo "include 'haul.conf'" | as_pg tee -a "$PGDIR/data/postgresql.conf" > /dev/null
as_pg "$PG_BIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w -t 30 start > /dev/null ||
    { tail -n 20 "$PGDIR/server.log" >&2; die "PostgreSQL did not start on 127.0.0.1:$PG_PORT"; }
PG_STARTED=1
PG_MASTER=$(head -n 1 "$PGDIR/data/postmaster.pid")
# sql [DB] [psql args...]: the superuser over the socket.
sql() { local db=$1; shift; "$PG_BIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -h "$PGDIR" -p "$PG_PORT" -U postgres -d "$db" "$@"; }
sql postgres -c "CREATE ROLE haul LOGIN PASSWORD '$PG_PASSWORD'" -c "CREATE DATABASE haul OWNER haul" > /dev/null
PG_VERSION=$(sql postgres -c "SHOW server_version")
log "PostgreSQL $PG_VERSION on 127.0.0.1:$PG_PORT (data in $PGDIR, pid $PG_MASTER)"

# --- measuring helpers --------------------------------------------------------------
TICK=$(getconf CLK_TCK)
# cpu_ticks PID: utime + stime; cpu_all_ticks PID: that plus the reaped children's.
# (Field 2, the command, may hold spaces: cut after its closing parenthesis.)
cpu_ticks() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }; s=${s##*) }; awk '{ print $12 + $13 }' <<< "$s"; }
cpu_all_ticks() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }; s=${s##*) }; awk '{ print $12 + $13 + $14 + $15 }' <<< "$s"; }
# pg_ticks: PostgreSQL's CPU so far: the postmaster with every backend it has reaped, plus the
# processes running now (backends, checkpointer, WAL writer, ...).
pg_ticks() {
    local total p
    total=$(cpu_all_ticks "$PG_MASTER")
    for p in $(ps -o pid= --ppid "$PG_MASTER"); do total=$((total + $(cpu_ticks "$p"))); done
    echo "$total"
}
# nginx_ticks: the master with its reaped children, plus its workers.
nginx_ticks() {
    local total p
    total=$(cpu_all_ticks "$NGINX_PID")
    for p in $(ps -o pid= --ppid "$NGINX_PID"); do total=$((total + $(cpu_ticks "$p"))); done
    echo "$total"
}
pg_backends() { ps -o args= --ppid "$PG_MASTER" | grep -c '^postgres: haul ' || true; }
# machine_ticks: CPU time every process on the machine has used (user, nice, system, irq, softirq, steal).
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
secs() { awk -v t="$1" -v k="$TICK" 'BEGIN { printf "%.2f\n", t / k }'; }
# since A_US [B_US]: seconds from A to B (now), both in microseconds.
since() { local b=${2:-${EPOCHREALTIME/./}}; awk -v a="$1" -v b="$b" 'BEGIN { printf "%.3f", (b - a) / 1e6 }'; }
# snooze S: sleep without a fork (read with a time limit on a FIFO that stays silent).
mkfifo "$WORK/snooze.fifo.tmp"; exec {SNOOZE_FD}<>"$WORK/snooze.fifo.tmp"; rm -f "$WORK/snooze.fifo.tmp"
snooze() { read -r -t "$1" -u "$SNOOZE_FD" _ || true; }

# One psql session for all polling, so a poll costs a query, not a process and a backend.
# stdbuf: psql writes through stdio; a line per answer, at once.
start_poller() {
    coproc PQ { exec stdbuf -oL "$PG_BIN/psql" -X -A -t -q -h "$PGDIR" -p "$PG_PORT" -U postgres -d haul 2>&1; }
    PQ_PID=$PQ_PID
    q "SELECT pg_backend_pid();"
    PQ_BACKEND=$Q
}
stop_poller() { [[ -n $PQ_PID ]] || return 0; printf '\\q\n' >&"${PQ[1]}" 2>/dev/null || true; wait "$PQ_PID" 2>/dev/null || true; PQ_PID=; }
# q SQL: Q = the answer line from the polling session (SQL must return one row).
q() {
    printf '%s\n' "$1" >&"${PQ[1]}"
    IFS= read -r -t 30 Q <&"${PQ[0]}" || die "the polling psql session did not answer: $1"
}

# check_output DIR: DIR holds exactly the FILES names, each FILE_SIZE bytes, and their contents
# in name order hash to DIGEST. Prints a status word; details on stderr.
check_output() {
    local dir=$1 got
    [[ -d $dir ]] || { echo NO-DIR; return; }
    if ! (cd "$dir" && find . -mindepth 1 -printf '%P\n' | sort | cmp -s - "$WORK/names.txt"); then
        log "$dir: the file names differ from the list (extra '<' or missing '>', first 5 of $(
            cd "$dir" && find . -mindepth 1 -printf '%P\n' | sort | diff - "$WORK/names.txt" | grep -c '^[<>]'); true)):"
        (cd "$dir" && find . -mindepth 1 -printf '%P\n' | sort | diff - "$WORK/names.txt" | grep '^[<>]' | head -n 5) >&2 || true
        echo WRONG-NAMES; return
    fi
    got=$(find "$dir" -mindepth 1 -type f -size "${FILE_SIZE}c" | wc -l)
    if ((got != FILES)); then
        log "$dir: $((FILES - got)) of $FILES files are not regular files of $FILE_SIZE bytes, e.g.:"
        find "$dir" -mindepth 1 \( -not -type f -o -not -size "${FILE_SIZE}c" \) -printf '    %P %s bytes\n' | head -n 5 >&2 || true
        echo "WRONG-SIZE:$((FILES - got))"; return
    fi
    got=$(cd "$dir" && xargs cat < "$WORK/names.txt" | sha256sum | cut -d' ' -f1)
    [[ $got == "$DIGEST" ]] || { log "$dir: the contents differ from the source"; echo WRONG-DATA; return; }
    echo ok
}

loud() { log "!!!!!!!! $* !!!!!!!!"; }
# Log lines of haul serve (swift-log's stream handler: TIMESTAMP LEVEL LABEL: ...) above info.
LOG_PROBLEM='^[^ ]+ (warning|error|critical) '
LOG_NOTICE='^[^ ]+ notice '


# metric TEXT NAME: the sum of a Prometheus metric's samples in TEXT (0 if absent).
metric() { awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%d", s }' <<< "$1"; }

# --- one run ------------------------------------------------------------------------
# run_config CONFIG ROUND: HOSTS hosts of -j JOBS on a fresh database; appends a line to TIMES.
run_config() {
    local config=$1 round=$2 hosts=${1%x*} jobs=${1#*x} k p status=ok notes=()
    local -a homes=() cpu0=() cpu1=() cpu_total=() rss=() done_by=() retries=() restarts=() exits=() urls=() secrets=()
    log "round $round: $hosts host(s) x -j $jobs ($((hosts * jobs)) slots)"

    # Fresh state: no hosts, an empty database, empty OUT, new HAUL_HOMEs; the last run's
    # writeback flushed outside the measurement.
    rm -rf "$OUT" "$RUN"
    mkdir -p "$OUT" "$RUN"
    sql postgres -c "DROP DATABASE IF EXISTS haul" -c "CREATE DATABASE haul OWNER haul" > /dev/null
    sql postgres -c "CHECKPOINT" > /dev/null
    sync

    HOST_PIDS=()
    for ((k = 1; k <= hosts; k++)); do
        homes[k]=$RUN/home$k
        mkdir -p "${homes[k]}"
        HAUL_HOME=${homes[k]} "$HAUL" serve --store "$PG_URL" --fleet-name "host$k" --port 0 -d "$OUT" \
            -j "$jobs" --lease-timeout "$LEASE_TIMEOUT" ${LIMIT_RATE:+--limit-rate "$LIMIT_RATE"} </dev/null >"$RUN/host$k.log" 2>&1 &
        HOST_PIDS[k]=$!
    done
    for ((k = 1; k <= hosts; k++)); do
        for i in {1..300}; do
            [[ -s ${homes[k]}/serve.json ]] && break
            kill -0 "${HOST_PIDS[k]}" 2>/dev/null || { tail -n 20 "$RUN/host$k.log" >&2; die "host$k exited at startup"; }
            ((i < 300)) || { tail -n 20 "$RUN/host$k.log" >&2; die "host$k wrote no serve.json within 30 s"; }
            snooze 0.1
        done
        read -r urls[k] secrets[k] p < <(python3 -c 'import json, sys; f = json.load(open(sys.argv[1])); print(f["url"], f["secret"], f["pid"])' "${homes[k]}/serve.json")
        ((p == HOST_PIDS[k])) || die "host$k: serve.json names pid $p, not ${HOST_PIDS[k]}"
    done

    start_poller
    # Idle: what the hosts cost with nothing queued (lease renewals and claims find nothing),
    # over IDLE_S seconds.
    local idle0=0 idle1=0
    for ((k = 1; k <= hosts; k++)); do idle0=$((idle0 + $(cpu_ticks "${HOST_PIDS[k]}"))); done
    snooze "$IDLE_S"
    for ((k = 1; k <= hosts; k++)); do idle1=$((idle1 + $(cpu_ticks "${HOST_PIDS[k]}"))); done
    # Baselines: CPU from here on is the run's; startup and schema migration are not in it.
    for ((k = 1; k <= hosts; k++)); do cpu0[k]=$(cpu_ticks "${HOST_PIDS[k]}"); done
    local pg0 pq0 lines0 ngx0 obs0
    pg0=$(pg_ticks)
    pq0=$(cpu_ticks "$PQ_BACKEND")
    ngx0=$(nginx_ticks)
    # The observer: this shell's polling loop, the psql client and its backend.
    obs0=$(($(cpu_ticks $$) + $(cpu_ticks "$PQ_PID") + pq0))
    lines0=$(wc -l < "$ALOG")
    local machine0
    machine0=$(machine_ticks)

    # --- the measured part: haul add, then poll until every file is completed ---
    # Times in microseconds (EPOCHREALTIME without its point); no process is forked per poll.
    local t0 t_add="" add_rc="" t_rows="" t_first="" t_all="" t_10="" t_90="" t_done="" last_change now n_rows n_owners
    local n_hosts_seen=0 completed=0 claimed last_completed=-1 limit_us=$((TIMEOUT * 1000000)) stall_us=$((STALL * 1000000))
    rm -f "$RUN/add.done"
    t0=${EPOCHREALTIME/./}
    ( HAUL_HOME=${homes[1]} /usr/bin/time -f '%U %S' -o "$RUN/add.time" -- "$HAUL" add -i "$LIST" \
          >"$RUN/add.out" 2>"$RUN/add.err" </dev/null
      echo "$? ${EPOCHREALTIME/./}" > "$RUN/add.done.tmp"; mv "$RUN/add.done.tmp" "$RUN/add.done" ) &
    local add_pid=$!
    last_change=$t0
    # Until every host holds a lease: the first rows queued (add inserts batches), the first
    # claim (every 5 ms until then), how many hosts hold a lease (every 20 ms after). A lease
    # ends when its file completes, so a status past queued counts as claimed too. Cheap
    # queries: EXISTS stops at the first row, the counts read indexes. A list done before every
    # host held a lease ends this loop too (the next one then sees it done at once): without
    # that, a small list done in 0.3 s was timed at the 15 s this loop gives the hosts.
    local done_early
    while [[ -z $t_all ]]; do
        q "SELECT EXISTS (SELECT 1 FROM haul_downloads),
                  (SELECT count(DISTINCT lease_owner) FROM haul_downloads WHERE lease_owner IS NOT NULL),
                  EXISTS (SELECT 1 FROM haul_downloads WHERE lease_owner IS NOT NULL OR status <> 'queued'),
                  (SELECT count(*) FROM haul_downloads WHERE status = 'completed') >= $FILES;"
        now=${EPOCHREALTIME/./}
        IFS='|' read -r n_rows n_owners claimed done_early <<< "$Q"
        [[ -z $t_rows && $n_rows == t ]] && t_rows=$now
        [[ -z $t_first && $claimed == t ]] && t_first=$now
        ((n_owners > n_hosts_seen)) && n_hosts_seen=$n_owners
        ((n_hosts_seen >= hosts)) && t_all=$now
        [[ -z $t_add && -f $RUN/add.done ]] && read -r add_rc t_add < "$RUN/add.done"
        [[ -n $add_rc && $add_rc != 0 ]] && break
        if [[ $done_early == t && -n $t_add ]]; then
            notes+=("done-before-all-$hosts-hosts-held-a-lease"); break
        fi
        # Hosts that never hold leases at the same moment (a fast host done before the others
        # start): stop looking after a lease timeout's worth of seconds.
        if [[ -n $t_first ]] && ((now - t_first > LEASE_TIMEOUT * 1000000)); then
            notes+=("only-$n_hosts_seen-of-$hosts-hosts-seen-claiming"); break
        fi
        ((now - t0 > limit_us)) && break
        if [[ -z $t_first ]]; then snooze 0.005; else snooze 0.02; fi
    done
    # Then every 50 ms: the completed count (the index on status answers it).
    while [[ -z $add_rc || $add_rc == 0 ]]; do
        q "SELECT count(*) FROM haul_downloads WHERE status = 'completed';"
        completed=$Q
        now=${EPOCHREALTIME/./}
        [[ -z $t_add && -f $RUN/add.done ]] && read -r add_rc t_add < "$RUN/add.done"
        ((completed != last_completed)) && { last_completed=$completed; last_change=$now; }
        [[ -z $t_10 ]] && ((completed * 10 >= FILES)) && t_10=$now
        [[ -z $t_90 ]] && ((completed * 10 >= FILES * 9)) && t_90=$now
        if ((completed >= FILES)) && [[ -n $t_add ]]; then t_done=$now; break; fi
        for ((k = 1; k <= hosts; k++)); do
            if ! kill -0 "${HOST_PIDS[k]}" 2>/dev/null && [[ " ${notes[*]} " != *" host$k-died "* ]]; then
                notes+=("host$k-died"); loud "host$k died during the run"; tail -n 20 "$RUN/host$k.log" >&2
            fi
        done
        ((now - t0 > limit_us)) && { status=TIMEOUT; loud "not done after $TIMEOUT s: $completed of $FILES completed"; break; }
        ((now - last_change > stall_us)) && { status=STALLED; loud "stuck: $completed of $FILES completed, none for $STALL s"; break; }
        snooze 0.05
    done
    if [[ $status != ok ]]; then
        log "the queue as the run ended (status, lease owner, count):"
        sql haul -F' ' -c "SELECT status, coalesce(lease_owner, '-'), count(*) FROM haul_downloads GROUP BY 1, 2 ORDER BY 1, 2" | sed 's/^/    /' >&2
    fi
    [[ -n $t_add ]] || kill "$add_pid" 2>/dev/null || true   # the add itself hung
    wait "$add_pid" 2>/dev/null || true
    if [[ -n $add_rc && $add_rc != 0 ]]; then
        status=ADD-FAILED; loud "haul add exited $add_rc"; sed 's/^/    /' "$RUN/add.err" | tail -n 10 >&2
    elif [[ -z $add_rc ]]; then
        status=$status-ADD-HUNG
    elif (($(wc -l < "$RUN/add.out") != FILES)); then
        notes+=("add-printed-$(wc -l < "$RUN/add.out")-ids")
    fi

    # --- after the run: what each host did, its CPU and memory; then stop them (SIGTERM) ---
    local metrics
    for ((k = 1; k <= hosts; k++)); do
        metrics=$(curl -s --max-time 10 -H "Authorization: Bearer ${secrets[k]}" "${urls[k]}/metrics" || true)
        done_by[k]=$(metric "$metrics" haul_downloads_finished_total)
        retries[k]=$(metric "$metrics" haul_retries_total)
        restarts[k]=$(metric "$metrics" haul_restarts_total)
        cpu1[k]=$(cpu_ticks "${HOST_PIDS[k]}")
        rss[k]=$(hwm_kib "${HOST_PIDS[k]}")
    done
    local t_stop0 stop_s
    t_stop0=${EPOCHREALTIME/./}
    for ((k = 1; k <= hosts; k++)); do kill -TERM "${HOST_PIDS[k]}" 2>/dev/null || true; done
    for ((k = 1; k <= hosts; k++)); do
        for i in {1..300}; do kill -0 "${HOST_PIDS[k]}" 2>/dev/null || break; snooze 0.1; done
        if kill -0 "${HOST_PIDS[k]}" 2>/dev/null; then
            loud "host$k did not exit within 30 s of SIGTERM; SIGKILL"
            kill -KILL "${HOST_PIDS[k]}" 2>/dev/null || true
            notes+=("host$k-hung-at-SIGTERM")
        fi
        exits[k]=0
        wait "${HOST_PIDS[k]}" 2>/dev/null || exits[k]=$?
        ((exits[k] == 0)) || notes+=("host$k-exit-${exits[k]}")
    done
    stop_s=$(since "$t_stop0")
    HOST_PIDS=()
    # PostgreSQL's share: wait for the hosts' backends to end (so the postmaster has reaped
    # them), then the difference, less the polling session's own CPU.
    for i in {1..100}; do (($(pg_backends) == 0)) && break; snooze 0.05; done
    local pg1 pq1 pg_cpu ngx_cpu obs_cpu add_cpu
    pq1=$(cpu_ticks "$PQ_BACKEND")
    obs_cpu=$(($(cpu_ticks $$) + $(cpu_ticks "$PQ_PID") + pq1 - obs0))
    pg1=$(pg_ticks)
    pg_cpu=$((pg1 - pg0 - (pq1 - pq0)))
    ngx_cpu=$(($(nginx_ticks) - ngx0))
    add_cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$RUN/add.time" 2>/dev/null || echo -)
    # Everything else the machine did meanwhile (other people's builds and tests): the noise.
    local other_cpu
    other_cpu=$(($(machine_ticks) - machine0 - pg_cpu - ngx_cpu - obs_cpu))
    for ((k = 1; k <= hosts; k++)); do other_cpu=$((other_cpu - (cpu1[k] - cpu0[k]))); done
    other_cpu=$(secs "$other_cpu" | awk -v a="$add_cpu" '{ printf "%.2f", $1 - (a == "-" ? 0 : a) }')

    # --- checks ---
    local reqs dup_sum db_counts check leases
    reqs=$(($(wc -l < "$ALOG") - lines0))
    db_counts=$(sql haul -F= -c "SELECT status, count(*) FROM haul_downloads GROUP BY status ORDER BY 1" | paste -sd, -)
    leases=$(sql haul -c "SELECT count(*) FROM haul_downloads WHERE lease_owner IS NOT NULL")
    stop_poller
    check=$(check_output "$OUT")
    if [[ $check != ok ]]; then
        [[ $status == ok ]] && status=$check || status=$status-$check
    fi
    [[ $db_counts == "completed=$FILES" ]] || notes+=("db:$db_counts")
    ((leases == 0)) || notes+=("$leases-leases-left")
    dup_sum=0
    for ((k = 1; k <= hosts; k++)); do dup_sum=$((dup_sum + done_by[k])); done
    ((dup_sum == FILES)) || notes+=("hosts-report-$dup_sum-completions")
    ((reqs == FILES)) || notes+=("$reqs-requests")
    # The hosts log at info and above; what is above info is worth a look. "another host took
    # the download over" (a lease renewal did not find a lease this host thought it held) is
    # counted apart: in a one-host run there is no other host.
    local warnings lost other_notices
    warnings=$(cat "$RUN"/host*.log | grep -cE "$LOG_PROBLEM" || true)
    lost=$(cat "$RUN"/host*.log | grep -cF 'another host took the download over' || true)
    other_notices=$(cat "$RUN"/host*.log | grep -E "$LOG_NOTICE" | grep -vcF 'another host took the download over' || true)
    ((warnings == 0)) || notes+=("$warnings-warning/error-log-lines")
    ((lost == 0)) || notes+=("$lost-lease-lost-notices")
    ((other_notices == 0)) || notes+=("$other_notices-other-notices")

    # The hosts' logs and add's stderr, kept until the next run of this script.
    mkdir -p "$LOGS/$config-r$round"
    cp "$RUN"/host*.log "$RUN/add.err" "$LOGS/$config-r$round/" 2>/dev/null || true

    # --- record ---
    local wall add_s rows_s first_s first_after_add_s all_s steady cpu_sum=0 cpu_list rss_list done_list rss_max=0
    wall=$([[ -n $t_done ]] && since "$t0" "$t_done" || echo -)
    add_s=$([[ -n $t_add ]] && since "$t0" "$t_add" || echo -)
    first_s=$([[ -n $t_first ]] && since "$t0" "$t_first" || echo -)
    rows_s=$([[ -n $t_rows ]] && since "$t0" "$t_rows" || echo -)
    first_after_add_s=$([[ -n $t_first && -n $t_add ]] && since "$t_add" "$t_first" || echo -)
    all_s=$([[ -n $t_all ]] && since "$t0" "$t_all" || echo -)
    steady=$([[ -n $t_10 && -n $t_90 && $t_90 != "$t_10" ]] && awk -v a="$t_10" -v b="$t_90" -v n="$FILES" 'BEGIN { printf "%.1f", 0.8 * n / ((b - a) / 1e6) }' || echo -)
    for ((k = 1; k <= hosts; k++)); do
        cpu_sum=$((cpu_sum + cpu1[k] - cpu0[k]))
        ((rss[k] > rss_max)) && rss_max=${rss[k]}
    done
    cpu_list=$(for ((k = 1; k <= hosts; k++)); do secs $((cpu1[k] - cpu0[k])); done | paste -sd, -)
    rss_list=$(for ((k = 1; k <= hosts; k++)); do echo "${rss[k]}"; done | paste -sd, -)
    done_list=$(for ((k = 1; k <= hosts; k++)); do echo "${done_by[k]}"; done | paste -sd, -)
    local retry_sum=0 restart_sum=0
    for ((k = 1; k <= hosts; k++)); do retry_sum=$((retry_sum + retries[k])); restart_sum=$((restart_sum + restarts[k])); done
    ((retry_sum == 0)) || notes+=("$retry_sum-retries")
    ((restart_sum == 0)) || notes+=("$restart_sum-restarts")
    local note_text
    note_text=$( ((${#notes[@]})) && (IFS=';'; echo "${notes[*]}") || echo -)
    printf '%s\t' "$config" "$round" "$hosts" "$jobs" "$FILES" "$wall" "$add_s" "$rows_s" "$first_s" "$first_after_add_s" \
        "$all_s" "$steady" "$(secs "$cpu_sum")" "$cpu_list" "$rss_list" "$(secs "$pg_cpu")" "$reqs" "$done_list" \
        "$stop_s" "$(secs $((idle1 - idle0)) | awk -v s="$IDLE_S" '{ printf "%.3f", $1 / s }')" "$(secs "$ngx_cpu")" \
        "$add_cpu" "$(secs "$obs_cpu")" "$other_cpu" "$status" >> "$TIMES"
    printf '%s\n' "$note_text" >> "$TIMES"

    log "$(printf '%-5s round %-2s %8s s  %7s files/s (steady %7s)  add %6s s  first rows %s s, first claim %s s (%s s after add returned)  all hosts at %s s' \
        "$config" "$round" "$wall" "$([[ $wall != - ]] && awk -v n="$FILES" -v e="$wall" 'BEGIN { printf "%.0f", n / e }' || echo -)" \
        "$steady" "$add_s" "$rows_s" "$first_s" "$first_after_add_s" "$all_s")"
    log "$(printf '      CPU s: haul %s (%s), PostgreSQL %s, nginx %s, haul add %s, this script %s, other processes %s;  idle hosts %s CPU s/s  peak RSS MiB %s' \
        "$(secs "$cpu_sum")" "$cpu_list" "$(secs "$pg_cpu")" "$(secs "$ngx_cpu")" "$add_cpu" "$(secs "$obs_cpu")" "$other_cpu" \
        "$(secs $((idle1 - idle0)) | awk -v s="$IDLE_S" '{ printf "%.3f", $1 / s }')" \
        "$(for ((k = 1; k <= hosts; k++)); do awk -v m="${rss[k]}" 'BEGIN { printf "%.1f\n", m / 1024 }'; done | paste -sd, -)")"
    log "$(printf '      files per host %s  requests %s  stop %s s  %s  notes: %s' "$done_list" "$reqs" "$stop_s" "$status" "$note_text")"
    if [[ $status != ok || $note_text != - ]]; then
        loud "$config round $round: $status; $note_text"
        for ((k = 1; k <= hosts; k++)); do
            if grep -qE "$LOG_PROBLEM|$LOG_NOTICE" "$RUN/host$k.log"; then
                log "host$k's log above info (first 8 of $(grep -cE "$LOG_PROBLEM|$LOG_NOTICE" "$RUN/host$k.log")):"
                grep -E "$LOG_PROBLEM|$LOG_NOTICE" "$RUN/host$k.log" | head -n 8 | cut -c1-400 | sed 's/^/    /' >&2 || true   # (grep's SIGPIPE)
            fi
        done
        log "the hosts' logs are in $LOGS/$config-r$round"
        # Notices alone (the files right, no work twice) are reported, not counted as failures;
        # so is a list too short for every host to take part.
        local serious=0 note
        [[ $status == ok ]] || serious=1
        for note in "${notes[@]}"; do [[ $note == *-notices || $note == done-before-all-* ]] || serious=1; done
        ((serious == 0)) || FAILS=$((FAILS + 1))
    fi
}

# --- EXPLAIN ANALYZE of the claim query ------------------------------------------------
# The query from PostgresDownloadStore.claim, read from the source so it cannot drift, with
# its interpolations replaced: a host name, the limit, nothing excluded, the lease. Run on
# FILES rows freshly queued (copies of the last run's rows), as a claim right after `haul add`
# would, before and after ANALYZE; each in a transaction rolled back.
explain_claim() {
    local source=$PKG_ROOT/Sources/HaulFleet/PostgresDownloadStore.swift jobs=$1 query
    query=$(python3 - "$source" "$jobs" "$LEASE_TIMEOUT" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
start = text.index("func claim(")
body = text[text.index('"""', start) + 3:]
body = body[:body.index('"""')]
values = {"excluded.map(\\.rawValue)": "'{}'", "limit": sys.argv[2], "host": "'bench-explain'",
          "leaseSeconds": sys.argv[3]}
for name, value in values.items():
    body = body.replace("\\(" + name + ")", value)
if "\\(" in body:
    sys.exit("an interpolation this script does not know in the claim query:\n" + body)
print(body.strip())
PY
) || { loud "cannot read the claim query from $source; no EXPLAIN"; return 0; }
    printf '%s\n' "$query" > "$WORK/claim.sql"
    # Queued again in a scratch copy, then inserted afresh: no dead rows, no statistics yet.
    sql haul -c "CREATE TEMP TABLE bench_rows AS SELECT * FROM haul_downloads" \
             -c "UPDATE bench_rows SET status = 'queued', lease_owner = NULL, lease_expires = NULL, command = NULL,
                     live_completed = NULL, live_total = NULL, live_speed = NULL, live_connections = NULL" \
             -c "TRUNCATE haul_downloads" \
             -c "INSERT INTO haul_downloads SELECT * FROM bench_rows ORDER BY position" > /dev/null
    local when i plan
    : > "$WORK/explain.txt"
    for when in fresh analyzed; do
        [[ $when == analyzed ]] && sql haul -c "VACUUM ANALYZE haul_downloads" > /dev/null
        for i in 1 2 3 4 5; do
            plan=$(sql haul -c "BEGIN" -c "EXPLAIN (ANALYZE, BUFFERS) $query" -c "ROLLBACK")
            printf '%s\t%s\t%s\n' "$when" "$i" "$(awk '/Planning Time/ { p = $3 } /Execution Time/ { e = $3 } END { print p "\t" e }' <<< "$plan")" >> "$WORK/explain.txt"
            [[ $i == 1 ]] && printf '%s\n' "$plan" > "$WORK/explain-$when.plan"
        done
    done
    log "claim query (limit $jobs) on $(sql haul -c "SELECT count(*) FROM haul_downloads WHERE status = 'queued'") queued rows: $(
        awk '{ print $1 " run " $2 ": planning " $3 " ms, execution " $4 " ms" }' "$WORK/explain.txt" | paste -sd';' -)"
}

# --- the rounds -------------------------------------------------------------------
: > "$TIMES"
FAILS=0
read -r -a CONFIG_LIST <<< "$CONFIGS"
log "$FILES files, configurations ${CONFIG_LIST[*]}, $ROUNDS rounds (the first configuration rotating)"
for ((r = 1; r <= ROUNDS; r++)); do
    n=${#CONFIG_LIST[@]}
    for ((c = 0; c < n; c++)); do
        run_config "${CONFIG_LIST[(c + r - 1) % n]}" "$r"
    done
done
# The last run's rows are still in the database: the claim query on them, with one host's limit.
first_config=${CONFIG_LIST[0]}
explain_claim "${first_config#*x}"
rm -rf "$OUT" "$RUN"

# --- report ----------------------------------------------------------------------
MACHINE="$(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, Linux $(uname -r), load average $LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
{
    python3 "$BENCH_DIR/fleet-bench-summary.py" --times "$TIMES" --explain "$WORK/explain.txt" \
        --plan "$WORK/explain-analyzed.plan" --files "$FILES" --file-size "$FILE_SIZE" --rounds "$ROUNDS" \
        --machine "$MACHINE" --haul-bin "$HAUL" --haul-version "$HAUL_VERSION" --postgres "PostgreSQL $PG_VERSION" \
        --timeout "$TIMEOUT" --explain-limit "${first_config#*x}" --idle-seconds "$IDLE_S"
    printf '\nRaw runs (config round hosts jobs files wall_s add_s first_rows_s first_claim_s first_claim_after_add_s all_hosts_claiming_s steady_files_per_s haul_cpu_s cpu_per_host_s peak_rss_kib_per_host postgres_cpu_s requests completed_per_host stop_s idle_haul_cpu_s_per_s nginx_cpu_s add_cpu_s observer_cpu_s other_processes_cpu_s status notes):\n'
    cat "$TIMES"
} | tee "$REPORT"
log "written to $REPORT"

((FAILS == 0)) || die "$FAILS runs failed, stalled, timed out, wrote wrong files or left warnings in the logs; see above"
