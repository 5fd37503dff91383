"""What an NCCL_DEBUG message says, once nccl.py has cut the line's prefix.

Reads the message half of an NCCL line (docs/formats.md, NCCL_DEBUG output): the
`ncclResult_t` codes and texts, the structured messages of grammars/nccl.lark (Init,
network selection, version banner, nccl-tests' failure line and device table) turned
into plain dicts, and the regex fast paths for the two commonest shapes (`file:line ->
rc` error-chain links and `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC` transport lines),
which tests check agree with the grammar on every fixture line.
"""
from __future__ import annotations

import functools
import re

from lark import Transformer, v_args
from lark.exceptions import LarkError

from postmortem import grammar

# ncclResult_t: value -> (name, ncclGetErrorString text before 2.18; later texts only append a hint).
NCCL_RESULTS: dict[int, tuple[str, str]] = {
    0: ("ncclSuccess", "no error"),
    1: ("ncclUnhandledCudaError", "unhandled cuda error"),
    2: ("ncclSystemError", "unhandled system error"),
    3: ("ncclInternalError", "internal error"),
    4: ("ncclInvalidArgument", "invalid argument"),
    5: ("ncclInvalidUsage", "invalid usage"),
    6: ("ncclRemoteError", "remote process exited or there was a network error"),
    7: ("ncclInProgress", "NCCL operation in progress"),
    8: ("ncclTimeout", "timeout"),
}
# Texts specific enough to name a result wherever they appear in a message.  "timeout",
# "no error" and "invalid argument" (also a CUDA error string) only count when they are
# the whole quoted error, see result_name().
_RESULT_PHRASES: tuple[tuple[str, str], ...] = tuple(sorted(
    ((text, name) for name, text in NCCL_RESULTS.values()
     if text not in ("no error", "timeout", "invalid argument")),
    key=lambda pair: -len(pair[0])))
_RESULT_BY_TEXT = {text: name for name, text in NCCL_RESULTS.values()}
_RESULT_BY_NAME = {name: name for name, _ in NCCL_RESULTS.values()}

# Fast paths for the two commonest message shapes (grammar rules `chain` and `channel`).
_CHAIN = re.compile(
    r"(?P<file>[\w.\/+-]+\.[A-Za-z]+):(?P<line>\d+)(?: \((?P<func>[^()\s]+)\))? -> (?P<rc>\d+)"
    r"(?: \[(?P<thread>[A-Za-z][^\]]*)\])?\s*$")
_CHANNEL = re.compile(
    r"Channel (?P<channel>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+)\[(?P<srcbus>[0-9a-fA-Fx:.]+)\] -> "
    r"(?P<dst>\d+)\[(?P<dstbus>[0-9a-fA-Fx:.]+)\](?: \[(?P<dir>send|receive)\])? via (?P<via>\S.*)")

_RING = re.compile(r"Channel (?P<channel>\d+)(?:/\d+)? :(?P<ranks>(?: +\d+)*)\s*$")
_NET_DEVICE = re.compile(r"\[\d+\](\S+)")


def result_name(text: str) -> str | None:
    """The ncclResult_t name an error text stands for (`unhandled system error` -> ncclSystemError)."""
    bare = text.strip().strip("'").split(" (run with", 1)[0].split(" - please report", 1)[0].strip()
    if bare in _RESULT_BY_TEXT:
        return _RESULT_BY_TEXT[bare]
    for phrase, name in _RESULT_PHRASES:
        if phrase in text:
            return name
    for name in _RESULT_BY_NAME:
        if name in text:
            return name
    return None


def rc_name(rc: int) -> str:
    return NCCL_RESULTS.get(rc, ("unknown result code",))[0]


@v_args(inline=True)
class _ToDict(Transformer):
    """grammars/nccl.lark trees -> (shape, dict) with plain Python values."""

    def start(self, item):
        return item

    def init(self, *parts):
        data: dict = {}
        ints = []
        for p in parts:
            if isinstance(p, tuple):
                data[p[0]] = p[1]
            elif p.type == "API":
                data["api"] = str(p)
            elif p.type == "HEX":
                data["comm"] = str(p)
            elif p.type == "INT":
                ints.append(int(p))
            elif p.type == "PHASE":
                data["phase"] = str(p)
        data["rank"], data["nranks"], data["cudaDev"] = ints
        return "init", data

    def rank_tag(self, n):
        return ("rank_tag", int(n))

    def nvml_dev(self, n):
        return ("nvmlDev", int(n))

    def bus_id(self, b):
        return ("busId", str(b))

    def comm_id(self, h):
        return ("commId", str(h))

    def split_field(self, name, value):
        return (str(name), str(value))

    def channel(self, channel, *rest):
        conn = None
        if isinstance(rest[0], tuple):
            conn, rest = rest[0][1], rest[1:]
        src, srcbus, dst, dstbus = rest[:4]
        direction = rest[4][1] if len(rest) == 6 else None
        return "channel", _channel_data(channel, conn, src, srcbus, dst, dstbus, direction, str(rest[-1]))

    def conn_index(self, n):
        return ("conn", str(n))

    def direction(self, d):
        return ("direction", str(d))

    def ring(self, channel, *rest):
        ranks = [int(t) for t in rest if not isinstance(t, tuple)]
        return "ring", {"channel": int(channel), "ring": ranks}

    def chain(self, file, line, *rest):
        func = thread = None
        rc = None
        for p in rest:
            if isinstance(p, tuple):
                if p[0] == "func":
                    func = p[1]
                else:
                    thread = p[1]
            else:
                rc = int(p)
        return "chain", {"file": str(file), "line": int(line), "func": func, "rc": rc, "thread": thread}

    def func(self, name):
        return ("func", str(name))

    def thread(self, name):
        return ("thread", str(name).strip())

    def version(self, version, cuda=None):
        return "version", {"version": str(version), "cuda": cuda}

    def cuda(self, v):
        return str(v)

    def using_network(self, rest):
        return "network", {"network": str(rest).strip(), "devices": []}

    def net_using(self, name, rest):
        name = str(name)
        if name == "NET/Plugin":  # `NET/Plugin: Using internal network plugin.` names no network
            raise ValueError("not a network selection")
        network = name.split("/", 1)[1] if name.startswith("NET/") else name
        return "network", {"network": network, "devices": _NET_DEVICE.findall(str(rest)) or [str(rest).strip()]}

    def test_failure(self, lib, file, line, quoted):
        msg = str(quoted)[1:-1]
        return "test_failure", {"lib": lib, "file": str(file), "line": int(line), "msg": msg}

    def failed_lib(self, tok):
        return str(tok)

    def device_row(self, rank, *rest):
        if isinstance(rest[0], tuple):
            rest = rest[1:]
        pid, host, device, bus, name = rest
        return "device_row", {"rank": int(rank), "pid": int(pid), "host": str(host), "device": int(device),
                              "bus": str(bus), "name": str(name).strip()}

    def group(self, n):
        return ("group", int(n))


def _channel_data(channel, conn, src, srcbus, dst, dstbus, direction, via) -> dict:
    via = via.strip()
    transport = via.split("/", 2)
    # `P2P/IPC/read` -> P2P/IPC ; `NET/IB/0/GDRDMA` -> NET/IB ; `direct shared memory` (2.7) -> SHM
    name = "SHM" if via.startswith("direct shared") else "/".join(transport[:2])
    return {"channel": int(channel), "conn": None if conn is None else int(conn), "peer": int(dst),
            "src": int(src), "src_bus": str(srcbus), "peer_bus": str(dstbus),
            "direction": direction, "via": via, "transport": name}


_TRANSFORMER = _ToDict()




def parse_message(text: str) -> tuple[str, dict] | None:
    """Parse a structured NCCL message with grammars/nccl.lark; None when it is not one."""
    parsed = _parse_cached(text)
    return None if parsed is None else (parsed[0], dict(parsed[1]))


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str) -> tuple[str, dict] | None:
    # Every rank prints the same `Using network IB`, `NCCL version ...`: parse each text once.
    try:
        return grammar.load("nccl", transformer=_TRANSFORMER).parse(text)
    except LarkError:
        return None
    except Exception:  # noqa: BLE001 - a transformer surprise costs one line, never the file
        return None


def fast_chain(msg: str) -> dict | None:
    m = _CHAIN.match(msg)
    if not m:
        return None
    return {"file": m["file"], "line": int(m["line"]), "func": m["func"], "rc": int(m["rc"]),
            "thread": m["thread"].strip() if m["thread"] else None}


def fast_channel(msg: str) -> dict | None:
    m = _CHANNEL.match(msg)
    if not m:
        return None
    return _channel_data(m["channel"], m["conn"], m["src"], m["srcbus"], m["dst"], m["dstbus"],
                         m["dir"], m["via"].rstrip())


def fast_ring(msg: str) -> dict | None:
    m = _RING.match(msg)
    if not m:
        return None
    return {"channel": int(m["channel"]), "ring": [int(r) for r in m["ranks"].split()]}
