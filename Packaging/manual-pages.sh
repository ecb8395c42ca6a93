#!/bin/sh
# haul(1) and a page per subcommand (haul.get(1), haul.serve(1), ...) into $1, made from the
# commands themselves by swift-argument-parser's generate-manual plugin. It builds in debug: the
# pages are those of a release build, and CI's test build has already built it.
set -eu
out=$1
cd "$(dirname "$0")/.."
swift package plugin generate-manual --configuration debug --multi-page \
    --authors "the haul authors" >&2
pages=.build/plugins/GenerateManual/outputs/haul
ls "$pages"/haul.1 >/dev/null
mkdir -p "$out"
cp "$pages"/*.1 "$out"/
