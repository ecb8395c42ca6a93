#!/bin/sh
# Builds the release archive and the Debian package (Packaging/package.sh) and checks what a user
# would get, from the package unpacked into a scratch root:
#   - haul --version is HaulVersion.current, and the stripped binary is within Packaging/size-limit;
#   - the manual pages, completions, units, copyright and haul-fleet are where Debian puts them;
#   - haul get downloads a file served by python3 -m http.server on loopback, byte for byte;
#   - the daemon's speed schedule follows local time across a daylight-saving change, read from
#     the C library's zones (the binary has none of Foundation's), under libfaketime;
#   - systemd-analyze verify accepts both units, where systemd-analyze exists.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail() { echo "check-package.sh: $*" >&2; exit 1; }

built=$(Packaging/package.sh "$root/dist")
archive=$(echo "$built" | sed -n 1p)
deb=$(echo "$built" | sed -n 2p)
version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/HaulCore/Model/HaulVersion.swift)

scratch=$(mktemp -d)
cleanup() {
    for pid in $(cat "$scratch"/*.pid 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    rm -rf "$scratch"
}
trap cleanup EXIT
dpkg-deb -x "$deb" "$scratch/root"
tar -C "$scratch" -xzf "$archive"
haul=$scratch/root/usr/bin/haul

[ "$("$haul" --version)" = "$version" ] || fail "haul --version says $("$haul" --version), not $version"
size=$(stat -c %s "$haul")
limit=$(grep -v '^#' Packaging/size-limit)
echo "haul: $size bytes stripped (limit $limit); haul-fleet: $(stat -c %s "$scratch/root/usr/bin/haul-fleet")"
[ "$size" -le "$limit" ] || fail "haul is $size bytes, past Packaging/size-limit ($limit)"

for file in usr/bin/haul-fleet usr/share/man/man1/haul.1.gz usr/share/man/man1/haul.get.1.gz \
    usr/share/man/man1/haul.serve.1.gz usr/share/bash-completion/completions/haul \
    usr/share/zsh/site-functions/_haul usr/share/fish/vendor_completions.d/haul.fish \
    usr/lib/systemd/system/haul.service usr/lib/systemd/user/haul.service usr/lib/sysusers.d/haul.conf \
    usr/share/doc/haul/copyright usr/share/doc/haul/README.md; do
    [ -s "$scratch/root/$file" ] || fail "the package has no $file"
done
[ -s "$scratch/haul-$version/share/doc/haul/LICENSE" ] || fail "the archive has no LICENSE"
zcat "$scratch/root/usr/share/man/man1/haul.1.gz" | grep -q "130 interrupted" ||
    fail "haul(1) does not list the exit codes"

# A download from a real server on loopback.
mkdir -p "$scratch/files" "$scratch/home"
head -c 3000000 /dev/urandom > "$scratch/files/random.bin"
python3 -u -m http.server --bind 127.0.0.1 --directory "$scratch/files" 0 > "$scratch/http.log" 2>&1 &
echo $! > "$scratch/http.pid"
port=
for _ in $(seq 1 100); do
    port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$scratch/http.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || fail "python3 -m http.server did not start"
HAUL_HOME=$scratch/home "$haul" get -q -o "$scratch/got.bin" "http://127.0.0.1:$port/random.bin"
cmp "$scratch/files/random.bin" "$scratch/got.bin" || fail "haul get wrote other bytes"
echo "haul get: $(stat -c %s "$scratch/got.bin") bytes, the same as served"

# Local time on both sides of a daylight-saving change: Berlin's clocks go from 02:00 CET to
# 03:00 CEST at 01:00 UTC on Sunday 2027-03-28. The daemon, its clock moved by libfaketime and
# its zone from TZ (tzdata, through the C library: the binary has none of Foundation's), must
# apply the 01:00-02:00 rule when started at 00:59:30 UTC and the 03:00-04:00 rule when started
# at 01:00:30 UTC; read as UTC, it would apply none, then the first.
faketime_lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1 || true)
limit_at() {
    offset=$(($1 - $(date +%s)))
    case $offset in -*) ;; *) offset=+$offset ;; esac
    # Through timeout (also a hang guard): haul exec'd straight under libfaketime 0.9.10 sees no
    # arguments (CommandLine.arguments is empty), though a process started by another does.
    HAUL_HOME=$scratch/dst-$1 TZ=Europe/Berlin LD_PRELOAD=$faketime_lib FAKETIME="$offset" \
        FAKETIME_DONT_FAKE_MONOTONIC=1 timeout 120 "$haul" serve --port 0 -d "$scratch/dst-files" \
        --limit-schedule 'Sun 01:00-02:00 100K; Sun 03:00-04:00 200K' > "$scratch/dst-$1.log" 2>&1 &
    echo $! > "$scratch/dst-$1.pid"
    python3 - "$scratch/dst-$1" <<'EOF' || { cat "$scratch/dst-$1.log" >&2; fail "no limit from the daemon"; }
import json, sys, time, urllib.request
home = sys.argv[1]
for _ in range(600):
    try:
        serve = json.load(open(home + "/serve.json"))
        request = urllib.request.Request(serve["url"] + "/api/v1/options",
                                         headers={"Authorization": "Bearer " + serve["secret"]})
        print(json.load(urllib.request.urlopen(request, timeout=5))["maxBytesPerSecond"])
        sys.exit(0)
    except (OSError, ValueError, KeyError):
        time.sleep(0.1)
sys.exit(1)
EOF
    kill "$(cat "$scratch/dst-$1.pid")"
}
if [ -n "$faketime_lib" ] && [ -e /usr/share/zoneinfo/Europe/Berlin ]; then
    before=$(limit_at 1806195570)
    after=$(limit_at 1806195630)
    echo "speed schedule: $before at 01:59:30 CET, $after at 03:00:30 CEST"
    [ "$before" = 102400 ] && [ "$after" = 204800 ] || fail "the schedule did not follow local time"
else
    echo "no libfaketime or no tzdata: the daylight-saving check is skipped"
fi

if command -v systemd-analyze >/dev/null 2>&1; then
    # Each unit as installed, but running the unpacked binary (verify checks that ExecStart's
    # program exists); its manual page is not looked up in this machine's man.
    for unit in system user; do
        mkdir -p "$scratch/units/$unit"
        sed "s|/usr/bin/haul|$haul|" "$scratch/root/usr/lib/systemd/$unit/haul.service" \
            > "$scratch/units/$unit/haul.service"
        scope=--system
        [ "$unit" = user ] && scope=--user
        mkdir -p -m 700 "$scratch/runtime"
        XDG_RUNTIME_DIR=$scratch/runtime systemd-analyze verify "$scope" --man=no \
            "$scratch/units/$unit/haul.service" ||
            fail "systemd-analyze verify refuses the $unit unit"
    done
    echo "systemd-analyze verify: both units"
fi
echo "check-package.sh: $deb and $archive are good"
