#!/usr/bin/env python3
"""aria2 JSON-RPC compatibility test: the same cases against a real `aria2c --enable-rpc` and against `haul serve`.

The expected answers come from aria2 itself: every case runs against both targets and their answers are
reduced to what must agree (HTTP status, error codes, JSON types, key sets, "numbers are strings", gid format,
status values, ordering effects, counts, echoed ids) and compared. Values that naturally differ (gids,
speeds, versions, paths under different directories) are never compared.

    python aria2_compat.py --haul http://127.0.0.1:PORT --secret S --files http://127.0.0.1:FPORT
    python aria2_compat.py --only aria2            # aria2c alone (and a built-in file server)

The file server (`--files`) must serve /small.bin (300000 bytes), /slow.bin, /slow2.bin, /slow3.bin (64 MiB,
throttled to about 1 MiB/s) with Range support, /visitor.bin (200000 bytes) and /visitor-redirect.bin (a 302 to
/visitor.bin), both 403 unless Referer, User-Agent and Cookie are VISITOR's, and answer 404 for /missing.
Without --files a built-in one is started. Prints one line per case (`ok` / `FAIL` + what differed); exits 1 if any case failed.
See README.md next to this file; raw aria2 transcripts: notes/aria2-wire.md (kept by the team).
"""

import argparse
import base64
import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import urllib.request

import websocket  # websocket-client
import aria2p

try:  # aria2p logs through loguru; keep the output to one line per case
    from loguru import logger as _loguru
    _loguru.remove()
except Exception:  # pragma: no cover
    pass


# ----------------------------------------------------------------------------------------------------------------
# Accepted differences. Keep this list short; every entry says why it is harmless for AriaNg / aria2p.
# ----------------------------------------------------------------------------------------------------------------

# tellStatus keys left out of the comparison (dropped from both answers before comparing):
OPTIONAL_STATUS_KEYS = {
    # BitTorrent-only keys (haul has no BitTorrent); aria2 sends them only for torrents anyway.
    "bittorrent", "infoHash", "numSeeders", "seeder",
    # Metalink / hash-check relations; absent for plain HTTP downloads in aria2 too.
    "following", "followedBy", "belongsTo", "verifiedLength", "verifyIntegrityPending",
    # aria2 itself omits `bitfield` whenever the size is not known yet; AriaNg draws its piece map only
    # `if (task.bitfield)` and aria2p's Download.bitfield returns None when missing. Validated (hex) if present.
    "bitfield",
}
# Methods haul may leave out of system.listMethods (and answer "No such method", code 1, like aria2 does for
# unknown methods): BitTorrent / Metalink / peer / mirror-editing / remote-shutdown features haul does not have.
OPTIONAL_METHODS = {"aria2.addTorrent", "aria2.addMetalink", "aria2.getPeers",
                    "aria2.shutdown", "aria2.forceShutdown"}
# Notifications haul may leave out of system.listNotifications (BitTorrent only).
OPTIONAL_NOTIFICATIONS = {"aria2.onBtDownloadComplete"}
# Further accepted differences, applied in the cases named:
#  * addTorrent / addMetalink: haul may answer error code 1 instead of adding (no BitTorrent/Metalink).
#  * option objects (getOption / getGlobalOption): aria2 has ~90 / 128 keys; only the keys in
#    COMPARED_OPTION_KEYS are compared (the ones AriaNg's and aria2p's common paths and these cases touch).
#  * request body over aria2's 2 MiB limit: aria2 closes the connection without an answer; an HTTP 4xx
#    (e.g. 413) from haul counts the same ("rejected"): either way the client gets no result.
#  * changeUri on a paused download: aria2's getUris then repeats the URI it used and removed (a
#    quirk of its used/remaining lists); haul lists the download's URIs once each. Compared: the counts
#    changeUri returns and that the URIs added are listed.
#  * CORS: `Access-Control-Allow-Origin` may echo the request's Origin instead of `*` (both allow it).
#  * adding the same URL to the same place again (same dir, same out): aria2 starts a second download and
#    renames its file (x.1.bin); haul answers with the existing download's gid and starts nothing twice (its
#    rule everywhere: one download per URL and destination, so a re-added list resumes instead of
#    duplicating). Each target is checked against its own rule in those two cases.
#  * removing a waiting/paused download: aria2 silently forgets the gid (no onDownloadStop, not in tellStopped);
#    haul may keep it as "removed" and notify. Not asserted either way.
COMPARED_OPTION_KEYS = ["dir", "max-concurrent-downloads", "max-overall-download-limit", "max-download-limit",
                        "max-connection-per-server", "split"]
# Error messages aria2 has as fixed texts; other messages are compared only as "some string".
FIXED_MESSAGES = {"Unauthorized", "Parse error.", "Invalid Request.", "Invalid params."}

RUN_ID = os.urandom(3).hex()
# What a site that serves a file only to its page's visitor checks (the file server's /visitor*.bin).
VISITOR = {"Referer": "https://shop.example/item?id=7", "User-Agent": "Mozilla/5.0 (compat) Firefox/140.0",
           "Cookie": "sid=s1; theme=dark"}
GID_RE = re.compile(r"[0-9a-f]{16}")
NUM_RE = re.compile(r"-?[0-9]+")
HEX_RE = re.compile(r"[0-9a-f]*")


class CaseError(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise CaseError(msg)


def wait_for(fn, desc, timeout=30.0, interval=0.1):
    """Poll fn() until it returns something truthy; CaseError on timeout (no sleep-as-assertion)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = fn()
        except CaseError as e:
            last = e
            if time.monotonic() >= deadline:
                raise
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise CaseError(f"timed out after {timeout:.0f}s waiting for {desc} (last: {short(last)})")
        time.sleep(interval)


def short(v, n=200):
    s = v if isinstance(v, str) else json.dumps(v, default=str) if not isinstance(v, Exception) else str(v)
    return s if len(s) <= n else s[:n] + "..."


# ----------------------------------------------------------------------------------------------------------------
# Reducing answers to what must agree
# ----------------------------------------------------------------------------------------------------------------

EXACT_KEYS = {"status", "errorCode", "selected", "index"}     # small enumerations: compared as is
GID_KEYS = {"gid", "following", "followedBy", "belongsTo"}
TEXT_KEYS = {"dir", "path", "uri", "currentUri", "errorMessage", "version", "sessionId"}
DEDUP_LIST_KEYS = {"servers"}   # aria2 lists one entry per connection; compare the distinct shapes
# aria2's `uris` lists hold one entry per connection plus spare copies ("used" and "waiting" for the same URI);
# compared only as "a non-empty list of {status: used|waiting, uri}" (the "uri given" checks look at the URIs).
URI_STATUSES = {"used", "waiting"}
STRING_LIST_KEYS = {"enabledFeatures"}


def vshape(v, key=None):
    """JSON type/format skeleton of a result. Strings are classified, never compared (except EXACT_KEYS)."""
    if isinstance(v, dict):
        out = {}
        for k in sorted(v):
            if k in OPTIONAL_STATUS_KEYS:
                if k == "bitfield" and not (isinstance(v[k], str) and HEX_RE.fullmatch(v[k])):
                    raise CaseError(f"bitfield is not a hex string: {short(v[k])}")
                continue
            out[k] = vshape(v[k], k)
        return out
    if isinstance(v, list):
        if key == "uris" and v and all(isinstance(x, dict) and set(x) == {"status", "uri"}
                                       and x["status"] in URI_STATUSES and isinstance(x["uri"], str) for x in v):
            return "<non-empty list of {status: used|waiting, uri}>"
        if key in STRING_LIST_KEYS:
            return "<list of str>" if all(isinstance(x, str) for x in v) else [vshape(x) for x in v]
        items = [vshape(x, key) for x in v]
        if key in DEDUP_LIST_KEYS:
            distinct = []
            for i in items:
                if i not in distinct:
                    distinct.append(i)
            return distinct
        return items
    if isinstance(v, bool):
        return "<JSON boolean>"
    if isinstance(v, (int, float)):
        return "<JSON number>"
    if v is None:
        return None
    if isinstance(v, str):
        if key in EXACT_KEYS or v == "OK":
            return v
        if key in GID_KEYS:
            return "<gid>" if GID_RE.fullmatch(v) else f"<bad gid {v!r}>"
        if key in TEXT_KEYS:
            return "<str>"
        # A result with no key that looks like a GID is one (addUri, addMetalink, remove, ...):
        # aria2 makes one of only decimal digits now and then, which is no number.
        if key is None and GID_RE.fullmatch(v):
            return "<gid>"
        if NUM_RE.fullmatch(v):
            return "<num str>"
        if v in ("true", "false"):
            return "<bool str>"
        if GID_RE.fullmatch(v):
            return "<gid>"
        return "<str>"
    return f"<{type(v).__name__}>"


def msgshape(m):
    if not isinstance(m, str):
        return f"<{type(m).__name__}>"
    if m in FIXED_MESSAGES or m.startswith("No such method"):
        return m
    return "<text>"


def rshape(r, result=True):
    """Reduce a JSON-RPC HTTP/WS answer: HTTP status, echoed id, error code (+fixed message) or result shape."""
    o = {}
    if r.status is not None:
        o["http"] = r.status
    j = r.json
    if isinstance(j, dict):
        o.update(eshape(j, result))
    else:
        o["body"] = "<not JSON>" if j is NOJSON else vshape(j)
    return o


def eshape(j, result=True):
    """Reduce one JSON-RPC response object."""
    o = {"jsonrpc": j.get("jsonrpc"), "id": j.get("id", "<missing>")}
    if "error" in j:
        e = j["error"]
        o["error"] = {"code": e.get("code"), "message": msgshape(e.get("message"))} if isinstance(e, dict) else e
    elif "result" in j:
        o["result"] = vshape(j["result"]) if result else "<result>"
    else:
        o["body"] = "<neither result nor error>"
    return o


def diff(a, b, path="", out=None):
    out = [] if out is None else out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in a:
                out.append(f"{p}: aria2=<absent> haul={short(b[k], 120)}")
            elif k not in b:
                out.append(f"{p}: aria2={short(a[k], 120)} haul=<absent>")
            else:
                diff(a[k], b[k], p, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b or type(a) is not type(b):
        out.append(f"{path or '<top>'}: aria2={short(a, 160)} haul={short(b, 160)}")
    return out


# ----------------------------------------------------------------------------------------------------------------
# Talking to a target
# ----------------------------------------------------------------------------------------------------------------

NOJSON = object()


class Resp:
    def __init__(self, status, headers, body):
        self.status = status          # None: connection closed without an answer
        self.headers = headers        # lower-cased names
        self.body = body
        try:
            self.json = json.loads(body) if body is not None else NOJSON
        except ValueError:
            self.json = NOJSON

    def __repr__(self):
        return f"HTTP {self.status} {short(self.body.decode('utf-8', 'replace') if self.body else '', 300)}"


class Target:
    def __init__(self, name, base, secret, files):
        self.name = name
        self.is_haul = name == "haul"
        u = urllib.parse.urlsplit(base.rstrip("/"))
        self.host, self.port = u.hostname, u.port or 80
        self.secret = secret
        self.ws_url = f"ws://{self.host}:{self.port}/jsonrpc"
        self.files_base = files.rstrip("/")
        self.dir = None
        self.state = {}
        self.notes = []
        self._n = 0

    # -- raw HTTP
    def http(self, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
            return Resp(None, {}, None)
        finally:
            c.close()

    def post_json(self, obj, headers=None):
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return self.http("POST", "/jsonrpc", body, {"Content-Type": "application/json", **(headers or {})})

    def params(self, params, token=True):
        if token is True:
            return [f"token:{self.secret}"] + list(params)
        if token in (False, None):
            return list(params)
        return [token] + list(params)

    def rpc(self, method, *params, id="c", token=True):
        return self.post_json({"jsonrpc": "2.0", "id": id, "method": method, "params": self.params(params, token)})

    def ok(self, method, *params, token=True):
        r = self.rpc(method, *params, token=token)
        expect(r.status == 200 and isinstance(r.json, dict) and "result" in r.json,
               f"{method}{short(list(params), 120)} failed: {r!r}")
        return r.json["result"]

    def get(self, query, headers=None):
        return self.http("GET", "/jsonrpc?" + query, None, headers)

    # -- helpers
    def url(self, route):
        return f"{self.files_base}/{route}" if route == "missing" else f"{self.files_base}/{route}.bin"

    def unique(self, route):
        self._n += 1
        return f"compat-{RUN_ID}-{self._n:03d}-{route}.bin"   # RUN_ID: reruns against the same haul don't collide

    def add(self, route, **opts):
        opts = {k.replace("_", "-"): v for k, v in opts.items()}
        if route != "missing":
            opts.setdefault("out", self.unique(route))
        gid = self.ok("aria2.addUri", [self.url(route)], opts)
        expect(isinstance(gid, str) and GID_RE.fullmatch(gid), f"addUri returned {gid!r}, not a 16-hex gid")
        return gid

    def status(self, gid, keys=None):
        return self.ok("aria2.tellStatus", gid, keys) if keys is not None else self.ok("aria2.tellStatus", gid)

    def wait_status(self, gid, want, timeout=30):
        want = {want} if isinstance(want, str) else set(want)
        return wait_for(lambda: self.status(gid, ["gid", "status", "errorCode", "connections"])
                        if self.status(gid, ["status"])["status"] in want else None,
                        f"{gid} to be {'/'.join(sorted(want))}", timeout)

    def labels(self, items, names):
        """Map a list of tellX objects to the caller's labels for their gids ('?' for unknown ones)."""
        inv = {g: n for n, g in names.items()}
        return [inv.get(x.get("gid"), "?") for x in items]

    def note(self, text):
        self.notes.append(text)

    def cleanup(self):
        """Force-remove everything queued or running, then purge the results: an empty, known state."""
        for lst in (self.ok("aria2.tellActive", ["gid"]), self.ok("aria2.tellWaiting", 0, 1000, ["gid"])):
            for d in lst:
                self.rpc("aria2.forceRemove", d["gid"])
        wait_for(lambda: not self.ok("aria2.tellActive", ["gid"]) and not self.ok("aria2.tellWaiting", 0, 1000, ["gid"]),
                 "no active/waiting downloads after forceRemove", 30)

        def purged():
            self.ok("aria2.purgeDownloadResult")
            return not self.ok("aria2.tellStopped", 0, 1000, ["gid"])
        wait_for(purged, "an empty stopped list after purgeDownloadResult", 10, 0.2)

    def set_jobs(self, n):
        expect(self.ok("aria2.changeGlobalOption", {"max-concurrent-downloads": str(n)}) == "OK",
               "changeGlobalOption max-concurrent-downloads failed")


# ----------------------------------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------------------------------

CASES = []


def case(name, only=None):
    def register(fn):
        CASES.append((name, fn, only))
        return fn
    return register


# ---- discovery / system.* -------------------------------------------------------------------------------------

@case("system.listMethods (no token needed; with token too)")
def c_list_methods(t):
    r1 = t.rpc("system.listMethods", token=False)
    r2 = t.rpc("system.listMethods")
    res = r1.json.get("result") if isinstance(r1.json, dict) else None
    expect(isinstance(res, list), f"no method list: {r1!r}")
    return {"no-token": rshape(r1, result=False), "token": rshape(r2, result=False),
            "methods": sorted(set(res) - OPTIONAL_METHODS)}


@case("system.listNotifications")
def c_list_notifications(t):
    r = t.rpc("system.listNotifications", token=False)
    res = r.json.get("result") if isinstance(r.json, dict) else None
    expect(isinstance(res, list), f"no notification list: {r!r}")
    return {"r": rshape(r, result=False), "names": sorted(set(res) - OPTIONAL_NOTIFICATIONS)}


@case("getVersion / getSessionInfo / saveSession")
def c_version(t):
    return {"getVersion": rshape(t.rpc("aria2.getVersion")),
            "getSessionInfo": rshape(t.rpc("aria2.getSessionInfo")),
            "saveSession": t.ok("aria2.saveSession")}


@case("system.multicall (successes wrapped in 1-element arrays, failures as {code,message})")
def c_multicall(t):
    tok = f"token:{t.secret}"
    calls = [{"methodName": "aria2.getGlobalStat", "params": [tok]},
             {"methodName": "aria2.getGlobalStat", "params": ["token:wrong"]},
             {"methodName": "aria2.noSuchMethod", "params": [tok]},
             {"methodName": "system.listMethods"},
             {"methodName": "system.multicall", "params": [[]]},
             {"nomethod": 1},
             {"methodName": "aria2.tellStatus", "params": [tok, "xyz"]}]
    r = t.post_json({"jsonrpc": "2.0", "id": "m", "method": "system.multicall", "params": [calls]})
    expect(isinstance(r.json, dict) and isinstance(r.json.get("result"), list), f"multicall failed: {r!r}")
    items = []
    for x in r.json["result"]:
        if isinstance(x, list) and len(x) == 1:
            items.append({"ok": "<list of str>" if isinstance(x[0], list) else vshape(x[0])})
        elif isinstance(x, dict) and "code" in x:
            items.append({"code": x["code"], "message": msgshape(x.get("message"))})
        else:
            items.append({"bad item": short(x)})
    empty = t.post_json({"jsonrpc": "2.0", "id": "m", "method": "system.multicall", "params": [[]]})
    return {"http": r.status, "items": items, "empty": rshape(empty),
            "missing-param": rshape(t.post_json({"jsonrpc": "2.0", "id": "m", "method": "system.multicall", "params": []}))}


@case("system.multicall of consecutive addUri calls: each answered alone (bad ones too), positions and pause applied in order")
def c_multicall_adds(t):
    t.cleanup()
    t.set_jobs(1)
    active = t.add("slow")
    t.wait_status(active, "active")
    tok = f"token:{t.secret}"
    add = lambda route, opts, *position: {"methodName": "aria2.addUri",
                                          "params": [tok, [t.url(route)], {"out": t.unique(route), **opts}, *position]}
    calls = [add("slow2", {}), add("slow3", {}, 0), {"methodName": "aria2.addUri", "params": ["token:wrong", [t.url("slow")]]},
             {"methodName": "aria2.addUri", "params": [tok, []]}, add("slow", {"pause": "true"}, 1), add("slow2", {})]
    r = t.post_json({"jsonrpc": "2.0", "id": "m", "method": "system.multicall", "params": [calls]})
    expect(isinstance(r.json, dict) and isinstance(r.json.get("result"), list), f"multicall failed: {r!r}")
    items, names = [], {}
    for index, x in enumerate(r.json["result"]):
        if isinstance(x, list) and len(x) == 1 and isinstance(x[0], str) and GID_RE.fullmatch(x[0]):
            items.append("gid")
            names["ABCDEF"[index]] = x[0]
        elif isinstance(x, dict) and "code" in x:
            items.append({"code": x["code"], "message": msgshape(x.get("message"))})
        else:
            items.append({"bad item": short(x)})
    waiting = t.ok("aria2.tellWaiting", 0, 10, ["gid", "status"])
    out = {"items": items, "waiting": [f"{label}:{x['status']}" for label, x in zip(t.labels(waiting, names), waiting)]}
    t.cleanup()
    t.set_jobs(5)
    return out


# ---- envelope, auth, errors -----------------------------------------------------------------------------------

@case("id echoed exactly (string, number, null, 0, empty string, big number, unicode)")
def c_id_echo(t):
    out = []
    for i in ["abc", 7, None, 0, "", 12345678901234, "é/x"]:
        r = t.rpc("aria2.getGlobalStat", id=i)
        got = r.json.get("id", "<missing>") if isinstance(r.json, dict) else "<not JSON>"
        out.append({"http": r.status, "id": got, "same type": type(got) is type(i)})
    return out


@case("bad secret -> HTTP 400, code 1 'Unauthorized' (wrong token, no token, token without 'token:')")
def c_bad_token(t):
    return [rshape(t.rpc("aria2.getGlobalStat", token="token:wrong")),
            rshape(t.rpc("aria2.getGlobalStat", token=False)),
            rshape(t.rpc("aria2.getGlobalStat", token=t.secret)),
            rshape(t.rpc("aria2.tellActive", token="token:wrong"))]


@case("secret is checked before the method name (unknown method + bad token -> Unauthorized)")
def c_bad_token_unknown_method(t):
    return rshape(t.rpc("aria2.noSuchMethod", token="token:wrong"))


@case("unknown method -> HTTP 400, code 1 'No such method: ...'")
def c_unknown_method(t):
    return rshape(t.rpc("aria2.noSuchMethod"))


@case("unparsable JSON -> HTTP 500, -32700, id null")
def c_parse_error(t):
    return rshape(t.post_json(b'{"jsonrpc":"2.0","id":1,"method":'))


@case("invalid requests -> HTTP 400, -32600 ({}, no method, method not a string, no id)")
def c_invalid_request(t):
    return [rshape(t.post_json(b"{}")),
            rshape(t.post_json({"jsonrpc": "2.0", "id": 7, "params": []})),
            rshape(t.post_json({"jsonrpc": "2.0", "id": 8, "method": 5})),
            rshape(t.post_json({"jsonrpc": "2.0", "method": "system.listMethods"}))]


@case("params not an array -> HTTP 500, -32602")
def c_invalid_params(t):
    return rshape(t.post_json({"jsonrpc": "2.0", "id": 9, "method": "system.listMethods", "params": {}}))


@case("batch: empty array -> 200 []")
def c_batch_empty(t):
    r = t.post_json(b"[]")
    return {"http": r.status, "body": r.json if r.json is not NOJSON else "<not JSON>"}


@case("batch: array of requests -> 200, answers in order, errors per element")
def c_batch(t):
    tok = f"token:{t.secret}"
    r = t.post_json([{"jsonrpc": "2.0", "id": "a", "method": "aria2.getGlobalStat", "params": [tok]},
                     {"jsonrpc": "2.0", "id": 2, "method": "aria2.getGlobalStat", "params": ["token:wrong"]},
                     {"jsonrpc": "2.0", "id": None, "method": "aria2.noSuchMethod", "params": [tok]},
                     {"jsonrpc": "2.0", "id": "d", "method": "aria2.tellStatus", "params": [tok, "xyz"]},
                     {"jsonrpc": "2.0", "id": "e", "method": "system.listNotifications"}])
    body = [eshape(x, result=False) if isinstance(x, dict) else short(x) for x in r.json] \
        if isinstance(r.json, list) else "<not a JSON array>"
    return {"http": r.status, "answers": body}


@case("bad GIDs -> HTTP 400, code 1 (non-hex, too long, empty, unknown; several methods)")
def c_bad_gid(t):
    out = {}
    for g in ["xyz", "zzzzzzzzzzzzzzzz", "0123456789abcdef01", "", "0000000000000001"]:
        out[f"tellStatus({g!r})"] = rshape(t.rpc("aria2.tellStatus", g))
    for m in ["aria2.remove", "aria2.forceRemove", "aria2.pause", "aria2.unpause", "aria2.getFiles",
              "aria2.getUris", "aria2.getOption", "aria2.removeDownloadResult"]:
        out[m] = rshape(t.rpc(m, "0000000000000001"))
    out["changePosition"] = rshape(t.rpc("aria2.changePosition", "0000000000000001", 0, "POS_SET"))
    return out


@case("wrong parameter types -> HTTP 400, code 1")
def c_wrong_types(t):
    u = t.url("small")
    calls = [("aria2.tellStatus", [123]), ("aria2.tellStatus", ["0000000000000001", "gid"]),
             ("aria2.tellActive", ["gid"]), ("aria2.tellStopped", ["0", 1]), ("aria2.tellWaiting", [0, -1]),
             ("aria2.changeGlobalOption", ["x"]), ("aria2.addUri", [u]), ("aria2.addUri", []),
             ("aria2.addUri", [[u], {}, "0"]), ("aria2.addUri", [[u], {"out": "never.bin"}, -1])]
    return {f"{m}{short(p, 60)}": rshape(t.rpc(m, *p)) for m, p in calls}


@case("HTTP GET with base64 params (ids come back as strings)")
def c_get(t):
    def q(method, id_, params):
        return t.get(urllib.parse.urlencode({"method": method, "id": id_,
                                             "params": base64.b64encode(json.dumps(params).encode()).decode()}))
    tok = f"token:{t.secret}"
    return {"getGlobalStat": rshape(q("aria2.getGlobalStat", "x", [tok])),
            "tellActive keys": rshape(q("aria2.tellActive", "y", [tok, ["gid", "status"]])),
            "numeric id": rshape(q("aria2.getVersion", "5", [tok])),
            "bad token": rshape(q("aria2.getGlobalStat", "z", ["token:wrong"])),
            "no params (system.listMethods)": rshape(t.get("method=system.listMethods&id=n"), result=False)}


@case("HTTP GET with jsoncallback (JSONP)")
def c_jsonp(t):
    out = {}
    for name, tok in [("ok", f"token:{t.secret}"), ("bad token", "token:wrong")]:
        p = base64.b64encode(json.dumps([tok]).encode()).decode()
        r = t.get(urllib.parse.urlencode({"method": "aria2.getGlobalStat", "id": "j", "params": p,
                                          "jsoncallback": "cb"}))
        body = (r.body or b"").decode("utf-8", "replace")
        m = re.fullmatch(r"cb\((.*)\)", body, re.S)
        inner = Resp(r.status, r.headers, m.group(1).encode()) if m else None
        out[name] = {"http": r.status, "wrapped in cb(...)": bool(m),
                     "javascript content type": "javascript" in r.headers.get("content-type", ""),
                     "inner": rshape(inner) if inner else short(body)}
    return out


@case("HTTP GET errors -> HTTP 400, -32600 (no method, params not base64, plain GET)")
def c_get_errors(t):
    return [rshape(t.get("id=1&params=" + urllib.parse.quote(base64.b64encode(b'["x"]').decode()))),
            rshape(t.get("method=aria2.getGlobalStat&id=1&params=!!!notbase64")),
            rshape(t.http("GET", "/jsonrpc"))]


@case("CORS preflight: OPTIONS with Origin + Access-Control-Request-Method/-Headers")
def c_cors_preflight(t):
    origin = "http://ariang.example"
    r = t.http("OPTIONS", "/jsonrpc", None, {"Origin": origin, "Access-Control-Request-Method": "POST",
                                             "Access-Control-Request-Headers": "content-type, x-requested-with"})
    h = r.headers
    acao = h.get("access-control-allow-origin")
    methods = {m.strip().upper() for m in h.get("access-control-allow-methods", "").split(",") if m.strip()}
    allowed_headers = {x.strip().lower() for x in h.get("access-control-allow-headers", "").split(",") if x.strip()}
    if acao == origin:
        t.note("ACAO echoes the Origin instead of '*' (accepted)")
    return {"http": r.status,
            "allow-origin ok": acao in ("*", origin),
            "allow-methods has POST, GET, OPTIONS": {"POST", "GET", "OPTIONS"} <= methods,
            "allow-headers echo requested": {"content-type", "x-requested-with"} <= allowed_headers,
            "max-age present": "access-control-max-age" in h}


@case("CORS: Access-Control-Allow-Origin on POST and GET answers (also on errors)")
def c_cors_simple(t):
    origin = "http://ariang.example"
    out = {}
    for name, r in [("POST ok", t.post_json({"jsonrpc": "2.0", "id": 1, "method": "system.listMethods"},
                                           {"Origin": origin})),
                    ("POST error", t.post_json({"jsonrpc": "2.0", "id": 1, "method": "aria2.getGlobalStat",
                                                "params": ["token:wrong"]}, {"Origin": origin})),
                    ("GET", t.get("method=system.listMethods&id=1", {"Origin": origin}))]:
        out[name] = {"http": r.status, "allow-origin ok": r.headers.get("access-control-allow-origin") in ("*", origin)}
    return out


def send_big(t, size):
    """POST a JSON body of exactly `size` bytes over a raw socket; 'closed' if the server hangs up silently."""
    tok = f"token:{t.secret}"
    head = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "aria2.tellActive", "params": [tok, ["gid", ""]]})
    pad = size - len(head)
    body = (head[:-4] + "x" * pad + head[-4:]).encode()   # pad the unknown key "" inside the keys list
    assert len(body) == size
    s = socket.create_connection((t.host, t.port), timeout=20)
    try:
        s.sendall(f"POST /jsonrpc HTTP/1.1\r\nHost: {t.host}:{t.port}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {size}\r\nConnection: close\r\n\r\n".encode())
        try:
            for i in range(0, size, 65536):
                s.sendall(body[i:i + 65536])
        except OSError:
            pass
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    finally:
        s.close()
    if not data:
        return "closed without an answer"
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(m.group(1)) if m else f"garbage: {data[:60]!r}"


@case("request body size: 1 MiB accepted; 3 MiB rejected (aria2: over 2 MiB -> connection closed)")
def c_huge_body(t):
    small = send_big(t, 1 << 20)
    big = send_big(t, 3 << 20)
    if isinstance(big, int) and 400 <= big < 500:
        t.note(f"3 MiB body answered HTTP {big} (accepted as 'rejected')")
    rejected = big == "closed without an answer" or (isinstance(big, int) and 400 <= big < 500)
    return {"1 MiB": small, "3 MiB rejected": rejected}


# ---- WebSocket ------------------------------------------------------------------------------------------------

def ws_call(ws, obj):
    ws.send(obj if isinstance(obj, str) else json.dumps(obj))
    while True:  # skip notifications (they have no id)
        op, data = ws.recv_data()
        expect(op == websocket.ABNF.OPCODE_TEXT, f"answer came in a non-text frame (opcode {op})")
        msg = json.loads(data)
        if isinstance(msg, dict) and "method" in msg and "id" not in msg:
            continue
        return msg


@case("WebSocket: calls, bad token, parse error, batch, no id (answers in text frames)")
def c_ws_calls(t):
    ws = websocket.create_connection(t.ws_url, timeout=15)
    try:
        tok = f"token:{t.secret}"
        out = {}
        out["getVersion"] = eshape(ws_call(ws, {"jsonrpc": "2.0", "id": "w1", "method": "aria2.getVersion",
                                                "params": [tok]}))
        out["bad token"] = eshape(ws_call(ws, {"jsonrpc": "2.0", "id": "w2", "method": "aria2.getGlobalStat",
                                               "params": ["token:wrong"]}))
        out["unknown method"] = eshape(ws_call(ws, {"jsonrpc": "2.0", "id": "w3", "method": "aria2.noSuchMethod",
                                                    "params": [tok]}))
        out["parse error"] = eshape(ws_call(ws, '{"jsonrpc":"2.0","id":'))
        out["no id"] = eshape(ws_call(ws, {"jsonrpc": "2.0", "method": "system.listMethods"}), result=False)
        b = ws_call(ws, [{"jsonrpc": "2.0", "id": 1, "method": "system.listNotifications"},
                         {"jsonrpc": "2.0", "id": 2, "method": "aria2.getGlobalStat", "params": [tok]}])
        out["batch"] = [eshape(x, result=False) for x in b] if isinstance(b, list) else short(b)
        out["empty batch"] = ws_call(ws, "[]")
        out["still connected"] = ws.connected
        return out
    finally:
        ws.close()


class Notifications:
    """Collects notifications from a WebSocket in a background thread."""

    def __init__(self, t):
        self.ws = websocket.create_connection(t.ws_url, timeout=15)
        self.ws.settimeout(0.5)
        self.msgs = []
        self.answers = {}
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        # A round trip first, so the socket is open before the case adds anything. (haul sends
        # notifications to a browser's socket only once it has shown the token; this one,
        # websocket-client's from loopback, hears them at once, as aria2p's listener does.)
        self.sync(t)

    def run(self):
        while not self.stop:
            try:
                data = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                continue
            except Exception:
                return
            try:
                m = json.loads(data)
            except ValueError:
                self.msgs.append({"unparsable": data})
                continue
            if isinstance(m, dict) and "id" in m:
                self.answers[m["id"]] = m
            else:
                self.msgs.append(m)

    def of(self, gid):
        return [m.get("method") for m in self.msgs
                if isinstance(m, dict) and m.get("params") and isinstance(m["params"][0], dict)
                and m["params"][0].get("gid") == gid]

    def wait(self, gid, method, count=1, timeout=30):
        wait_for(lambda: self.of(gid).count(method) >= count, f"{method} #{count} for {gid} (got {self.of(gid)})",
                 timeout)

    def sync(self, t, timeout=15):
        """A round trip on the same socket, so notifications sent before it have arrived."""
        key = f"sync-{time.monotonic()}"
        self.ws.send(json.dumps({"jsonrpc": "2.0", "id": key, "method": "aria2.getVersion",
                                 "params": [f"token:{t.secret}"]}))
        wait_for(lambda: key in self.answers, "the sync answer on the WebSocket", timeout)

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.ws.close()


@case("WebSocket notifications: start/complete, start/error, pause, start again after unpause, stop on remove")
def c_notifications(t):
    t.cleanup()
    t.set_jobs(5)
    n = Notifications(t)
    try:
        small = t.add("small")
        n.wait(small, "aria2.onDownloadComplete")
        missing = t.add("missing")
        n.wait(missing, "aria2.onDownloadError")
        slow = t.add("slow")
        n.wait(slow, "aria2.onDownloadStart")
        t.wait_status(slow, "active")
        t.ok("aria2.pause", slow)
        n.wait(slow, "aria2.onDownloadPause")
        t.ok("aria2.unpause", slow)
        n.wait(slow, "aria2.onDownloadStart", 2)
        t.wait_status(slow, "active")
        t.ok("aria2.forcePause", slow)
        n.wait(slow, "aria2.onDownloadPause", 2)
        t.ok("aria2.unpause", slow)
        n.wait(slow, "aria2.onDownloadStart", 3)
        t.wait_status(slow, "active")
        t.ok("aria2.remove", slow)
        n.wait(slow, "aria2.onDownloadStop")
        n.sync(t)
        sample = next((m for m in n.msgs if isinstance(m, dict)), {})
        return {"small": n.of(small), "missing": n.of(missing), "slow": n.of(slow),
                "message shape": {"keys": sorted(sample), "jsonrpc": sample.get("jsonrpc"),
                                  "params": vshape(sample.get("params"))}}
    finally:
        n.close()


# ---- adding downloads -----------------------------------------------------------------------------------------

@case("addUri with dir, out, split, max-connection-per-server, max-download-limit, header -> getOption/tellStatus")
def c_add_options(t):
    t.cleanup()
    sub = t.dir.rstrip("/") + "/compat-sub"
    out = t.unique("options")
    gid = t.add("slow", dir=sub, out=out, split="2", max_connection_per_server="2", max_download_limit="50K",
                header=["X-Compat-A: 1", "X-Compat-B: 2"])
    t.wait_status(gid, "active")
    st = wait_for(lambda: (lambda s: s if s["files"] and s["files"][0]["path"] else None)(t.status(gid)),
                  "the file path to be known", 20)
    o = t.ok("aria2.getOption", gid)
    expect(isinstance(o, dict) and all(isinstance(v, str) for v in o.values()),
           f"getOption values must all be strings: {short({k: v for k, v in o.items() if not isinstance(v, str)})}")
    hdr = o.get("header")
    hdr_lines = sorted(x for x in hdr.split("\n") if x) if isinstance(hdr, str) else hdr
    t.ok("aria2.forceRemove", gid)
    return {"getOption": {"dir": o.get("dir") == sub, "out": o.get("out") == out, "split": o.get("split"),
                          "max-connection-per-server": o.get("max-connection-per-server"),
                          "max-download-limit": o.get("max-download-limit"), "header lines": hdr_lines},
            "tellStatus dir": st["dir"] == sub, "file path": st["files"][0]["path"] == f"{sub}/{out}"}


@case("addUri as browser extensions hand over: referer, user-agent, header as one text of lines -> complete "
      "through a redirect to a site that checks them; getOption names them")
def c_browser_handover(t):
    gid = t.add("visitor-redirect", referer=VISITOR["Referer"], user_agent=VISITOR["User-Agent"],
                header=f"Cookie: {VISITOR['Cookie']}\nX-Compat: 1\n")
    st = t.wait_status(gid, {"complete", "error"})
    o = t.ok("aria2.getOption", gid)
    return {"status": st["status"], "errorCode": st.get("errorCode"),
            "getOption referer": o.get("referer") == VISITOR["Referer"],
            "getOption user-agent": o.get("user-agent") == VISITOR["User-Agent"]}


@case("addUri with checksum sha-256=HEX: match -> complete, mismatch -> error errorCode 32")
def c_checksum(t):
    good = t.add("small", checksum=f"sha-256={SMALL_SHA256}")
    bad = t.add("small", checksum="sha-256=" + "0" * 64)
    g = t.wait_status(good, {"complete", "error"})
    b = t.wait_status(bad, {"complete", "error"})
    return {"good": {"status": g["status"], "errorCode": g.get("errorCode")},
            "bad": {"status": b["status"], "errorCode": b.get("errorCode")}}


@case("addUri: unknown option is accepted silently")
def c_unknown_option(t):
    r = t.rpc("aria2.addUri", [t.url("small")], {"no-such-option": "x", "out": t.unique("unknown-opt")})
    return rshape(r)


@case("addUri of the same URL twice -> aria2: a second download; haul: the same download")
def c_same_url(t):
    a = t.add("missing")
    b = t.add("missing")
    t.wait_status(a, "error")
    t.wait_status(b, "error")
    # Accepted difference (see the list at the top): each target follows its own rule.
    return {"follows its rule": (a == b) if t.is_haul else (a != b)}


@case("addUri twice with the same out -> both complete (aria2 renames the second file; haul: the same download)")
def c_same_name(t):
    name = t.unique("same-name")
    first = t.add("small", out=name)
    t.wait_status(first, "complete")
    r = t.rpc("aria2.addUri", [t.url("small")], {"out": name})
    out = {"second addUri": rshape(r)}
    if isinstance(r.json, dict) and "result" in r.json:
        second = r.json["result"]
        # Accepted difference (see the list at the top): aria2 makes a second, renamed file; haul answers
        # with the finished download and its one file.
        out["follows its rule"] = (second == first) if t.is_haul else (second != first)
        out["second status"] = t.wait_status(second, {"complete", "error"})["status"]
        p1 = t.ok("aria2.getFiles", first)[0]["path"]
        p2 = t.ok("aria2.getFiles", second)[0]["path"]
        out["follows its rule (paths)"] = (p1 == p2) if t.is_haul else (p1 != p2)
    return out


@case("addUri: invalid input -> HTTP 400, code 1 (bad split, bad checksum, bad limit, no URI, not a URL)")
def c_add_invalid(t):
    u = t.url("small")
    return {"split abc": rshape(t.rpc("aria2.addUri", [u], {"split": "abc"})),
            "checksum sha-256=zz": rshape(t.rpc("aria2.addUri", [u], {"checksum": "sha-256=zz"})),
            "max-download-limit zz": rshape(t.rpc("aria2.addUri", [u], {"max-download-limit": "zz"})),
            "no URI": rshape(t.rpc("aria2.addUri", [])),
            "not a URL": rshape(t.rpc("aria2.addUri", ["notaurl"]))}


@case("addUri of a 404 URL -> status error, errorCode 3, stopped key set")
def c_add_404(t):
    gid = t.add("missing")
    t.wait_status(gid, "error")
    st = t.status(gid)
    return {"status": st["status"], "errorCode": st.get("errorCode"), "shape": vshape(st)}


@case("addUri with dir outside haul's download dir -> code 1 (haul only)", only="haul")
def c_dir_outside(t):
    r = t.rpc("aria2.addUri", [t.url("small")], {"dir": "/etc", "out": t.unique("outside")})
    expect(r.status == 400 and isinstance(r.json, dict) and r.json.get("error", {}).get("code") == 1,
           f"dir=/etc must be refused with HTTP 400 and error code 1, got {r!r}")
    return {}


@case("addTorrent / addMetalink (haul may answer code 1: no BitTorrent/Metalink); garbage -> code 1")
def c_torrent_metalink(t):
    out = {}
    tor = t.rpc("aria2.addTorrent", base64.b64encode(TORRENT).decode(), [], {"dir": t.dir})
    ml = t.rpc("aria2.addMetalink", base64.b64encode(metalink(t).encode()).decode(), {"dir": t.dir})
    for name, r, want in [("addTorrent", tor, "<gid>"), ("addMetalink", ml, ["<gid>", "<gid>"])]:
        s = rshape(r)
        if t.is_haul and s.get("error", {}).get("code") == 1 and s.get("http") == 400:
            t.note(f"{name} unsupported (accepted)")
            s = {"http": 200, "jsonrpc": "2.0", "id": "c", "result": want}
        out[name] = s
    out["addTorrent garbage"] = rshape(t.rpc("aria2.addTorrent", base64.b64encode(b"garbage").decode()))
    out["addMetalink garbage"] = rshape(t.rpc("aria2.addMetalink", base64.b64encode(b"<bad").decode()))
    t.cleanup()
    return out


# ---- status, queue control ------------------------------------------------------------------------------------

@case("tellStatus of an active download: key set, all values strings, status active")
def c_tell_status(t):
    t.cleanup()
    gid = t.add("slow")
    t.wait_status(gid, "active")
    st = wait_for(lambda: (lambda s: s if s["files"] and s["files"][0]["path"] else None)(t.status(gid)),
                  "the file path to be known", 20)
    t.state["active"] = gid
    return {"shape": vshape(st), "dir is the target's dir": st["dir"].rstrip("/") == t.dir.rstrip("/"),
            "uri given": all(u["uri"] == t.url("slow") for u in st["files"][0]["uris"])}


@case("tellStatus with keys (unknown key ignored; [] means all keys)")
def c_tell_status_keys(t):
    gid = t.state.get("active")
    expect(gid, "needs the download from the previous case")
    some = t.status(gid, ["gid", "status", "totalLength", "files", "nosuchkey"])
    full = t.status(gid)
    every = t.status(gid, [])
    return {"keys": sorted(some), "[] same keys as none": sorted(every) == sorted(full),
            "one": sorted(t.status(gid, ["status"]))}


@case("getUris / getFiles / getServers (active; getServers of a waiting download -> code 1)")
def c_uris_files_servers(t):
    gid = t.state.get("active")
    expect(gid, "needs the download from the tellStatus case")
    uris = t.ok("aria2.getUris", gid)
    files = t.ok("aria2.getFiles", gid)
    servers = wait_for(lambda: (lambda s: s if s and s[0].get("servers") else None)(t.ok("aria2.getServers", gid)),
                       "getServers to list a server", 30)
    t.set_jobs(1)
    waiting = t.add("slow2")
    w = t.status(waiting, ["status"])["status"]
    res = {"getUris": vshape(uris, "uris"), "uri given": all(u["uri"] == t.url("slow") for u in uris),
           "getFiles": vshape(files), "getServers": vshape(servers),
           "waiting": {"status": w, "getServers": rshape(t.rpc("aria2.getServers", waiting)),
                       "getFiles": vshape(t.ok("aria2.getFiles", waiting)),
                       "getUris": vshape(t.ok("aria2.getUris", waiting), "uris")}}
    t.cleanup()
    t.set_jobs(5)
    return res


@case("pause / unpause / forcePause of an active download (and repeated -> code 1)")
def c_pause(t):
    t.cleanup()
    gid = t.add("slow")
    t.wait_status(gid, "active")
    out = {"pause": t.ok("aria2.pause", gid) == gid}
    t.wait_status(gid, "paused")
    out["in tellWaiting as paused"] = [x["status"] for x in t.ok("aria2.tellWaiting", 0, 10, ["gid", "status"])
                                       if x["gid"] == gid]
    out["pause again"] = rshape(t.rpc("aria2.pause", gid))
    out["unpause"] = t.ok("aria2.unpause", gid) == gid
    t.wait_status(gid, "active")
    out["unpause again"] = rshape(t.rpc("aria2.unpause", gid))
    out["forcePause"] = t.ok("aria2.forcePause", gid) == gid
    t.wait_status(gid, "paused")
    out["unpause 2"] = t.ok("aria2.unpause", gid) == gid
    t.wait_status(gid, "active")
    t.ok("aria2.forceRemove", gid)
    return out


@case("pauseAll / forcePauseAll / unpauseAll -> 'OK', states and getGlobalStat follow")
def c_pause_all(t):
    t.cleanup()
    a, b = t.add("slow"), t.add("slow2")
    t.wait_status(a, "active"), t.wait_status(b, "active")
    out = {"pauseAll": t.ok("aria2.pauseAll")}
    t.wait_status(a, "paused"), t.wait_status(b, "paused")
    stat = t.ok("aria2.getGlobalStat")
    out["stat after pauseAll"] = {"numActive": stat["numActive"], "numWaiting": stat["numWaiting"]}
    out["pauseAll again"] = t.ok("aria2.pauseAll")
    out["unpauseAll"] = t.ok("aria2.unpauseAll")
    t.wait_status(a, "active"), t.wait_status(b, "active")
    out["forcePauseAll"] = t.ok("aria2.forcePauseAll")
    t.wait_status(a, "paused"), t.wait_status(b, "paused")
    out["unpauseAll 2"] = t.ok("aria2.unpauseAll")
    t.wait_status(a, "active"), t.wait_status(b, "active")
    out["unpauseAll again"] = t.ok("aria2.unpauseAll")
    t.cleanup()
    return out


@case("remove / forceRemove of active downloads -> gid, status removed; again -> code 1")
def c_remove(t):
    t.cleanup()
    a, b = t.add("slow"), t.add("slow2")
    t.wait_status(a, "active"), t.wait_status(b, "active")
    out = {"remove": t.ok("aria2.remove", a) == a, "forceRemove": t.ok("aria2.forceRemove", b) == b}
    out["a"] = t.wait_status(a, "removed")["status"]
    out["b"] = t.wait_status(b, "removed")["status"]
    out["remove again"] = rshape(t.rpc("aria2.remove", a))
    out["forceRemove again"] = rshape(t.rpc("aria2.forceRemove", b))
    out["in tellStopped"] = sorted(t.labels(t.ok("aria2.tellStopped", 0, 10, ["gid"]), {"a": a, "b": b}))
    t.cleanup()
    return out


@case("tellActive / tellWaiting with positive and negative offsets (max-concurrent-downloads 1)")
def c_tell_waiting(t):
    t.cleanup()
    t.set_jobs(1)
    # One connection each (aria2's own default): the queue's cases up to getGlobalStat need A
    # running for their whole length. Added without a count, haul's A grew to 4 connections and,
    # in a clean-clone CI run on a loaded machine, finished before getGlobalStat counted it.
    one = {"max_connection_per_server": "1"}
    a = t.add("slow", **one)
    t.wait_status(a, "active")
    names = {"A": a, "B": t.add("slow2", **one), "C": t.add("slow3", **one), "D": t.add("slow", **one)}
    t.state["queue"] = names
    k = ["gid", "status"]
    tw = lambda o, n: [f"{l}:{x['status']}" for l, x in zip(t.labels(t.ok("aria2.tellWaiting", o, n, k), names),
                                                             t.ok("aria2.tellWaiting", o, n, k))]
    return {"tellActive": t.labels(t.ok("aria2.tellActive", k), names),
            "tellActive keys": sorted(set().union(*[set(x) for x in t.ok("aria2.tellActive", k)])),
            "(0,10)": tw(0, 10), "(-1,10)": tw(-1, 10), "(-1,2)": tw(-1, 2), "(1,1)": tw(1, 1),
            "(5,1)": tw(5, 1), "(-5,1)": tw(-5, 1), "(0,0)": tw(0, 0)}


@case("changePosition POS_SET / POS_CUR / POS_END (results and queue order, clamping)")
def c_change_position(t):
    names = t.state.get("queue")
    expect(names, "needs the queue from the previous case")
    order = lambda: "".join(t.labels(t.ok("aria2.tellWaiting", 0, 10, ["gid"]), names))
    out = {"start": order()}
    for g, pos, how in [("D", 0, "POS_SET"), ("D", 1, "POS_CUR"), ("D", -5, "POS_CUR"), ("B", 0, "POS_END"),
                        ("B", -1, "POS_END"), ("B", 5, "POS_END"), ("B", 100, "POS_SET"), ("B", -1, "POS_SET")]:
        out[f"{g},{pos},{how}"] = [t.ok("aria2.changePosition", names[g], pos, how), order()]
    out["POS_BAD"] = rshape(t.rpc("aria2.changePosition", names["B"], 0, "POS_BAD"))
    out["pos as string"] = rshape(t.rpc("aria2.changePosition", names["B"], "0", "POS_SET"))
    return out


@case("a paused download stays in the waiting list: tellWaiting, changePosition, unpause keeps its place")
def c_paused_waiting(t):
    names = t.state.get("queue")
    expect(names, "needs the queue from the tellWaiting case")

    def order():
        waiting = t.ok("aria2.tellWaiting", 0, 10, ["gid", "status"])
        return " ".join(f"{label}:{x['status']}" for label, x in zip(t.labels(waiting, names), waiting))
    out = {"start": order(), "pause C": t.ok("aria2.pause", names["C"]) == names["C"]}
    out["paused"] = order()
    for g, pos, how in [("C", 0, "POS_SET"), ("C", 1, "POS_CUR"), ("D", 0, "POS_SET"), ("C", 0, "POS_END")]:
        out[f"{g},{pos},{how}"] = [t.ok("aria2.changePosition", names[g], pos, how), order()]
    out["unpause C"] = t.ok("aria2.unpause", names["C"]) == names["C"]
    out["unpaused"] = order()
    return out


@case("getGlobalStat: key set, strings, counts (1 active, 3 waiting, 0 stopped)")
def c_global_stat(t):
    names = t.state.get("queue")
    expect(names, "needs the queue from the tellWaiting case")
    s = t.ok("aria2.getGlobalStat")
    res = {"shape": vshape(s), "numActive": s.get("numActive"), "numWaiting": s.get("numWaiting"),
           "numStopped": s.get("numStopped")}
    t.cleanup()
    t.set_jobs(5)
    return res


@case("tellStopped with positive and negative offsets; getGlobalStat numStopped")
def c_tell_stopped(t):
    t.cleanup()
    names = {"S1": t.add("small")}
    t.wait_status(names["S1"], "complete")
    names["S2"] = t.add("missing")
    t.wait_status(names["S2"], "error")
    names["S3"] = t.add("small")
    t.wait_status(names["S3"], "complete")
    t.state["stopped"] = names
    k = ["gid", "status"]
    ts = lambda o, n: [f"{l}:{x['status']}" for l, x in zip(t.labels(t.ok("aria2.tellStopped", o, n, k), names),
                                                             t.ok("aria2.tellStopped", o, n, k))]
    s = t.ok("aria2.getGlobalStat")
    full = t.ok("aria2.tellStopped", 0, 10)
    return {"(0,10)": ts(0, 10), "(-1,10)": ts(-1, 10), "(-1,2)": ts(-1, 2), "(1,1)": ts(1, 1),
            "(-100,2)": ts(-100, 2), "(100,2)": ts(100, 2), "numStopped": s["numStopped"],
            "numStoppedTotal >= numStopped": int(s["numStoppedTotal"]) >= int(s["numStopped"]),
            "complete shape": vshape(full[0])}


@case("removeDownloadResult / purgeDownloadResult")
def c_remove_result(t):
    names = t.state.get("stopped")
    expect(names, "needs the stopped downloads from the previous case")
    out = {"removeDownloadResult": t.ok("aria2.removeDownloadResult", names["S1"]),
           "again": rshape(t.rpc("aria2.removeDownloadResult", names["S1"])),
           "tellStatus after": rshape(t.rpc("aria2.tellStatus", names["S1"])),
           "numStopped": t.ok("aria2.getGlobalStat")["numStopped"]}
    a = t.add("slow")
    t.wait_status(a, "active")
    out["on an active download"] = rshape(t.rpc("aria2.removeDownloadResult", a))
    out["purgeDownloadResult"] = t.ok("aria2.purgeDownloadResult")
    out["tellStopped after purge"] = t.ok("aria2.tellStopped", 0, 10, ["gid"])
    out["numStopped after purge"] = t.ok("aria2.getGlobalStat")["numStopped"]
    t.cleanup()
    return out


# ---- options --------------------------------------------------------------------------------------------------

@case("changeOption / getOption (normalised values, bad value -> 1, unknown option ignored, stopped -> 1)")
def c_change_option(t):
    t.cleanup()
    gid = t.add("slow")
    t.wait_status(gid, "active")
    out = {"change": t.ok("aria2.changeOption", gid, {"max-download-limit": "10K"})}
    o = t.ok("aria2.getOption", gid)
    out["max-download-limit"] = o.get("max-download-limit")
    out["compared keys present"] = [k for k in COMPARED_OPTION_KEYS
                                    if k in o and k not in ("max-concurrent-downloads", "max-overall-download-limit")]
    out["all values strings"] = all(isinstance(v, str) for v in o.values())
    out["bad value"] = rshape(t.rpc("aria2.changeOption", gid, {"split": "x"}))
    out["unknown option"] = rshape(t.rpc("aria2.changeOption", gid, {"no-such-option": "1"}))
    out["not an object"] = rshape(t.rpc("aria2.changeOption", gid, "x"))
    done = t.add("small")
    t.wait_status(done, "complete")
    out["on a stopped download"] = rshape(t.rpc("aria2.changeOption", done, {"max-download-limit": "1K"}))
    out["getOption of a stopped download"] = rshape(t.rpc("aria2.getOption", done), result=False)
    t.cleanup()
    return out


@case("getGlobalOption / changeGlobalOption (normalised values, bad value -> 1, unknown ignored)")
def c_global_option(t):
    g = t.ok("aria2.getGlobalOption")
    out = {"compared keys present": [k for k in COMPARED_OPTION_KEYS if k in g],
           "all values strings": all(isinstance(v, str) for v in g.values()),
           "dir": g.get("dir", "").rstrip("/") == t.dir.rstrip("/")}
    out["change"] = t.ok("aria2.changeGlobalOption", {"max-overall-download-limit": "1M",
                                                      "max-concurrent-downloads": "2"})
    g2 = t.ok("aria2.getGlobalOption")
    out["after"] = {k: g2.get(k) for k in ("max-overall-download-limit", "max-concurrent-downloads")}
    out["max-concurrent-downloads 0"] = rshape(t.rpc("aria2.changeGlobalOption", {"max-concurrent-downloads": "0"}))
    out["unknown option"] = rshape(t.rpc("aria2.changeGlobalOption", {"no-such-option": "1"}))
    out["not an object"] = rshape(t.rpc("aria2.changeGlobalOption", "x"))
    out["restore"] = t.ok("aria2.changeGlobalOption", {"max-overall-download-limit": "0",
                                                       "max-concurrent-downloads": "5"})
    return out


# ---- aria2p driving the target --------------------------------------------------------------------------------

def api(t):
    return aria2p.API(aria2p.Client(host=f"http://{t.host}", port=t.port, secret=t.secret, timeout=30))


@case("aria2p: add_uris, get_download, get_downloads")
def c_aria2p_add(t):
    t.cleanup()
    a = api(t)
    out_name = t.unique("aria2p")
    d = a.add_uris([t.url("slow")], {"out": out_name, "dir": t.dir.rstrip("/") + "/aria2p"})
    t.state["aria2p"] = d.gid
    wait_for(lambda: d.live.is_active and d.total_length > 0, "aria2p download to be active with a known size", 30)
    ds = a.get_downloads()
    return {"gid": bool(GID_RE.fullmatch(d.gid)), "name": d.name == out_name, "status": d.status,
            "dir": str(d.dir) == t.dir.rstrip("/") + "/aria2p", "total_length": d.total_length > 0,
            "listed": [x.gid for x in ds].count(d.gid), "statuses": sorted({x.status for x in ds})}


@case("aria2p: pause, resume, pause_all, resume_all")
def c_aria2p_pause(t):
    a = api(t)
    gid = t.state.get("aria2p")
    expect(gid, "needs the download from the previous case")
    d = a.get_download(gid)
    out = {"pause": a.pause([d])}
    wait_for(lambda: d.live.is_paused, "aria2p download to be paused", 30)
    out["resume"] = a.resume([d])
    wait_for(lambda: d.live.is_active, "aria2p download to be active again", 30)
    out["pause_all"] = a.pause_all()
    wait_for(lambda: d.live.is_paused, "paused after pause_all", 30)
    out["resume_all"] = a.resume_all()
    wait_for(lambda: d.live.is_active, "active after resume_all", 30)
    return out


@case("aria2p: download options and global options (get/set)")
def c_aria2p_options(t):
    a = api(t)
    gid = t.state.get("aria2p")
    expect(gid, "needs the download from the aria2p add case")
    d = a.get_download(gid)
    out = {"set_options": a.set_options({"max-download-limit": "20K"}, [d])}
    d.update_options()
    out["max_download_limit"] = d.options.max_download_limit
    out["set via property"] = d.options.set("max-download-limit", "30K")
    d.update_options()
    out["max_download_limit 2"] = d.options.max_download_limit
    g = a.get_global_options()
    out["global max_concurrent_downloads is int"] = isinstance(g.max_concurrent_downloads, int)
    out["set_global_options"] = a.set_global_options({"max-overall-download-limit": "2M"})
    out["max_overall_download_limit"] = a.get_global_options().max_overall_download_limit
    out["restore"] = a.set_global_options({"max-overall-download-limit": "0"})
    return out


@case("aria2p: get_stats")
def c_aria2p_stats(t):
    s = api(t).get_stats()
    return {"num_active": s.num_active, "num_waiting": s.num_waiting, "num_stopped": s.num_stopped,
            "speeds are ints": isinstance(s.download_speed, int) and isinstance(s.upload_speed, int),
            "num_stopped_total is int": isinstance(s.num_stopped_total, int)}


@case("aria2p: remove (removes the result too), then get_download -> ClientException code 1; purge")
def c_aria2p_remove(t):
    a = api(t)
    gid = t.state.get("aria2p")
    expect(gid, "needs the download from the aria2p add case")
    d = a.get_download(gid)
    out = {"remove": a.remove([d])}
    # aria2p calls remove then removeDownloadResult right away; the result may still be there if the
    # removal had not completed yet, so wait until the gid is gone or shown as removed.
    def gone():
        try:
            st = a.get_download(gid).status
            if st == "removed":
                a.client.remove_download_result(gid)
            return False
        except aria2p.ClientException as e:
            return e.code
    out["get_download afterwards raises code"] = wait_for(gone, "the removed download to be gone", 30)
    small = a.add_uris([t.url("small")], {"out": t.unique("aria2p-small")})
    wait_for(lambda: small.live.is_complete, "aria2p small download to complete", 30)
    out["purge"] = a.purge()
    out["stopped after purge"] = len(a.client.tell_stopped(0, 100))
    return out


@case("aria2p: listen_to_notifications hears start and complete without a call with the token first")
def c_aria2p_listen(t):
    # aria2p's listener opens its own WebSocket (websocket-client: Origin of the daemon's own
    # address) and only listens. Its socket may open after an add: add small files until one
    # is heard complete, then a slow one, heard starting.
    t.cleanup()
    a = api(t)
    heard = []
    lock = threading.Lock()

    def note(kind):
        def callback(_api, gid):
            with lock:
                heard.append((kind, gid))
        return callback

    a.listen_to_notifications(threaded=True, on_download_start=note("start"),
                              on_download_complete=note("complete"), timeout=1)
    try:
        completed = None
        for _ in range(6):
            gid = t.add("small")
            try:
                wait_for(lambda: ("complete", gid) in heard, f"onDownloadComplete for {gid}", 5)
                completed = gid
                break
            except Exception:
                continue
        # Connected now: a download that runs a while is heard starting.
        slow = t.add("slow")
        try:
            wait_for(lambda: ("start", slow) in heard, f"onDownloadStart for {slow}", 15)
            started = True
        except Exception:
            started = False
        t.ok("aria2.forceRemove", slow)
        return {"a completion heard": completed is not None, "a start heard": started}
    finally:
        a.stop_listening()


@case("aria2p: add_metalink (a file with its sha-256 -> complete; a wrong sha-256 -> error, and with haul no file under its name)")
def c_aria2p_metalink(t):
    t.cleanup()
    a = api(t)
    body = urllib.request.urlopen(t.url("small"), timeout=30).read()
    names = {"good": t.unique("ml-good"), "bad": t.unique("ml-bad")}
    digests = {"good": hashlib.sha256(body).hexdigest(), "bad": "0" * 64}
    downloads = {}
    for key, name in names.items():
        path = os.path.join(tempfile.mkdtemp(), name + ".meta4")
        with open(path, "w") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?><metalink xmlns="urn:ietf:params:xml:ns:metalink">'
                    f'<file name="{name}"><size>{len(body)}</size><hash type="sha-256">{digests[key]}</hash>'
                    f'<url priority="1">{t.url("small")}</url></file></metalink>')
        downloads[key] = a.add_metalink(path, {"dir": t.dir})
    out = {"one gid each": [len(downloads["good"]), len(downloads["bad"])]}
    for key, (d,) in downloads.items():
        out[key] = wait_for(lambda: (lambda s: s if s in ("complete", "error") else None)(t.status(d.gid, ["status"])["status"]),
                            f"the {key} metalink download to end", 30)
    if t.is_haul:
        # aria2 leaves the file that failed its digest under its name; haul never publishes it.
        expect(not os.path.exists(os.path.join(t.dir, names["bad"])), "haul published a file whose sha-256 is wrong")
    t.cleanup()
    return out


@case("changeUri of an active download: it goes on from its bytes with the new URI (haul only)", only="haul")
def c_change_uri_active(t):
    t.cleanup()
    gid = t.add("slow3")
    t.wait_status(gid, "active")
    before = int(t.status(gid, ["completedLength"])["completedLength"])
    changed = t.ok("aria2.changeUri", gid, 1, [t.url("slow3")], [t.url("slow2")])
    t.wait_status(gid, "active")
    uris = [u["uri"] for u in t.ok("aria2.getUris", gid)]
    after = int(t.status(gid, ["completedLength"])["completedLength"])
    t.ok("aria2.forceRemove", gid)
    expect(changed == [1, 1], f"changeUri answered {changed!r}, not [1, 1]")
    expect(uris == [t.url("slow2")], f"getUris after the swap: {uris!r}")
    expect(after >= before, f"completedLength went from {before} to {after}: the bytes were not kept")
    return {}


@case("aria2p: changeUri of a paused download (swap its URI for a mirror of the same file, as AriaNg does), "
      "getUris, still paused; bad file index / wrong types -> code 1")
def c_aria2p_change_uri(t):
    t.cleanup()
    a = api(t)
    gid = t.add("slow3")
    t.wait_status(gid, "active")
    t.ok("aria2.pause", gid)
    t.wait_status(gid, "paused")
    changed = a.client.change_uri(gid, 1, [t.url("slow3")], [t.url("slow2")])
    uris = [u["uri"] for u in a.client.get_uris(gid)]
    added = a.client.change_uri(gid, 1, [], [t.url("slow")], 0)
    uris_after = [u["uri"] for u in a.client.get_uris(gid)]
    # Not unpaused here: aria2c 1.36 has been seen to die when a download whose URIs changed is
    # removed right after it starts again (haul's side of that is the haul-only case below).
    active = t.status(gid, ["status"])["status"]
    # aria2 lists a paused download's URIs with the one it used repeated (["slow3", "slow3", "slow2"]
    # after the swap): what both must agree on is that the mirror is listed, and the added one too.
    out = {"changed": changed, "mirror listed": t.url("slow2") in uris, "added at 0": added,
           "both listed": t.url("slow") in uris_after and t.url("slow2") in uris_after, "still paused": active,
           "bad file index": rshape(t.rpc("aria2.changeUri", gid, 2, [], [t.url("slow")])),
           "wrong types": rshape(t.rpc("aria2.changeUri", gid, 1, "x", []))}
    # Left as it is: aria2c 1.36 was seen to die soon after such a download was removed, so these
    # cases come last and the run's end tears everything down.
    return out


# ----------------------------------------------------------------------------------------------------------------
# Fixtures: aria2c, file server, torrent/metalink content
# ----------------------------------------------------------------------------------------------------------------

SMALL_SHA256 = None
TORRENT = None


def bencode(o):
    if isinstance(o, int):
        return b"i%de" % o
    if isinstance(o, str):
        o = o.encode()
    if isinstance(o, bytes):
        return b"%d:%s" % (len(o), o)
    if isinstance(o, list):
        return b"l" + b"".join(bencode(x) for x in o) + b"e"
    return b"d" + b"".join(bencode(k) + bencode(o[k]) for k in sorted(o)) + b"e"


def make_torrent(data):
    pl = 262144
    pieces = b"".join(hashlib.sha1(data[i:i + pl]).digest() for i in range(0, len(data), pl))
    return bencode({"announce": "http://127.0.0.1:9/announce",
                    "info": {"name": "compat-torrent.bin", "length": len(data), "piece length": pl, "pieces": pieces}})


def metalink(t):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<metalink xmlns="urn:ietf:params:xml:ns:metalink">'
            f'<file name="compat-ml1.bin"><url>{t.url("small")}</url></file>'
            f'<file name="compat-ml2.bin"><url>{t.url("small")}</url></file></metalink>')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FileServer:
    """Built-in stand-in for --files: /small.bin fast, /slow*.bin 64 MiB at ~1 MiB/s, Range support, 404 else."""
    SIZES = {"/small.bin": 300000, "/slow.bin": 64 << 20, "/slow2.bin": 64 << 20, "/slow3.bin": 64 << 20,
             "/visitor.bin": 200000}
    BLOCK = bytes((i * 31 + 7) & 0xFF for i in range(65536))

    def __init__(self, rate=1 << 20):
        sizes, block = self.SIZES, self.BLOCK

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.serve(False)

            def do_GET(self):
                self.serve(True)

            def serve(self, body):
                p = self.path.split("?")[0]
                if p.startswith("/visitor") and any(self.headers.get(k) != v for k, v in VISITOR.items()):
                    self.send_response(403)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if p == "/visitor-redirect.bin":
                    self.send_response(302)
                    self.send_header("Location", "/visitor.bin")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if p not in sizes:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                n, start, end, code = sizes[p], 0, sizes[p] - 1, 200
                m = re.match(r"bytes=(\d*)-(\d*)$", self.headers.get("Range") or "")
                if m and (m.group(1) or m.group(2)):
                    if m.group(1):
                        start = int(m.group(1))
                        end = min(int(m.group(2)), n - 1) if m.group(2) else n - 1
                    else:
                        start = max(0, n - int(m.group(2)))
                    code = 206
                self.send_response(code)
                self.send_header("Content-Length", str(end - start + 1))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Type", "application/octet-stream")
                if code == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{n}")
                self.end_headers()
                if not body:
                    return
                pos, t0, sent, slow = start, time.monotonic(), 0, p.startswith("/slow")
                try:
                    while pos <= end:
                        k = min(16384, end - pos + 1)
                        off = pos % 65536
                        self.wfile.write((block[off:] + block)[:k])
                        pos += k
                        sent += k
                        if slow:
                            ahead = sent / rate - (time.monotonic() - t0)
                            if ahead > 0:
                                time.sleep(ahead)
                except OSError:
                    pass

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = S(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class Aria2c:
    def __init__(self, path, secret):
        self.tmp = tempfile.mkdtemp(prefix="aria2-compat-")
        self.dir = os.path.join(self.tmp, "downloads")
        os.makedirs(self.dir)
        self.port = free_port()
        self.log = open(os.path.join(self.tmp, "aria2c.log"), "w")
        self.proc = subprocess.Popen(
            [path, "--enable-rpc", f"--rpc-listen-port={self.port}", f"--rpc-secret={secret}",
             "--rpc-allow-origin-all", f"--dir={self.dir}", "--no-conf", "--quiet", "--file-allocation=none",
             f"--save-session={os.path.join(self.tmp, 'session.txt')}", "--max-concurrent-downloads=5",
             "--enable-dht=false", "--enable-dht6=false", "--bt-enable-lpd=false", "--enable-peer-exchange=false",
             "--auto-save-interval=0", "--check-certificate=false"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def wait_ready(t, timeout=30):
    def ready():
        r = t.rpc("aria2.getVersion")
        return r.status == 200
    try:
        wait_for(ready, f"{t.name} at {t.host}:{t.port} to answer aria2.getVersion", timeout, 0.2)
    except CaseError:
        # also accept "answers at all" so that every case reports its own failure against a half-ready haul
        wait_for(lambda: t.rpc("system.listMethods", token=False).status is not None,
                 f"{t.name} at {t.host}:{t.port} to answer on /jsonrpc", 5, 0.2)


# ----------------------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------------------

def main():
    global SMALL_SHA256, TORRENT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--haul", help="haul daemon base URL, e.g. http://127.0.0.1:6800")
    ap.add_argument("--secret", default=None, help="haul's secret (aria2c gets the same one)")
    ap.add_argument("--files", help="base URL of the test file server (default: a built-in one)")
    ap.add_argument("--aria2c", default="/usr/bin/aria2c")
    ap.add_argument("--only", choices=["aria2", "haul"], help="run against one target only (no comparison)")
    ap.add_argument("--case", help="run only cases whose name matches this regular expression")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every observation")
    args = ap.parse_args()
    if args.only != "aria2" and not args.haul:
        ap.error("--haul is required unless --only aria2")
    secret = args.secret or ("compat-secret-" + os.urandom(6).hex())

    fs = None
    files = args.files
    if not files:
        fs = FileServer()
        files = fs.url
    with urllib.request.urlopen(files.rstrip("/") + "/small.bin", timeout=30) as f:
        small = f.read()
    SMALL_SHA256 = hashlib.sha256(small).hexdigest()
    TORRENT = make_torrent(small)

    aria = None
    targets = []
    failed = ran = 0
    names = []
    try:
        if args.only != "haul":
            aria = Aria2c(args.aria2c, secret)
            targets.append(Target("aria2", aria.url, secret, files))
        if args.only != "aria2":
            targets.append(Target("haul", args.haul, secret, files))
        for t in targets:
            wait_ready(t)
            try:
                t.dir = t.ok("aria2.getGlobalOption")["dir"]
                t.set_jobs(5)
            except (CaseError, KeyError) as e:
                print(f"FAIL setup [{t.name}]: getGlobalOption dir / changeGlobalOption: {e}")
                failed += 1
                t.dir = t.dir or "/nonexistent-dir"
        names = [t.name for t in targets]
        for name, fn, only in CASES:
            if args.case and not re.search(args.case, name):
                continue
            obs, errs = {}, []
            if only and only not in names:
                print(f"skip {name}")
                continue
            ran += 1
            for t in targets:
                if only and t.name != only:
                    continue
                t.notes = []
                try:
                    obs[t.name] = fn(t)
                except CaseError as e:
                    errs.append(f"[{t.name}] {e}")
                except Exception as e:  # a crash in a case is a failure of that case, not of the run
                    tb = traceback.extract_tb(e.__traceback__)[-1]
                    errs.append(f"[{t.name}] {type(e).__name__}: {e} (line {tb.lineno})")
                if t.notes:
                    obs.setdefault("_notes", []).extend(f"{t.name}: {n}" for n in t.notes)
            notes = obs.pop("_notes", [])
            diffs = diff(obs["aria2"], obs["haul"]) if "aria2" in obs and "haul" in obs else []
            if args.verbose:
                for n in names:
                    if n in obs:
                        print(f"    {n}: {json.dumps(obs[n], default=str)}")
            if errs or diffs:
                failed += 1
                print(f"FAIL {name}: " + "; ".join(errs + diffs[:12]) + (f"; ... {len(diffs) - 12} more"
                                                                        if len(diffs) > 12 else ""))
            else:
                print(f"ok   {name}" + (f"  ({'; '.join(notes)})" if notes else ""))
            sys.stdout.flush()
    finally:
        for t in targets:
            try:
                t.cleanup()
            except Exception:
                pass
        if aria:
            aria.close()
        if fs:
            fs.close()
    print(f"{'FAILED' if failed else 'passed'}: {failed} failing of {ran} case(s) against {', '.join(names)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
