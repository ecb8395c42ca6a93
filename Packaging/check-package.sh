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

# Local time across a daylight-saving change: Berlin's clocks go from 02:00 to 03:00 at 01:00 UTC
# on Sunday 2027-03-28. The daemon starts at 01:59:30 CET (libfaketime shifts its clock; its
# zone is TZ's, from tzdata), applies the 01:00-02:00 rule, and 30 seconds later must apply the
# 03:00-04:00 one.
faketime_lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1 || true)
if [ -n "$faketime_lib" ] && [ -e /usr/share/zoneinfo/Europe/Berlin ]; then
    offset=$((1806195570 - $(date +%s)))
    HAUL_HOME=$scratch/dst TZ=Europe/Berlin LD_PRELOAD=$faketime_lib FAKETIME="${offset}s" \
        FAKETIME_DONT_FAKE_MONOTONIC=1 "$haul" serve --port 0 -d "$scratch/dst-files" \
        --limit-schedule 'Sun 01:00-02:00 100K; Sun 03:00-04:00 200K' > "$scratch/dst.log" 2>&1 &
    echo $! > "$scratch/dst.pid"
    python3 - "$scratch/dst" <<'EOF' || { cat "$scratch/dst.log" >&2; fail "the schedule did not follow local time"; }
import json, sys, time, urllib.request
home = sys.argv[1]
def limit():
    serve = json.load(open(home + "/serve.json"))
    request = urllib.request.Request(serve["url"].rstrip("/") + "/api/v1/options",
                                     headers={"Authorization": "Bearer " + serve["secret"]})
    return json.load(urllib.request.urlopen(request, timeout=5))["maxBytesPerSecond"]
seen = []
for _ in range(900):
    try:
        value = limit()
    except (OSError, ValueError, KeyError):
        value = "not up"
    if not seen or seen[-1] != value:
        seen.append(value)
    if value == 200 * 1024:
        break
    time.sleep(0.1)
print("speed schedule across the change:", seen)
sys.exit(0 if seen[-2:] == [100 * 1024, 200 * 1024] else 1)
EOF
else
    echo "no libfaketime or no tzdata: the daylight-saving check is skipped"
fi

if command -v systemd-analyze >/dev/null 2>&1; then
    for unit in system/haul.service user/haul.service; do
        systemd-analyze verify --root="$scratch/root" "$scratch/root/usr/lib/systemd/$unit" ||
            fail "systemd-analyze verify refuses $unit"
    done
    echo "systemd-analyze verify: both units"
fi
echo "check-package.sh: $deb and $archive are good"
