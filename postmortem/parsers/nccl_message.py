"""What an NCCL_DEBUG message says, once nccl.py has cut the line's prefix.

Reads the message half of an NCCL line (docs/formats.md, NCCL_DEBUG output): the
`ncclResult_t` codes and texts, the structured messages of grammars/nccl.lark (Init,
network selection, version banner, nccl-tests' failure line and device table) turned
into plain dicts, and the regex fast paths for the commonest shapes (`file:line -> rc`
error-chain links, `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC` transport lines, network
selection and the version banner), which tests check agree with the grammar on every
fixture line.  The grammar's transformer (and lark) is imported only for a message that
no fast path reads (nccl_tree.py).
"""
from __future__ import annotations

import functools
import re

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
# Fast paths for the network selection and version banner (rules `network`, `version`):
# every rank prints them, and with them a bundle of NCCL INFO lines needs no lark at all.
_USING_NETWORK = re.compile(r"Using network (?P<rest>\S.*)")
_NET_USING = re.compile(r"(?P<name>NET/[\w-]+|Bootstrap) ?: ?Using (?P<rest>\S.*)")
_VERSION = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+[^\s+]*)(?:\+cuda(?P<cuda>\d+(?:\.\d+)*))?")
# Fast path for the Init line (rule `init`) in its printed spacing: every rank prints it, and
# without it a bundle of NCCL INFO lines imports lark in every process that reads one
# (~45 ms each, issue 17).  [0-9], not \d: the grammar's INT is ASCII digits.
_INIT = re.compile(
    r"(?:\[Rank (?P<rank_tag>[0-9]+)\] )?(?:(?P<api>nccl[A-Z]\w*) )?comm (?P<comm>0x[0-9a-fA-F]+) "
    r"rank (?P<rank>[0-9]+) nranks (?P<nranks>[0-9]+) cudaDev (?P<cudaDev>[0-9]+)"
    r"(?: nvmlDev (?P<nvmlDev>[0-9]+))?(?: busId (?P<busId>[0-9a-fA-Fx:.]+))?(?: commId (?P<commId>0x[0-9a-fA-F]+))?"
    r"(?P<split>(?: (?:parent 0x[0-9a-fA-F]+|splitCount [0-9]+|childCount [0-9]+|color -?[0-9]+|key -?[0-9]+))*)"
    r" - Init (?P<phase>START|COMPLETE)")
_SPLIT_FIELD = re.compile(r" (parent|splitCount|childCount|color|key) (\S+)")


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


def _channel_data(channel, conn, src, srcbus, dst, dstbus, direction, via) -> dict:
    via = via.strip()
    transport = via.split("/", 2)
    # `P2P/IPC/read` -> P2P/IPC ; `NET/IB/0/GDRDMA` -> NET/IB ; `direct shared memory` (2.7) -> SHM
    name = "SHM" if via.startswith("direct shared") else "/".join(transport[:2])
    return {"channel": int(channel), "conn": None if conn is None else int(conn), "peer": int(dst),
            "src": int(src), "src_bus": str(srcbus), "peer_bus": str(dstbus),
            "direction": direction, "via": via, "transport": name}


def parse_message(text: str) -> tuple[str, dict] | None:
    """Parse a structured NCCL message with grammars/nccl.lark; None when it is not one."""
    parsed = _parse_cached(text)
    return None if parsed is None else (parsed[0], dict(parsed[1]))


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str) -> tuple[str, dict] | None:
    # Every rank prints the same `Using network IB`, `NCCL version ...`: parse each text once.
    return _fast_network(text) or _fast_version(text) or _fast_init(text) or grammar_message(text)


def grammar_message(text: str) -> tuple[str, dict] | None:
    """What grammars/nccl.lark reads in `text`, without the fast paths; None when it is not
    a structured message."""
    try:
        from postmortem.parsers.nccl_tree import TRANSFORMER

        return grammar.load("nccl", transformer=TRANSFORMER).parse(text)
    except Exception:  # noqa: BLE001 - not a structured message (LarkError), or a transformer surprise
        return None


def _fast_network(msg: str) -> tuple[str, dict] | None:
    """The grammar's `network` (using_network, net_using) in its printed spacing; None for
    anything else, which the grammar reads (NET/Plugin names no network: the grammar's None)."""
    m = _USING_NETWORK.fullmatch(msg)
    if m is not None:
        return "network", {"network": m["rest"].strip(), "devices": []}
    m = _NET_USING.fullmatch(msg)
    if m is None or m["name"] == "NET/Plugin":
        return None
    name, rest = m["name"], m["rest"]
    network = name.split("/", 1)[1] if name.startswith("NET/") else name
    return "network", {"network": network, "devices": _NET_DEVICE.findall(rest) or [rest.strip()]}


def _fast_init(msg: str) -> tuple[str, dict] | None:
    """The grammar's `init` in its printed spacing, keys in the transformer's order
    (nccl_tree._ToDict.init); None for anything else, which the grammar reads."""
    m = _INIT.fullmatch(msg)
    if m is None:
        return None
    data: dict = {}
    if m["rank_tag"] is not None:
        data["rank_tag"] = int(m["rank_tag"])
    if m["api"] is not None:
        data["api"] = m["api"]
    data["comm"] = m["comm"]
    if m["nvmlDev"] is not None:
        data["nvmlDev"] = int(m["nvmlDev"])
    if m["busId"] is not None:
        data["busId"] = m["busId"]
    if m["commId"] is not None:
        data["commId"] = m["commId"]
    if m["split"]:
        for name, value in _SPLIT_FIELD.findall(m["split"]):
            data[name] = value
    data["phase"] = m["phase"]
    data["rank"], data["nranks"], data["cudaDev"] = int(m["rank"]), int(m["nranks"]), int(m["cudaDev"])
    return "init", data


def _fast_version(msg: str) -> tuple[str, dict] | None:
    """The grammar's `version` banner without stray spaces; None for anything else."""
    m = _VERSION.fullmatch(msg)
    return None if m is None else ("version", {"version": m["version"], "cuda": m["cuda"]})


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


def is_ring(msg: str) -> bool:
    """Whether fast_ring(msg) finds a ring (without reading its ranks: one per rank of the job)."""
    return _RING.match(msg) is not None


def fast_ring(msg: str) -> dict | None:
    m = _RING.match(msg)
    if not m:
        return None
    return {"channel": int(m["channel"]), "ring": [int(r) for r in m["ranks"].split()]}
