"""Strip what launchers and CI wrap around each output line, and keep what it carried.

Launchers prefix every line of a rank's output (`[rank3]:`, `[default3]:`,
`[1,12]<stdout>:`, srun `11: `, `host: ` from pdsh/deepspeed), and CI systems
prepend their own UTC timestamp.  These are peeled off, outermost first, before any
parser sees the line; the rank, host or time they carried stays on the Line.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from postmortem.model import ClockKind, Stamp

# (name, pattern) — applied repeatedly, outermost wrapper first.  Each pattern must
# match at the start of the line and consume the wrapper with its trailing space.
_CI_ISO = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d))\s")
# `[rank3]:` is torch's own excepthook prefix, the GLOBAL rank (distributed_c10d.py
# init_process_group: excepthook_prefix = f"[rank{get_rank()}]"); `[default3]:` is torchrun's
# --tee/redirect prefix `[${role_name}${local_rank}]:`, the LOCAL rank (elastic/agent/server/
# local_elastic_agent.py).  Nested (`[default0]:[rank1]: ...` on node 1), the global one wins.
_RANK = re.compile(r"^\[(?P<word>rank|default)(?P<rank>\d+)\]:\s?")
_MPI = re.compile(r"^\[(?P<job>\d+),(?P<rank>\d+)\]<(?:stdout|stderr)>:\s?")
# srun --label: `11: ` ; also DeepSpeed/pdsh `host: ` is handled below.
_SRUN = re.compile(r"^(?P<rank>\d{1,5}): (?=\S)")
_PDSH = re.compile(r"^(?P<host>[A-Za-z][\w.-]{0,62}): (?=\S)")
# `[host]:` is not a thing; Ray prints `(pid=123, ip=1.2.3.4)` or `(RayTrainWorker pid=123, ip=...)`.
# Ray's driver colours that prefix (ray/_private/worker.py print_worker_logs: "{}{}({}{}){} {}" with
# colorama Style.DIM, Fore.CYAN before the "(" and Style.RESET_ALL after the ")"), so a saved console holds
# `ESC[2mESC[36m(RayWorkerWrapper pid=4183, ip=...)ESC[0m message`; a paste into an issue keeps the codes
# with the ESC turned into U+FFFD or dropped (vllm-project/vllm#5477: `\ufffd[36m(RayWorkerWrapper pid=4183,
# ip=10.3.32.122)\ufffd[0m ERROR ...`).  The codes are read only around the prefix itself.
_SGR = r"(?:(?:\x1b|\ufffd)?\[[0-9;]{0,8}m)*"
_RAY = re.compile(rf"^{_SGR}\((?:[\w.]+ )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.]+))?\){_SGR}\s")
# docker compose's log prefix (docker/compose cmd/formatter/logs.go setPrefix at 13d70b1c:
# fmt.Sprintf("%-"+width+"s | ", name), width = the longest container name + 1, the whole prefix
# coloured on a terminal; docker-compose v1 printed `name | ` the same way).  Compose names its
# containers <project>-<service>-<index> (v1: <project>_<service>_<index>), so the name ends in an
# index; an empty line keeps only `name  |`.  The container stands for the host.
COMPOSE_CONTAINER = r"[A-Za-z0-9][\w.-]{0,127}[-_]\d{1,4}"   # also launcher.py's `NAME exited with code N`
_COMPOSE = re.compile(rf"^{_SGR}(?P<name>{COMPOSE_CONTAINER}) +\|(?: |$){_SGR}")

# Words that look like a pdsh host prefix but are really the start of a message.
_NOT_HOSTS = frozenset({
    "RuntimeError", "ValueError", "Error", "ERROR", "WARNING", "INFO", "DEBUG", "NCCL",
    "Traceback", "File", "Exception", "OSError", "TypeError", "KeyError", "AssertionError",
    "torch", "what", "Fatal", "Current", "Thread", "Extension", "root", "rank", "Note",
    "error", "warning", "note", "hint", "frame", "kern", "kernel", "Caused", "exitcode",
    "host", "time", "pid", "traceback", "message", "Root", "Failures", "NVRM", "mce",
    "EDAC", "pcieport", "nvidia", "xhci_hcd", "ucsi_ccg", "srun", "slurmstepd", "CUDA",
    "MemoryError", "SystemExit", "KeyboardInterrupt", "Bus", "Segmentation", "ImportError",
    "ModuleNotFoundError", "NotImplementedError", "IndexError", "AttributeError", "Hint",
    "Warning", "Info", "Debug", "Error", "Aborted", "Killed", "Failed", "Done",
})


def _ci_stamp(text: str) -> Stamp | None:
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return Stamp(ClockKind.WALL, wall=ts, resolution_s=1e-6 if "." in text else 1.0)


def clean(raw: str) -> str:
    """Drop NULs (torch's worker messages leave one after the newline) and trailing CR."""
    if "\x00" in raw:
        raw = raw.replace("\x00", "")
    return raw.rstrip("\r\n")


# Could the line start with any wrapper at all?  One match instead of five on most lines.
_ANY_WRAPPER = re.compile(r"\d{4}-\d\d-\d\dT|\[(?:rank|default)\d|\[\d+,\d+\]<|\d{1,5}: \S|\(|[A-Za-z][\w.-]{0,62}: \S"
                          r"|(?:(?:\x1b|\ufffd)?\[[0-9;]{0,8}m)+[(A-Za-z0-9]|[\w.-]{1,128}+ +\|")  # possessive: one pass over a word
# iproute2's interface header `2: eth0: <BROADCAST,UP> mtu 1500 ...` is an index and a name,
# not an srun rank and a pdsh host (ip/ipaddress.c print_linkinfo).
_IP_LINK_HEADER = re.compile(r"^\d+: [^\s:]+: <[A-Z0-9_,-]*> mtu \d+")


def strip(text: str) -> tuple[str, int | None, str | None, Stamp | None]:
    """Return (text, rank, host, stamp) with every recognised wrapper removed."""
    if not _ANY_WRAPPER.match(text) or _IP_LINK_HEADER.match(text):
        return text, None, None, None
    rank: int | None = None
    host: str | None = None
    stamp: Stamp | None = None
    local_only = False   # the rank so far is torchrun's `[defaultN]:` local rank
    for _ in range(4):  # wrappers nest at most a few deep
        m = _CI_ISO.match(text)
        if m and stamp is None:
            stamp = _ci_stamp(m.group("ts"))
            text = text[m.end():]
            continue
        m = _RANK.match(text) or _MPI.match(text)
        if m:
            word = m.groupdict().get("word")
            if rank is None or (word == "rank" and local_only):
                rank = int(m.group("rank"))
                local_only = word == "default"
            text = text[m.end():]
            continue
        m = _SRUN.match(text)
        if m and rank is None:
            rank = int(m.group("rank"))
            text = text[m.end():]
            continue
        m = _RAY.match(text)
        if m:
            text = text[m.end():]
            continue
        m = _COMPOSE.match(text)
        if m:
            host = host or m.group("name")
            text = text[m.end():]
            continue
        m = _PDSH.match(text)
        if m and host is None and m.group("host") not in _NOT_HOSTS and _looks_like_host(m.group("host")):
            host = m.group("host")
            text = text[m.end():]
            continue
        break
    return text, rank, host, stamp


# Programs that prefix their own name (Slurm's step daemon names itself after the node).
_NOT_HOST_PREFIXES = ("slurmstepd", "srun", "sbatch", "salloc", "mpirun", "orted", "prterun")


# A dotted exception name whose module has a digit (urllib3.exceptions.NewConnectionError, httpx2.ConnectError,
# botocore's boto3 callers): CPython prints `module.Class: message`, the class capitalised, its name ending
# as exception classes do (parsers/pytrace.py EXCEPTION_SUFFIXES) -- no host name is spelt so.
_EXCEPTION_NAME = re.compile(r"(?:^|\.)_*[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit|Failure)$")


def _looks_like_host(word: str) -> bool:
    # Hosts in pdsh/deepspeed prefixes have a digit or a dash/dot (node12, gpu-a-3, worker-0.cluster).
    if word.startswith(_NOT_HOST_PREFIXES) or _EXCEPTION_NAME.search(word):
        return False
    return any(c.isdigit() for c in word) or "-" in word


# torch elastic's error file (torch/distributed/elastic/multiprocessing/errors/error_handler.py
# record_exception: {"message": {"message": "<Type>: <text>", "extraInfo": {"py_callstack":
# traceback.format_exc(), "timestamp": "<unix seconds>"}}}), written by an @record'ed worker and
# echoed by the agent (`error_handler:{` and its json.dumps(indent=2) lines): the worker's whole
# traceback is one JSON string with its newlines escaped.  It is read as the lines it holds, each
# cited at the physical line that carries it.  A paste cut inside the string (no closing quote)
# still yields what it holds; a half escape at the cut is dropped.
CALLSTACK_KEY = '"py_callstack": "'   # a line without it is never unwrapped (the scanner's cheap test too)
_PY_CALLSTACK = re.compile(r'"py_callstack": "((?:[^"\\]|\\.){0,200000})(?:"|\\?$)')


def unwrap_callstack(text: str) -> list[str] | None:
    """The traceback lines an elastic error record's `py_callstack` string holds, or None."""
    if CALLSTACK_KEY not in text:
        return None
    m = _PY_CALLSTACK.search(text)
    if m is None:
        return None
    try:
        lines = json.loads(f'"{m.group(1)}"').splitlines()
    except ValueError:
        return None
    return [line for line in lines if line.strip()] or None
