#!/usr/bin/env python3
"""Writes Packaging/haul.order: the functions a download runs, for the linker to put together.

A download runs about 2.4 MB of the binary's 25 MB of code, but those functions lie all over it,
and the kernel maps the file in windows of 64 KiB around each page first touched: `haul get -x 1`
had 14 MB of its code resident. Packaging/package.sh compiles every Swift and C function into its
own section and hands this list to gold (`--section-ordering-file`), which lays the listed
sections first, side by side.

The list comes from running haul under valgrind's callgrind, which names every function that ran
(sampling would miss those run once, and each of those costs a window). The runs: `haul get` over
plain HTTP with one connection, quiet and with progress, a second `get` of a finished file,
`--json` with 4 connections, TLS with 16, then the version and the help, all against nginx on
loopback. Run it again when
the code changes much; a function that is not listed still works, only from its old place:

    Packaging/function-order.py [HAUL_BINARY]

HAUL_BINARY needs its symbol table (the unstripped build; the default is .build-release's). It
needs valgrind, nginx and openssl.
"""

import bisect
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "Packaging", "haul.order")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(work, files):
    """nginx serving `files` on a plain and a TLS port; returns (plain, tls, cert, stop)."""
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
        check=True, capture_output=True)
    plain, tls = free_port(), free_port()
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1; daemon on; pid {work}/nginx.pid; error_log {work}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; sendfile on;
  client_body_temp_path {work}; proxy_temp_path {work}; fastcgi_temp_path {work};
  uwsgi_temp_path {work}; scgi_temp_path {work};
  server {{ listen 127.0.0.1:{plain}; root {files}; }}
  server {{ listen 127.0.0.1:{tls} ssl; ssl_certificate {cert}; ssl_certificate_key {key}; root {files}; }} }}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    subprocess.run([nginx, "-c", conf, "-p", work], check=True)

    def stop():
        subprocess.run([nginx, "-c", conf, "-p", work, "-s", "stop"], check=False)

    return plain, tls, cert, stop


def executed_functions(profile, binary_name):
    """Names of the functions of the binary that ran, in the order callgrind lists them."""
    names, seen, in_binary = [], set(), False
    with open(profile, errors="replace") as f:
        for line in f:
            if line.startswith("ob="):
                in_binary = line[3:].strip().endswith("/" + binary_name)
            elif line.startswith("fn=") and in_binary:
                name = re.sub(r"'\d+$", "", line[3:].strip())  # callgrind's recursion suffix
                if name not in seen:
                    seen.add(name)
                    names.append(name)
    return names


def function_addresses(binary):
    """The address of each function symbol of `binary`."""
    address = {}
    listing = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True, text=True).stdout
    for line in listing.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            address[parts[2]] = int(parts[0], 16)
    return address


class TextSections:
    """The input sections of `.text`, from gold's link map (`-Map`): what the ordering file names."""

    def __init__(self, path):
        self.sections = []  # (start, end, name)
        in_text, pending = False, None
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if re.match(r"^\.text\s", line):
                    in_text = True
                    continue
                if in_text and re.match(r"^\.\S", line):
                    break
                if not in_text:
                    continue
                # " .text.NAME 0xADDR 0xSIZE file", or the name alone with the rest on the next line
                whole = re.match(r"^ (\.text\S*)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s", line)
                if whole:
                    self.add(whole[1], int(whole[2], 16), int(whole[3], 16))
                    pending = None
                elif re.match(r"^ \.text\S*$", line):
                    pending = line.strip()
                elif pending and (rest := re.match(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s", line)):
                    self.add(pending, int(rest[1], 16), int(rest[2], 16))
                    pending = None
        self.sections.sort()
        self.starts = [start for start, _, _ in self.sections]
        if not self.sections:
            sys.exit(f"function-order.py: {path} lists no .text sections (is it gold's -Map output?)")

    def add(self, name, start, size):
        if size:
            self.sections.append((start, start + size, name))

    def containing(self, address):
        """The name of the section holding `address`, unless it is a whole object's `.text`, which
        cannot be moved by name."""
        index = bisect.bisect_right(self.starts, address) - 1
        if index < 0:
            return None
        start, end, name = self.sections[index]
        return name if start <= address < end and name != ".text" else None


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build-release/release/haul"))
    link_map = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, ".build-release/haul.map")
    for tool in ("valgrind", "openssl"):
        if not shutil.which(tool):
            sys.exit(f"function-order.py: {tool} is needed")
    address = function_addresses(binary)
    if not address:
        sys.exit(f"function-order.py: {binary} has no symbol table (give the unstripped build)")
    sections = TextSections(link_map)

    work = tempfile.mkdtemp(prefix="haul-order-")
    try:
        # valgrind cannot read the DWARF of clang 21; the symbol table is all it needs.
        profiled = os.path.join(work, "haul")
        subprocess.run(["strip", "--strip-debug", "-o", profiled, binary], check=True)
        files = os.path.join(work, "files")
        os.makedirs(files)
        with open(os.path.join(files, "big.bin"), "wb") as f:
            f.write(os.urandom(48 << 20))
        plain, tls, cert, stop = start_nginx(work, files)
        home, out = os.path.join(work, "home"), os.path.join(work, "out")
        # In the order a section is first listed: what `haul get` runs first, then TLS, then the
        # help, so that a plain download touches the fewest pages.
        runs = [
            ["get", "-q", "-x", "1", "-d", out, f"http://127.0.0.1:{plain}/big.bin"],
            ["get", "-x", "1", "-d", out, "-o", "progress.bin", f"http://127.0.0.1:{plain}/big.bin"],
            ["get", "-x", "1", "-d", out, f"http://127.0.0.1:{plain}/big.bin"],  # finished: not fetched again
            ["get", "--json", "-x", "4", "-d", out, "-o", "json.bin", f"http://127.0.0.1:{plain}/big.bin"],
            ["get", "-x", "16", "--cacert", cert, "-d", out, "-o", "tls.bin", f"https://127.0.0.1:{tls}/big.bin"],
            ["--version"],
            ["--help"],
            ["get", "--help"],
        ]
        order, seen = [], set()
        try:
            for index, arguments in enumerate(runs):
                profile = os.path.join(work, f"callgrind.{index}")
                environment = dict(os.environ, HAUL_HOME=home, XDG_CONFIG_HOME=os.path.join(work, "config"))
                ran = subprocess.run(
                    ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no", "--compress-strings=no",
                     "--compress-pos=no", f"--callgrind-out-file={profile}", profiled, *arguments],
                    env=environment, capture_output=True, text=True)
                if ran.returncode != 0:
                    sys.exit(f"function-order.py: haul {' '.join(arguments)} failed:\n{ran.stderr}")
                for name in executed_functions(profile, "haul"):
                    # callgrind names a function without a symbol (a class's destroyer, say) by address
                    at = int(name, 16) if name.startswith("0x") else address.get(name)
                    section = sections.containing(at) if at is not None else None
                    if section and section not in seen:
                        seen.add(section)
                        order.append(section)
                print(f"{' '.join(arguments[:3])}: {len(order)} functions so far", file=sys.stderr)
        finally:
            stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    with open(OUTPUT, "w") as f:
        f.write("".join(f"{section}\n" for section in order))
    print(f"{OUTPUT}: {len(order)} functions", file=sys.stderr)


if __name__ == "__main__":
    main()
