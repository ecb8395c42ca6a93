#!/usr/bin/env python3
"""relay.py: a TCP relay on loopback that adds the latency and bandwidth limits of a real network.

Loopback has no latency, so a download manager benchmarked against a local server never pays for
its round trips (connection setup, TLS handshakes, request/response turns). This relay sits between
the client and the server and puts them back. Bytes pass through untouched in both directions (TLS
stays end to end, nothing is parsed); only their timing changes.

Model, per accepted connection (t0 = the moment the relay accepts it):
  * Every byte is delayed by one-way delay D = RTT/2 in each direction, as timestamped chunks in a
    per-direction queue. The reader never waits for the delay; a scheduled writer releases each chunk
    when its time comes, so a stream runs at full speed with RTT/2 of data in flight.
  * Connection setup pays its round trip too. The client's connect to the relay completes at once on
    loopback (no way around that without raw sockets), so the relay accounts for it instead: the
    upstream connect is made at t0 + D (the SYN reaching the server); client bytes count as sent no
    earlier than t0 + RTT (when a real client learns its connect succeeded) and reach the server D
    after that; server bytes reach the client no earlier than t0 + 2 RTT. A plain HTTP request thus
    sees its first response byte after 2 RTT, as on a real link, though curl's time_connect is ~0.
  * --conn-rate caps each connection in each direction: a token bucket kept as a virtual clock (the
    time at which the connection's link is next free); a chunk departs when its last byte has been
    serialised and arrives D later. Chunks are cut into slices of ~10 ms at the cap, so pacing is
    smooth. --shared-rate caps the sum of all connections' server-to-client traffic: one scheduler
    serves the connections round robin, a ~10 ms quantum of bytes each turn (byte-fair), at that
    rate (and within each connection's own --conn-rate).
  * Backpressure: a direction stops reading from its source while its delay queue holds more than
    its limit (--max-queue; default max(4 MiB, 2 x cap x RTT/2), or 512 MiB/s x RTT/2 uncapped) or,
    when capped, while more than ~50 ms of data (one quantum, with --shared-rate) waits for the cap.
    Memory stays bounded and TCP flow control reaches the sender.
  * EOF from one side becomes a write_eof to the other once the data queued before it is delivered
    (also D later). When both directions have ended, both sockets are closed. A reset or error on
    either side (or a failed upstream connect) resets both.

Usage:
  python3 Benchmarks/relay.py --target 127.0.0.1:8443 [--listen PORT] [--rtt MS]
                              [--conn-rate RATE] [--shared-rate RATE] [--max-queue SIZE]
RATE/SIZE: a number of bytes (per second), with optional binary suffix K, M or G (4M = 4 MiB/s).
Prints "relay listening on 127.0.0.1:PORT" on stdout when ready; on SIGTERM/SIGINT it exits 0 and
prints a one-line summary (connections accepted, bytes each way) on stderr. Bad arguments: one line
on stderr, exit 2. Standard library only (Python 3.11+).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import signal
import socket
import struct
import sys

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

READ_SIZE = 256 * KIB  # uncapped reads (asyncio's own maximum for plain Protocols)
BACKLOG_HI = 0.050  # capped direction: stop reading when this much data (in seconds) waits for the cap
BACKLOG_LO = 0.025  # ... and read again when it is down to this
EARLY = 0.0005  # a timer may fire this early and still release its chunk
HORIZON = 0.005  # the shared-rate scheduler plans this far ahead
WRITE_HIGH = 1 * MIB  # transport write buffer high/low water marks
WRITE_LOW = 256 * KIB
UNCAPPED_RATE = 512 * MIB  # sizes the default queue limit of an uncapped direction with delay

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmg]?)(?:i?b)?(?:/s)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": KIB, "m": MIB, "g": GIB}


def parse_size(text: str) -> int:
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (expected e.g. 4M, 512K, 1.5G or a byte count)")
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value <= 0:
        raise ValueError(f"must be positive: {text!r}")
    return value


def parse_hostport(text: str, default_host: str | None) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        if default_host is None:
            raise ValueError(f"expected HOST:PORT, got {text!r}")
        host, port = default_host, text
    host = host.strip("[]") or (default_host or "")
    if not host:
        raise ValueError(f"missing host in {text!r}")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"bad port in {text!r}")
    return host, int(port)


def human(n: float) -> str:
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


class Shared:
    """The shared server-to-client link: a scheduler that serialises the connections' data in
    round robin, one quantum of bytes per turn (so byte-fair), at the shared rate.

    It plans at most HORIZON ahead: each turn moves a quantum from a connection's pending data into
    its delay queue, stamped with the time its last byte leaves the shared link (plus RTT/2)."""

    __slots__ = ("loop", "rate", "quantum", "t", "flows", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, rate: float):
        self.loop = loop
        self.rate = rate
        self.quantum = slice_size(rate)
        self.t = 0.0  # loop time at which the shared link is next free
        self.flows: collections.deque[Pipe] = collections.deque()  # pipes with pending data
        self.timer: asyncio.TimerHandle | None = None

    def join(self, pipe: Pipe) -> None:
        self.flows.append(pipe)
        if self.timer is not None:
            if self.t > self.loop.time() + HORIZON:
                return  # the link is busy; the pending run() will get to it
            self.timer.cancel()  # waiting for conn-capped flows only: run now
        self.run()

    def run(self) -> None:
        self.timer = None
        now = self.loop.time()
        limit = now + HORIZON
        t = self.t if self.t > now else now
        flows = self.flows
        wait_until = None
        blocked = 0
        while flows and t <= limit:
            pipe = flows.popleft()
            if pipe.conn.closed or not pipe.pending:
                pipe.in_flows = False
                continue
            if pipe.rate and pipe.busy_until > limit:  # held back by its own --conn-rate
                flows.append(pipe)
                w = pipe.busy_until - HORIZON
                if wait_until is None or w < wait_until:
                    wait_until = w
                blocked += 1
                if blocked >= len(flows):
                    break
                continue
            blocked = 0
            t = pipe.take(t, self.rate, self.quantum)
            if pipe.pending:
                flows.append(pipe)
            else:
                pipe.in_flows = False
        self.t = t
        if flows:
            when = t - HORIZON if t > limit else wait_until
            self.timer = self.loop.call_at(when, self.run)


def slice_size(rate: float) -> int:
    """Bytes per paced slice at a cap: ~10 ms worth, within [16 KiB, 256 KiB]."""
    return int(max(16 * KIB, min(256 * KIB, rate / 100)))


class Pipe:
    """One direction of one connection: src transport -> delay/rate queue -> dst transport."""

    __slots__ = (
        "conn", "loop", "stats", "index", "owd", "floor", "rate", "shared", "capped", "limit",
        "resume_at", "slice", "q", "queued", "src", "dst", "dst_paused", "reading_paused",
        "timer", "resume_timer", "busy_until", "last_depart", "eof_in", "eof_out",
        "pending", "pending_bytes", "pending_max", "in_flows",
    )

    def __init__(self, conn: Conn, index: int, floor: float, rate: float | None,
                 shared: Shared | None, limit: int):
        relay = conn.relay
        self.conn = conn
        self.loop = relay.loop
        self.stats = relay.bytes
        self.index = index  # 0: client -> server, 1: server -> client
        self.owd = relay.owd
        self.floor = floor  # bytes count as sent no earlier than this (connection setup)
        self.rate = rate
        self.shared = shared
        self.capped = bool(rate or shared)
        self.limit = limit
        self.resume_at = limit * 3 // 4
        self.slice = slice_size(rate) if rate else READ_SIZE
        self.q: collections.deque = collections.deque()  # (release time, bytes | None = EOF)
        self.queued = 0  # bytes in q
        self.src: asyncio.Transport | None = None
        self.dst: asyncio.Transport | None = None
        self.dst_paused = False
        self.reading_paused = False
        self.timer: asyncio.TimerHandle | None = None
        self.resume_timer: asyncio.TimerHandle | None = None
        self.busy_until = 0.0  # --conn-rate: when this connection's link is next free
        self.last_depart = 0.0
        self.eof_in = False
        self.eof_out = False
        # With --shared-rate: data read but not yet through the shared link's scheduler.
        self.pending: collections.deque = collections.deque()
        self.pending_bytes = 0
        self.pending_max = shared.quantum if shared else 0
        self.in_flows = False

    def feed(self, data: bytes) -> None:
        """The reader: stamp what was read with its delivery time and queue it; never waits."""
        if self.conn.closed or self.eof_in:
            return
        now = self.loop.time()
        n = len(data)
        if self.shared is not None:
            self.pending.append(data)
            self.pending_bytes += n
            if not self.in_flows:
                self.in_flows = True
                self.shared.join(self)
            if not self.reading_paused and (
                self.pending_bytes > self.pending_max or self.queued > self.limit
            ):
                self.reading_paused = True
                self.src.pause_reading()
            return
        start = now if now >= self.floor else self.floor
        if not self.capped:
            t = start + self.owd
            if (not self.q and t <= now and self.dst is not None and not self.dst_paused):
                self.dst.write(data)  # fast path: no delay, nothing queued, room downstream
                self.stats[self.index] += n
                return
            self.q.append((t, data))
            self.queued += n
        else:
            rate, step = self.rate, self.slice
            mv = memoryview(data) if n > step else None
            depart = start
            for off in range(0, n, step):
                piece = data if mv is None else mv[off:off + step]
                b = self.busy_until
                depart = (b if b > start else start) + len(piece) / rate
                self.busy_until = depart
                self.q.append((depart + self.owd, piece))
            self.queued += n
            self.last_depart = depart
        if self.timer is None:
            self.release()
        if not self.reading_paused and (
            self.queued > self.limit or (self.capped and self.last_depart - now > BACKLOG_HI)
        ):
            self.reading_paused = True
            self.src.pause_reading()

    def take(self, t: float, rate: float, quantum: int) -> float:
        """Called by the shared scheduler: put up to quantum pending bytes on the shared link,
        starting at time t; return the time the link is free again."""
        pending, q, owd, crate = self.pending, self.q, self.owd, self.rate
        taken = 0
        depart = t
        while pending and taken < quantum:
            piece = pending[0]
            room = quantum - taken
            if len(piece) > room:
                mv = piece if isinstance(piece, memoryview) else memoryview(piece)
                pending[0] = mv[room:]
                piece = mv[:room]
            else:
                pending.popleft()
            k = len(piece)
            taken += k
            begin = t
            t += k / rate
            depart = t
            if crate:
                b = self.busy_until
                cf = (b if b > begin else begin) + k / crate
                self.busy_until = cf
                if cf > depart:
                    depart = cf
            if depart < self.floor:
                depart = self.floor
            q.append((depart + owd, piece))
        self.pending_bytes -= taken
        self.queued += taken
        self.last_depart = depart
        if not pending and self.eof_in:
            q.append((depart + owd, None))
        if self.timer is None:
            self.release()
        if self.reading_paused:
            self.maybe_resume()
        return t

    def feed_eof(self) -> None:
        if self.conn.closed or self.eof_in:
            return
        self.eof_in = True
        if self.pending:
            return  # take() queues the EOF after the last pending byte
        now = self.loop.time()
        t = (now if now >= self.floor else self.floor) + self.owd
        if self.q and self.q[-1][0] > t:
            t = self.q[-1][0]
        self.q.append((t, None))
        if self.timer is None:
            self.release()

    def release(self) -> None:
        """The writer: deliver every chunk whose time has come, then sleep until the next one."""
        self.timer = None
        dst = self.dst
        if dst is None or self.conn.closed:
            return
        q = self.q
        now = self.loop.time()
        horizon = now + EARLY
        stats, index = self.stats, self.index
        while q and not self.dst_paused:
            t, data = q[0]
            if t > horizon:
                self.timer = self.loop.call_at(t, self.release)
                break
            q.popleft()
            if data is None:
                self.eof_out = True
                if dst.can_write_eof():
                    dst.write_eof()
                self.conn.maybe_finish()
                return
            n = len(data)
            self.queued -= n
            stats[index] += n
            dst.write(data)  # may call pause_writing() -> dst_paused
        if self.reading_paused:
            self.maybe_resume()

    def maybe_resume(self) -> None:
        self.resume_timer = None
        if not self.reading_paused or self.conn.closed or self.queued > self.resume_at:
            return  # (the writer calls again as the queue drains)
        if self.shared is not None:
            if self.pending_bytes > self.pending_max // 2:
                return  # (the scheduler calls again as it takes)
        elif self.capped:
            wait = self.last_depart - BACKLOG_LO - self.loop.time()
            if wait > 0:
                if self.resume_timer is None:
                    self.resume_timer = self.loop.call_later(wait, self.maybe_resume)
                return
        self.reading_paused = False
        self.src.resume_reading()

    def writable(self, ok: bool) -> None:
        self.dst_paused = not ok
        if ok and self.timer is None:
            self.release()

    def cancel(self) -> None:
        for h in (self.timer, self.resume_timer):
            if h is not None:
                h.cancel()
        self.timer = self.resume_timer = None
        self.q.clear()
        self.queued = 0
        self.pending.clear()
        self.pending_bytes = 0


class Conn:
    """One relayed connection: the client's transport, the upstream one, and two pipes."""

    def __init__(self, relay: Relay, client: asyncio.Transport):
        self.relay = relay
        self.closed = False
        self.client = client
        self.upstream: asyncio.Transport | None = None
        now = relay.loop.time()
        rtt = relay.rtt
        # Client bytes: sent no earlier than t0 + RTT (the client's connect completing).
        self.up = Pipe(self, 0, now + rtt, relay.conn_rate, None, relay.limit_up)
        # Server bytes: sent no earlier than t0 + 1.5 RTT (the server's accept completing).
        self.down = Pipe(self, 1, now + 1.5 * rtt, relay.conn_rate, relay.shared, relay.limit_down)
        self.up.src = client
        self.down.dst = client
        relay.conns.add(self)
        relay.accepted += 1
        if relay.owd > 0:
            relay.loop.call_later(relay.owd, self.start_connect)
        else:
            self.start_connect()

    def start_connect(self) -> None:
        if self.closed:
            return
        task = self.relay.loop.create_task(self.connect())
        self.relay.tasks.add(task)
        task.add_done_callback(self.relay.tasks.discard)

    async def connect(self) -> None:
        relay = self.relay
        try:
            await relay.loop.create_connection(
                lambda: Side(relay, self), relay.target_host, relay.target_port)
        except OSError as e:
            relay.connect_errors += 1
            if relay.connect_errors <= 5:
                print(f"relay: connect to {relay.target_host}:{relay.target_port} failed: {e}",
                      file=sys.stderr, flush=True)
            # The refusal travels back to the client: reset it D later.
            if relay.owd > 0:
                relay.loop.call_later(relay.owd, self.abort)
            else:
                self.abort()

    def attach_upstream(self, transport: asyncio.Transport) -> None:
        if self.closed:
            _reset(transport)
            return
        self.upstream = transport
        self.up.dst = transport
        self.down.src = transport
        if self.up.timer is None:
            self.up.release()

    def maybe_finish(self) -> None:
        if self.up.eof_out and self.down.eof_out and not self.closed:
            self.closed = True
            self.up.cancel()
            self.down.cancel()
            self.client.close()  # close() flushes what is still buffered
            if self.upstream is not None:
                self.upstream.close()
            self.relay.conns.discard(self)

    def abort(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.up.cancel()
        self.down.cancel()
        _reset(self.client)
        if self.upstream is not None:
            _reset(self.upstream)
        self.relay.conns.discard(self)

    def lost(self, exc: Exception | None) -> None:
        # Only called when the relay did not close this connection itself: a reset, an error, or a
        # socket gone away. Either way the other side goes too.
        self.abort()


def _reset(transport: asyncio.Transport) -> None:
    """Close with RST (SO_LINGER 0), so a reset on one side reads as a reset on the other."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


class Side(asyncio.Protocol):
    """Protocol for either end: the client's connection (conn None at first) or the upstream one."""

    __slots__ = ("relay", "conn", "inp", "out")

    def __init__(self, relay: Relay, conn: Conn | None = None):
        self.relay = relay
        self.conn = conn  # given for upstream, created in connection_made for a client
        self.inp: Pipe | None = None  # the pipe this side's bytes go into
        self.out: Pipe | None = None  # the pipe that writes to this side

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.set_write_buffer_limits(high=WRITE_HIGH, low=WRITE_LOW)
        if self.conn is None:
            self.conn = Conn(self.relay, transport)
            self.inp, self.out = self.conn.up, self.conn.down
        else:
            self.inp, self.out = self.conn.down, self.conn.up
            self.conn.attach_upstream(transport)

    def data_received(self, data: bytes) -> None:
        self.inp.feed(data)

    def eof_received(self) -> bool:
        self.inp.feed_eof()
        return True  # keep the transport open for writing (half-close)

    def pause_writing(self) -> None:
        self.out.writable(False)

    def resume_writing(self) -> None:
        self.out.writable(True)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None and not self.conn.closed:
            self.conn.lost(exc)


class Relay:
    def __init__(self, args: argparse.Namespace, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.target_host, self.target_port = args.target
        self.rtt = args.rtt / 1000.0
        self.owd = self.rtt / 2
        self.conn_rate = args.conn_rate
        self.shared = Shared(loop, args.shared_rate) if args.shared_rate else None
        caps_up = [r for r in (args.conn_rate,) if r]
        caps_down = [r for r in (args.conn_rate, args.shared_rate) if r]
        self.limit_up = args.max_queue or self._default_limit(caps_up)
        self.limit_down = args.max_queue or self._default_limit(caps_down)
        self.conns: set[Conn] = set()
        self.tasks: set[asyncio.Task] = set()
        self.accepted = 0
        self.connect_errors = 0
        self.bytes = [0, 0]  # delivered: client -> server, server -> client

    def _default_limit(self, caps: list[int]) -> int:
        if caps:
            return int(max(4 * MIB, 2 * min(caps) * self.owd))
        return int(max(4 * MIB, UNCAPPED_RATE * self.owd))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        sys.exit(2)


def _arg(fn):
    def conv(text):
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return conv


def _rtt(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"not a number of milliseconds: {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise ValueError(f"must be a finite number >= 0, got {text!r}")
    return v


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _Parser(
        prog="relay.py",
        description="TCP relay on loopback that adds round-trip time and bandwidth caps. Bytes pass "
                    "through untouched (TLS stays end to end); connection setup pays its round "
                    "trips too.",
        epilog="RATE and SIZE take binary suffixes K, M, G (4M = 4 MiB/s). Prints 'relay listening "
               "on 127.0.0.1:PORT' when ready; SIGTERM/SIGINT prints a summary on stderr and exits.",
    )
    p.add_argument("--target", required=True, metavar="HOST:PORT",
                   type=_arg(lambda s: parse_hostport(s, None)),
                   help="server to forward each connection to, e.g. 127.0.0.1:8443")
    p.add_argument("--listen", default=("127.0.0.1", 0), metavar="[HOST:]PORT",
                   type=_arg(lambda s: parse_hostport(s, "127.0.0.1")),
                   help="address to listen on (default 127.0.0.1:0, 0 = pick a free port)")
    p.add_argument("--rtt", type=_arg(_rtt), default=0.0, metavar="MS",
                   help="round-trip time to add, in ms; each direction gets RTT/2 (default 0)")
    p.add_argument("--conn-rate", type=_arg(parse_size), metavar="RATE",
                   help="cap per connection and direction, bytes/s (default: none)")
    p.add_argument("--shared-rate", type=_arg(parse_size), metavar="RATE",
                   help="one cap shared by all connections, server-to-client (default: none)")
    p.add_argument("--max-queue", type=_arg(parse_size), metavar="SIZE",
                   help="bytes queued per connection and direction before reading stops "
                        "(default: max(4M, 2 x cap x RTT/2); 512 MiB/s x RTT/2 if uncapped)")
    return p.parse_args(argv)


async def amain(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    relay = Relay(args, loop)
    host, port = args.listen
    try:
        server = await loop.create_server(lambda: Side(relay), host, port,
                                          reuse_address=True, backlog=1024)
    except OSError as e:
        print(f"relay.py: error: cannot listen on {host}:{port}: {e.strerror or e}",
              file=sys.stderr, flush=True)
        return 2
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    bound = server.sockets[0].getsockname()
    print(f"relay listening on {bound[0]}:{bound[1]}", flush=True)
    await stop.wait()
    server.close()
    for conn in list(relay.conns):
        conn.abort()
    for task in list(relay.tasks):
        task.cancel()
    await asyncio.sleep(0)
    errors = f", {relay.connect_errors} upstream connects failed" if relay.connect_errors else ""
    print(f"relay: {relay.accepted} connections accepted{errors}, "
          f"{relay.bytes[0]} bytes ({human(relay.bytes[0])}) client->server, "
          f"{relay.bytes[1]} bytes ({human(relay.bytes[1])}) server->client",
          file=sys.stderr, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return asyncio.run(amain(args))
    except KeyboardInterrupt:  # a signal before the handlers were installed
        return 0


if __name__ == "__main__":
    sys.exit(main())
