#!/usr/bin/env python3
"""What the haul binary holds, by library: reads the GNU linker map of a static release build
and sums the loaded input sections (code, read-only data, unwind tables, ...) per archive
(a toolchain library such as libFoundationInternationalization.a) or per module of the build.

    swift build -c release --static-swift-stdlib --product haul --build-path .build-static \
        -Xlinker -Map=/tmp/haul.map
    python3 Benchmarks/binary-size.py /tmp/haul.map [TOP]

Debug sections are left out (strip removes them); so is what --gc-sections discarded.
"""
import collections
import re
import sys

ENTRY = re.compile(r"^\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\S.*)$")
NAMED = re.compile(r"^ (\.\S+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\S.*)$")


def owner(path):
    archive = re.search(r"([^/]+\.a)\(", path)
    if archive:
        return archive.group(1)
    module = re.search(r"/([^/]+)\.build/", path)
    if module:
        return module.group(1)
    return path.rsplit("/", 1)[-1]


def kind(section):
    for prefix in (".text", ".rodata", ".eh_frame", ".data.rel.ro", ".data", ".bss", ".gcc_except_table"):
        if section.startswith(prefix):
            return prefix
    if section.startswith("swift5_"):
        return "swift5_*"
    return "other"


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    sizes = collections.defaultdict(lambda: collections.Counter())
    in_map = False
    pending = None
    with open(path, errors="replace") as lines:
        for line in lines:
            if not in_map:
                in_map = line.startswith(("Linker script and memory map", "Memory map"))
                continue
            line = line.rstrip("\n")
            named = NAMED.match(line)
            if named:
                section, _, size, source = named.groups()
            else:
                entry = ENTRY.match(line)
                if entry and pending:
                    section, (_, size, source) = pending, entry.groups()
                else:
                    # A long input section's name stands alone; its address and size follow.
                    alone = re.match(r"^ (\.\S+|swift5_\S+)$", line)
                    pending = alone.group(1) if alone else None
                    continue
            pending = None
            if section.startswith(".debug") or section.startswith(".comment") or section.startswith(".note"):
                continue
            if "(size before relaxing)" in source or source.startswith("load address"):
                continue
            bytes_ = int(size, 16)
            if bytes_ == 0:
                continue
            sizes[owner(source)][kind(section)] += bytes_
    totals = sorted(((sum(c.values()), name, c) for name, c in sizes.items()), reverse=True)
    everything = sum(t for t, _, _ in totals)
    print(f"{'library or module':44} {'MB':>7} {'text':>7} {'rodata':>7} {'eh':>6} {'data':>6}")
    for total, name, c in totals[:top]:
        data = c[".data"] + c[".data.rel.ro"]
        print(f"{name[:44]:44} {total / 1e6:7.2f} {c['.text'] / 1e6:7.2f} {c['.rodata'] / 1e6:7.2f} "
              f"{c['.eh_frame'] / 1e6:6.2f} {data / 1e6:6.2f}")
    rest = sum(t for t, _, _ in totals[top:])
    print(f"{'(the other ' + str(len(totals) - top) + ')':44} {rest / 1e6:7.2f}")
    print(f"{'all loaded sections':44} {everything / 1e6:7.2f}")


if __name__ == "__main__":
    main()
