#!/bin/sh
# Builds haul's release archive and Debian package into dist/ (or $1):
#
#   dist/haul-VERSION-linux-ARCH.tar.gz   bin/, share/man, completions, systemd units, docs
#   dist/haul_VERSION_ARCH.deb             the same files under /usr, for dpkg / apt install
#
# It prints the two paths, the build's output going to stderr. VERSION is HaulVersion.current. The binaries carry the Swift runtime and FoundationEssentials
# (--static-swift-stdlib); libc, libstdc++, libgcc and zlib stay shared, and the package depends
# on them as dpkg-shlibdeps finds. Packaging/check-package.sh installs and tries the result.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dist=${1:-$root/dist}
build=$root/.build-release
cd "$root"

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/HaulCore/Model/HaulVersion.swift)
[ -n "$version" ] || { echo "package.sh: cannot read HaulVersion.current" >&2; exit 1; }
# A release tag at HEAD must name this version.
if tag=$(git describe --exact-match --tags HEAD 2>/dev/null); then
    [ "$tag" = "v$version" ] || [ "$tag" = "$version" ] || {
        echo "package.sh: HEAD is tagged $tag but HaulVersion.current is $version" >&2
        exit 1
    }
fi
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)

# Every function in its own section, so the linker drops those nothing calls (3 MB) and lays
# those a download runs side by side (Packaging/haul.order, from Packaging/function-order.py);
# it drops every export (Packaging/exports.map) and folds identical functions. The link map is
# what function-order.py reads.
for product in haul haul-fleet; do
    swift build -c release --static-swift-stdlib --product "$product" --build-path "$build" \
        -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
        -Xlinker --version-script="$root/Packaging/exports.map" -Xlinker --icf=safe \
        -Xlinker --section-ordering-file="$root/Packaging/haul.order" -Xlinker -Map="$build/$product.map" >&2
done
bin=$(swift build -c release --build-path "$build" --show-bin-path)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
tree=$stage/haul-$version
mkdir -p "$tree/bin" "$tree/share/man/man1" "$tree/share/bash-completion/completions" \
    "$tree/share/zsh/site-functions" "$tree/share/fish/vendor_completions.d" \
    "$tree/lib/systemd/system" "$tree/lib/systemd/user" "$tree/lib/sysusers.d" "$tree/share/doc/haul"
for product in haul haul-fleet; do
    strip -o "$tree/bin/$product" "$bin/$product"
done

# Completions and manual pages, from the commands themselves.
"$tree/bin/haul" --generate-completion-script bash > "$tree/share/bash-completion/completions/haul"
"$tree/bin/haul" --generate-completion-script zsh > "$tree/share/zsh/site-functions/_haul"
"$tree/bin/haul" --generate-completion-script fish > "$tree/share/fish/vendor_completions.d/haul.fish"
Packaging/manual-pages.sh "$tree/share/man/man1"

cp Packaging/systemd/haul.service "$tree/lib/systemd/system/haul.service"
cp Packaging/systemd/user/haul.service "$tree/lib/systemd/user/haul.service"
cp Packaging/systemd/haul.sysusers "$tree/lib/sysusers.d/haul.conf"
cp README.md LICENSE "$tree/share/doc/haul/"

mkdir -p "$dist"
archive=$dist/haul-$version-linux-$arch.tar.gz
tar -C "$stage" --owner=0 --group=0 -czf "$archive" "haul-$version"

# The Debian package: the same tree under /usr, the copyright file Debian asks for.
deb=$stage/deb
mkdir -p "$deb/usr" "$deb/DEBIAN" "$deb/usr/share/doc/haul"
cp -R "$tree/bin" "$tree/share" "$deb/usr/"
cp -R "$tree/lib" "$deb/usr/lib"
gzip -9n "$deb"/usr/share/man/man1/*.1
rm "$deb/usr/share/doc/haul/LICENSE"
cat > "$deb/usr/share/doc/haul/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: haul
Source: https://github.com/haul-downloader/haul

Files: *
Copyright: the haul authors
License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0; it is also in the release archive's LICENSE.
EOF
# dpkg-shlibdeps reads the shared libraries the binaries need from a source tree's control file.
mkdir -p "$stage/src/debian"
printf 'Source: haul\n\nPackage: haul\nArchitecture: any\n' > "$stage/src/debian/control"
depends=$(cd "$stage/src" && dpkg-shlibdeps -O -e"$deb/usr/bin/haul" -e"$deb/usr/bin/haul-fleet" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk "$deb/usr" | cut -f1)
cat > "$deb/DEBIAN/control" <<EOF
Package: haul
Version: $version
Architecture: $arch
Maintainer: haul authors <haul@localhost>
Installed-Size: $size
Depends: $depends
Section: net
Priority: optional
Homepage: https://github.com/haul-downloader/haul
Description: resumable download manager and daemon
 haul downloads large files, or very many files, over HTTP and HTTPS and never starts
 over: a dropped connection, a pause, a reboot or a kill costs seconds of transfer, never
 a corrupt file. One file over up to 64 connections, mirrors, Metalink, digests, rate
 limits; a daemon (haul serve) with an HTTP API, a web page and aria2's JSON-RPC, run
 under systemd (haul.service) or per user; a fleet of hosts sharing a PostgreSQL queue
 (haul-fleet).
EOF
cp Packaging/debian/postinst Packaging/debian/postrm "$deb/DEBIAN/"
chmod 0755 "$deb/DEBIAN/postinst" "$deb/DEBIAN/postrm"
package=$dist/haul_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$deb" "$package" >/dev/null
echo "$archive"
echo "$package"
