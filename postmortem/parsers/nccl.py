"""Parser for NCCL_DEBUG output, every release from 2.4 to 2.30.7 (docs/formats.md, NCCL_DEBUG output).

A line is `[ts] host:pid:tid [dev] NCCL INFO msg` with every part before the level
optional (timestamps from 2.26, host-stripped pastes, `NCCL CALL` lines without
`[dev]`); WARN lines carry `file:line` and, from 2.30.7, `(func)`; very old builds
print `file:line WARN` without the NCCL token.  The prefix is cut by one regex.  The
message is then classified:

* `file:line -> rc` lines are an error unwinding the stack; the lines of one
  host:pid:tid are merged into one `nccl.error_chain` event (emitted when the chain
  ends), carrying the WARN that started it when that came just before on the tid;
* `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC` lines become `nccl.transport`;
* a few structured messages (Init, network, version) go through grammars/nccl.lark;
* anything else is a plain `nccl.info` (or `nccl.warn`, `nccl.trace`).

Chain and channel lines dominate big INFO bundles, so they have regex fast paths;
tests check those agree with the grammar on every fixture line.  Bare lines printed
without a prefix (`NCCL version 2.7.8+cuda10.2`, nccl-tests' `NCCL failure ...` and
its `#  Rank  0 Pid ...` device table) go through the grammar too.
"""
from __future__ import annotations

import bisect
import functools
import re
from sys import intern as _intern
from dataclasses import dataclass, field
from datetime import datetime

from postmortem.model import ClockKind, Severity, Stamp
from postmortem.parsers.base import Line, LineParser, emit
from postmortem.parsers.nccl_message import (  # noqa: F401 - also this module's interface
    NCCL_RESULTS,
    fast_chain,
    fast_channel,
    fast_ring,
    is_ring,
    parse_message,
    rc_name,
    result_name,
)

# Lines that can be NCCL output: the level token, the old `file:line WARN` form, the
# bare version banner and the two nccl-tests shapes.
PREFILTER = re.compile(
    r"NCCL (?:INFO|WARN|TRACE|CALL|ABORT|version \d|failure )|\.\w+:\d+ WARN |^#\s+Rank\s+\d")

# The prefix (docs/formats.md, NCCL_DEBUG output: one row per era).  `ts` must hold a non-digit so `[0] NCCL INFO` (a
# host-stripped paste) reads as a device, not a timestamp.
_HEADER = re.compile(
    r"(?:\[(?P<ts>(?=[^\]]*?[^\]\d\s-])[^\]]*+)\]\s?)?"
    r"(?:(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+)\s)?"
    r"(?:\[(?P<dev>-?\d+)\]\s)?"
    r"(?:(?P<ms>\d+\.\d+)\s(?P<tfunc>\S+):(?P<tline>\d+)\s(?=NCCL\sTRACE)"
    r"|(?P<file>[^\s:]+):(?P<line>\d+)(?:\s\((?P<func>[^)]*)\))?\s(?=(?:NCCL\s)?WARN\s))?"
    r"(?:NCCL\s(?P<level>INFO|WARN|TRACE|CALL|ABORT)|(?P<legacy>WARN|INFO))(?:\s(?P<msg>.*))?$")

# The INFO prefix alone, for the fast path in NcclParser._split (most lines of a bundle are INFO).
_INFO_MARK = " NCCL INFO "
_INFO_PREFIX = re.compile(
    r"(?:\[(?P<ts>(?=[^\]]*?[^\]\d\s-])[^\]]*+)\]\s?)?(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+)(?: \[(?P<dev>-?\d+)\])?")

# Messages worth the grammar (everything else is a plain nccl.info): Init lines, network
# selection, the version banner.  Cheap to test, so the grammar sees only these.
_GRAMMAR_WORTHY = re.compile(
    r"(?:\[Rank \d+\] )?(?:nccl\w+ )?comm 0x[0-9a-fA-F]+ rank \d+ nranks "
    r"|Using network |(?:NET/(?!Plugin)[\w-]+|Bootstrap) ?: ?Using |NCCL version ")
_ABORT = re.compile(r"\bAbort\b")
_COMM = re.compile(r"\bcomm (0x[0-9a-fA-F]+)")
_STAMP_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")
_SHAPE = re.compile(r"0x[0-9a-fA-F]+|\d+")  # numbers and hex ids differ between ranks, the message does not
_MAX_LISTED = 64  # pids kept on a collapsed INFO event


@dataclass(frozen=True, slots=True)
class _About:
    """What an INFO message is, as far as the message alone says (every rank prints the
    same messages: each is looked at once; see _about)."""

    chain: bool           # a `file:line -> rc` link
    channel: bool         # starts with `Channel ` (a connection or a ring)
    grammar: bool         # worth the grammar (Init, network, version)
    abort: bool
    plain: str | None     # the shape of an unstructured message (None for a structured one)
    shape: str            # numbers and hex ids masked


_ABOUT: dict[str, _About] = {}
_ABOUT_CAP = 4096
# (message, dev) of an Init or network line -> (kind, rank, fields) of the event its first copy
# made: every rank prints these lines alike, and its copy's event differs only in where it was
# printed (line, host, pid, tid, stamp), so the message is parsed and its fields kept once.
_MADE: dict[tuple, tuple] = {}
_MADE_CAP = 4096


def _about(msg: str) -> _About:
    got = _ABOUT.get(msg)
    if got is not None:
        return got
    if len(_ABOUT) >= _ABOUT_CAP:
        _ABOUT.clear()
    channel, grammar = msg.startswith("Channel "), _GRAMMAR_WORTHY.match(msg) is not None
    abort = "Abort" in msg and _ABORT.search(msg) is not None
    shape = _SHAPE.sub("#", msg)
    got = _ABOUT[msg] = _About(fast_chain(msg) is not None, channel, grammar, abort,
                               None if " -> " in msg or channel or grammar or abort else shape, shape)
    return got


def plain_shape(msg: str) -> str | None:
    """The shape of an unstructured INFO message (one NcclParser._plain_info keeps), or None."""
    about = _about(msg)
    if about.chain or about.grammar or about.channel or about.abort:
        return None
    return about.plain


@functools.lru_cache(maxsize=1024)
def _stamp(ts: str | None) -> Stamp | None:
    """The 2.26+ strftime prefix (default `%F %T`, local time, no zone)."""
    if not ts:
        return None
    ts = ts.strip()
    for fmt in _STAMP_FORMATS:
        try:
            wall = datetime.strptime(ts, fmt)
        except ValueError:
            continue
        frac = ts.rpartition(".")[2] if "." in ts else ""
        return Stamp(ClockKind.WALL_LOCAL, wall=wall, resolution_s=10.0 ** -len(frac) if frac else 1.0)
    return None


def info_parts(text: str, thread: tuple) -> tuple[str | None, str] | None:
    """(dev, msg) of `host:pid:tid [dev] NCCL INFO msg` printed by `thread` ((host, pid, tid)
    strings) without a time, or None for any other line."""
    head, mark, msg = text.partition(_INFO_MARK)
    m = _INFO_PREFIX.fullmatch(head) if mark else None
    if m is None or m["ts"] is not None or (m["host"], m["pid"], m["tid"]) != tuple(thread):
        return None
    return m["dev"], msg


def _said_key(host, pid, tid, dev, msg) -> tuple:
    """The key of a distinct Init/network/version line of a thread, its strings kept once:
    every rank prints these lines and a big bundle holds one key per line until its end
    (issue 17: 25 MiB of the dense bundle's peak)."""
    return (host, _intern(pid) if pid else pid, _intern(tid) if tid else tid, _intern(dev) if dev else dev,
            _intern(msg) if len(msg) <= 512 else msg)


@dataclass
class _Chain:
    """An error return code unwinding on one thread: `file:line -> rc` lines."""

    first: Line
    rc: int
    where: dict
    links: list[str] = field(default_factory=list)
    funcs: list[str] = field(default_factory=list)
    thread: str | None = None
    origin: dict | None = None
    stamp: Stamp | None = None


class NcclParser(LineParser):
    name = "nccl"
    order = 10
    prefilter = PREFILTER

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        self._chains: dict[tuple, _Chain] = {}
        self._last_warn: dict[tuple, dict] = {}  # per thread: the WARN when it is the thread's latest line
        self._connections: dict[tuple, dict] = {}  # connection -> data of its nccl.transport event
        self._said: dict[tuple, dict] = {}  # distinct Init/network/version line -> its event's data
        # What a repeat of the line just fed would only add to (its event's data), if that is
        # all a repeat does; None otherwise.  Read by postmortem/scan.py.
        self.repeat_target: dict | None = None
        self._rings: set[tuple] = set()
        self._plain: dict[str, dict] = {}  # message shape -> data of its first nccl.info event
        # Folding as read (fold.AsRead, set by postmortem/scan.py): a plain event whose shape an
        # earlier file leads is deferred, (number, place, where, shape, data), not made; `place`
        # holds the Line's fields (Line(*place): no Line is built for a folded copy).
        self.early = None
        self.deferred: list[tuple] = []

    def feed(self, line: Line) -> bool:
        self.repeat_target = None
        head, mark, msg = line.text.partition(_INFO_MARK)
        m = _INFO_PREFIX.fullmatch(head) if mark else None
        if m is not None:  # fast path: `host:pid:tid [dev] NCCL INFO msg`
            return self._info_line(line, m["host"], m["pid"], m["tid"], m["dev"], m["ts"], msg)
        m = _HEADER.match(line.text)
        if m is None:
            return self._bare(line)
        if m["legacy"] and not m["host"]:
            return False  # `INFO ...` / `WARN ...` with no NCCL token is only NCCL behind a host prefix
        level = m["level"] or m["legacy"]
        msg = m["msg"] or ""
        host = m["host"] or line.host
        if level == "INFO":
            return self._info_line(line, host, m["pid"], m["tid"], m["dev"], m["ts"], msg)
        key = (host, m["pid"], m["tid"])
        ts, pid, tid = m["ts"], m["pid"], m["tid"]
        where = {"host": host, "pid": int(pid) if pid else None, "tid": int(tid) if tid else None,
                 "stamp": (_stamp(ts) if ts else None) or line.stamp}
        dev = int(m["dev"]) if m["dev"] else None
        if level == "WARN":
            self._end_chain(key)
            self._warn(line, m, msg, where, dev, key)
            return True
        self._end_chain(key)
        self._last_warn.pop(key, None)
        if level == "TRACE" or level == "CALL":
            ms = float(m["ms"]) if m["ms"] else None
            func = m["tfunc"]
            stamp = where["stamp"]
            if stamp is None and ms is not None:
                stamp = Stamp(ClockKind.RELATIVE, seconds=ms / 1000.0, resolution_s=1e-6)
            self.sink.event(line, "nccl.trace", Severity.DEBUG, stamp=stamp, host=where["host"],
                            pid=where["pid"], tid=where["tid"], ms=ms, func=func, level=level,
                            msg=msg, dev=dev)
        else:  # ABORT has no format of its own; keep it as a plain line
            self.sink.event(line, "nccl.info", Severity.INFO, **where, level=level, msg=msg, dev=dev)
        return True

    def feed_info(self, line: Line, thread: tuple, parts: tuple) -> bool:
        """feed() of an INFO line whose prefix the caller has read: `thread` its (host, pid,
        tid) strings, `parts` what info_parts gives (scan.py reads them once per line shape)."""
        self.repeat_target = None
        return self._info_line(line, thread[0], thread[1], thread[2], parts[0], None, parts[1])

    def _info_line(self, line: Line, host: str | None, pid: str | None, tid: str | None, dev_s: str | None,
                   ts: str | None, msg: str) -> bool:
        """An INFO line, from its prefix's parts (strings as printed, None when absent)."""
        key = (host, pid, tid)
        about = _about(msg)
        if self._repeat_of_plain_info(key, pid, about.plain) \
                or about.channel and self._repeat_of_channel(key, pid, host, msg):
            return True
        where = {"host": host, "pid": int(pid) if pid else None, "tid": int(tid) if tid else None,
                 "stamp": (_stamp(ts) if ts else None) or line.stamp}
        dev = int(dev_s) if dev_s else None
        if about.chain:
            chain = fast_chain(msg)
            if chain is not None:
                self._link(line, key, chain, where)
                return True
        self._end_chain(key)
        self._last_warn.pop(key, None)
        if about.grammar:
            self._said_once(line, _said_key(host, pid, tid, dev_s, msg), msg, where, dev)
        else:
            self._info(line, msg, where, dev)
        return True

    def finish(self) -> None:
        for key in list(self._chains):
            self._end_chain(key)

    def _repeat_of_channel(self, key: tuple, pid: str | None, host: str | None, msg: str) -> bool:
        """Another channel line of a connection already seen: one more in its counts,
        without building the event's fields (most lines of a big INFO bundle)."""
        if not self._connections:
            return False
        channel = fast_channel(msg)
        if channel is None:
            return False
        seen = self._connections.get((host, int(pid) if pid else None, channel["src"], channel["peer"],
                                      channel["via"], channel["direction"]))
        if seen is None:
            return False
        self._end_chain(key)
        self._last_warn.pop(key, None)
        self._add_channel(seen, channel["channel"])
        self.repeat_target = seen
        return True

    @staticmethod
    def _add_channel(data: dict, channel: int) -> None:
        channels = data["channels"]
        if channel not in channels:
            bisect.insort(channels, channel)
        data["channel_lines"] += 1

    # -- one message kind each ---------------------------------------------------------

    def _info(self, line: Line, msg: str, where: dict, dev: int | None) -> None:
        about = _about(msg)
        if about.channel:
            channel = fast_channel(msg)
            if channel is not None:
                self._transport(line, channel, where, dev)
                return
            if (where["host"], where["pid"]) in self._rings and is_ring(msg):
                return  # another channel's ring of a process whose first is kept (_ring): its ranks unread
            ring = fast_ring(msg)
            if ring is not None:
                self._ring(line, ring, where, dev, msg)
                return
        parsed = parse_message(msg) if about.grammar else None
        if parsed is None:
            if about.abort:
                comm = _COMM.search(msg)
                self.sink.event(line, "nccl.abort", Severity.ERROR, **where, dev=dev,
                                comm=comm.group(1) if comm else None, msg=msg)
            else:
                self._plain_info(line, msg, where, dev, about.shape)
            return
        shape, data = parsed
        if shape == "init":
            # the communicator rank goes to Event.rank (Sink.event takes `rank` as a field)
            data.pop("rank_tag", None)
            emit(self.sink, line, "nccl.init", Severity.INFO, **where, rank=data["rank"], data={**data, "dev": dev})
        elif shape == "network":
            self.sink.event(line, "nccl.network", Severity.INFO, **where, dev=dev, **data)
        elif shape == "version":
            self._version(line, data, where)
        elif shape == "channel":  # the fast path missed an odd spacing
            self._transport(line, data, where, dev)
        else:
            self._plain_info(line, msg, where, dev)

    def _said_once(self, line: Line, said: tuple, msg: str, where: dict, dev: int | None) -> None:
        """Init, network and version lines: one event per distinct line of a thread; the
        same thread printing the very same line again adds to the event's `count`."""
        seen = self._said.get(said)
        if seen is not None:
            seen["count"] += 1
            self.repeat_target = seen
            return
        made_as = _MADE.get((msg, dev))
        if made_as is not None:  # another thread's (rank's) copy: its event made again from the first's fields
            kind, rank, fields = made_as
            data = {key: value.copy() if type(value) is list else value for key, value in fields.items()}
            self.sink.made_again(line, kind, where["stamp"], where["host"], where["pid"], where["tid"], rank, data)
        else:
            before = len(self.sink.events)
            self._info(line, msg, where, dev)
            made = self.sink.events[before:]
            if len(made) != 1 or made[0].kind not in ("nccl.init", "nccl.network", "nccl.version"):
                return
            data = made[0].data  # type: ignore[assignment]
            if made[0].kind != "nccl.version":  # (a version line also makes a fact: always the general path)
                if len(_MADE) >= _MADE_CAP:
                    _MADE.clear()
                _MADE[(msg, dev)] = (made[0].kind, data.get("rank") if made[0].kind == "nccl.init" else None,
                                     {key: value.copy() if type(value) is list else value for key, value in data.items()})
        data["count"] = 1
        self._said[said] = data
        self.repeat_target = data

    def _repeat_of_plain_info(self, key: tuple, pid: str | None, shape: str | None) -> bool:
        """The hot path of a big INFO bundle: another rank repeating an unstructured INFO
        line already seen (`shape`: _About.plain).  Counted without building anything
        (see _plain_info)."""
        if not self._plain or shape is None:
            return False
        seen = self._plain.get(shape)
        if seen is None:
            return False
        self._end_chain(key)
        self._last_warn.pop(key, None)
        seen["count"] += 1
        self.repeat_target = seen
        if pid and len(seen["pids"]) < _MAX_LISTED:
            number = int(pid)
            if number not in seen["pids"]:
                seen["pids"].append(number)
        return True

    def _plain_info(self, line: Line, msg: str, where: dict, dev: int | None, shape: str | None = None) -> None:
        """Unstructured INFO lines (`Setting affinity ...`, `NET/Plugin ...`) say the same
        thing on every rank: the first line of each shape becomes an event, and the
        ranks that repeat it only add to its `count` and `pids` (a 512-rank bundle has
        millions of them; the timeline would collapse them anyway)."""
        shape = shape if shape is not None else _about(msg).shape
        seen = self._plain.get(shape)
        if seen is not None:
            seen["count"] += 1
            self.repeat_target = seen
            if where["pid"] is not None and len(seen["pids"]) < _MAX_LISTED and where["pid"] not in seen["pids"]:
                seen["pids"].append(where["pid"])
            return
        pids = [where["pid"]] if where["pid"] is not None else []
        early = self.early
        if early is not None and where["stamp"] is None and line.rank is None and early.leader(shape, line.path):
            data = {"msg": msg, "dev": dev, "count": 1, "pids": pids}  # what the event's data would be
            self.deferred.append((next(self.sink.numbering), (line.path, line.no, line.text, line.raw, line.host,
                                                              line.rank, line.stamp), where, shape, data))
            self._plain[shape] = self.repeat_target = data
            return
        ev = self.sink.event(line, "nccl.info", Severity.INFO, **where, msg=msg, dev=dev, count=1, pids=pids)
        self._plain[shape] = ev.data  # type: ignore[assignment]
        self.repeat_target = ev.data

    def fold_copy(self, path: str, no: int, text: str, host_of_file: str | None, thread: tuple,
                  parts: tuple | None = None) -> bool:
        """What `feed` does with Line(path, no, text, text, host_of_file) (no rank, no stamp from a
        wrapper) when that is deferring a plain INFO copy (see _plain_info), done without the
        general path and without building the Line, or False (nothing done) when it would do
        anything else.  `thread`: the (host, pid, tid) strings of the line's `host:pid:tid`
        prefix; `parts`: info_parts(text, thread) when the caller has it (scan.py)."""
        early = self.early
        if early is None or self._chains or self._last_warn or text[:1] == "[":
            return False
        if parts is None:
            parts = info_parts(text, thread)
            if parts is None:
                return False
        host, pid, tid = thread
        dev_s, msg = parts
        dev = int(dev_s) if dev_s else None
        about = _about(msg)
        shape = about.plain
        if shape is None or about.chain or about.grammar or about.channel or about.abort or shape in self._plain \
                or not early.leader(shape, path):
            return False
        where = {"host": host, "pid": int(pid), "tid": int(tid), "stamp": None}
        data = {"msg": msg, "dev": dev, "count": 1, "pids": [where["pid"]]}
        self.deferred.append((next(self.sink.numbering), (path, no, text, text, host_of_file, None, None), where,
                              shape, data))
        self._plain[shape] = self.repeat_target = data
        return True

    def said_copy(self, line: Line, thread: tuple, parts: tuple) -> bool:
        """What feed_info(line, thread, parts) does with another thread's (rank's) copy of an Init or
        network line whose first copy left its fields (_MADE), done without the general path; False
        (nothing done) for any other line.  scan.py calls it for lines without a time or wrapper."""
        if self._chains or self._last_warn:
            return False
        dev_s, msg = parts
        dev = int(dev_s) if dev_s else None
        made_as = _MADE.get((msg, dev))
        if made_as is None:  # (only a message _said_once parsed is there: no chain link, no channel)
            return False
        host, pid, tid = thread
        said = _said_key(host, pid, tid, dev_s, msg)
        seen = self._said.get(said)
        if seen is not None:
            seen["count"] += 1
            self.repeat_target = seen
            return True
        kind, rank, fields = made_as
        data = {key: value.copy() if type(value) is list else value for key, value in fields.items()}
        self.sink.made_again(line, kind, line.stamp, host, int(pid) if pid else None, int(tid) if tid else None,
                             rank, data)
        data["count"] = 1
        self._said[said] = self.repeat_target = data
        return True

    def materialize(self) -> None:
        """The deferred plain events made after all (their file has a printed time: fold.AsRead),
        each with the number it drew, at its place in reading order."""
        sink, deferred, self.deferred = self.sink, self.deferred, []
        numbering = sink.numbering
        for seq, place, where, _shape, data in deferred:
            line = Line(*place)
            sink.numbering = iter((seq,))
            ev = sink.event(line, "nccl.info", Severity.INFO, **where, msg=data["msg"], dev=data["dev"],
                            count=data["count"], pids=data["pids"])
            sink.events.pop()
            at = len(sink.events)
            while at and sink.events[at - 1].seq > ev.seq:
                at -= 1
            sink.events.insert(at, ev)
        sink.numbering = numbering

    def _transport(self, line: Line, channel: dict, where: dict, dev: int | None) -> None:
        """One event per distinct connection of a process; its `channels` list grows.

        A rank prints one line per channel (24-32 of them) per peer and communicator:
        these lines are most of a big INFO bundle and say the same thing, so the
        repeats are claimed without an event of their own.  `channels` holds each
        channel number once, in order; `channel_lines` counts the lines.
        """
        key = (where["host"], where["pid"], channel["src"], channel["peer"], channel["via"], channel["direction"])
        seen = self._connections.get(key)
        if seen is None:
            ev = self.sink.event(line, "nccl.transport", Severity.INFO, **where, dev=dev,
                                 channels=[channel["channel"]], channel_lines=1, **channel)
            self._connections[key] = ev.data  # type: ignore[assignment]
            seen = ev.data
        else:
            self._add_channel(seen, channel["channel"])
        self.repeat_target = seen

    def _ring(self, line: Line, ring: dict, where: dict, dev: int | None, msg: str) -> None:
        """Ring topology (rank 0 prints one line per channel): keep the first of each process."""
        key = (where["host"], where["pid"])
        if key in self._rings:
            return
        self._rings.add(key)
        self.sink.event(line, "nccl.info", Severity.INFO, **where, msg=msg, dev=dev, **ring)

    def _warn(self, line: Line, m: re.Match, msg: str, where: dict, dev: int | None, key: tuple) -> None:
        data = {"msg": msg, "file": m["file"], "line": int(m["line"]) if m["line"] else None,
                "func": m["func"], "result": result_name(msg) if not msg.startswith("Cuda failure") else None,
                "dev": dev}
        if msg.startswith("Cuda failure"):
            data["cuda_error"] = msg.split("'", 2)[1] if msg.count("'") >= 2 else msg
        emit(self.sink, line, "nccl.warn", Severity.WARNING, **where, data=data)
        self._last_warn[key] = data

    def _version(self, line: Line, data: dict, where: dict) -> None:
        text = data["version"] + (f"+cuda{data['cuda']}" if data["cuda"] else "")
        self.sink.event(line, "nccl.version", Severity.INFO, **where, **data)
        self.sink.fact(line, "nccl.version", data["version"], text=text, host=where["host"])

    def _bare(self, line: Line) -> bool:
        """Lines printed without the NCCL prefix: version banner, nccl-tests output."""
        text = line.text.strip()
        if not text.startswith(("NCCL version", "NCCL failure", "Test NCCL failure", "Cuda failure",
                                "CUDA failure", "#")):
            return False
        parsed = parse_message(text)
        if parsed is None:
            return False
        shape, data = parsed
        where = {"host": line.host, "pid": None, "tid": None, "stamp": line.stamp}
        if shape == "version":
            self._version(line, data, where)
        elif shape == "test_failure":
            emit(self.sink, line, "nccl.test_failure", Severity.ERROR, **where,
                 data={**data, "result": result_name(data["msg"])})
        elif shape == "device_row":
            emit(self.sink, line, "nccl.test_device", Severity.INFO,
                 **{**where, "host": data["host"], "pid": data["pid"]}, rank=data["rank"], data=data)
        else:
            return False
        return True

    # -- error chains --------------------------------------------------------------------

    def _link(self, line: Line, key: tuple, link: dict, where: dict) -> None:
        chain = self._chains.get(key)
        if chain is not None and chain.rc != link["rc"]:
            self._end_chain(key)  # a different code is a different error
            chain = None
        if chain is None:
            chain = self._chains[key] = _Chain(first=line, rc=link["rc"], where=where,
                                               origin=self._last_warn.pop(key, None))
        chain.links.append(f"{link['file']}:{link['line']}")
        if link["func"]:
            chain.funcs.append(link["func"])
        if link["thread"]:
            chain.thread = link["thread"]
            self._end_chain(key)  # the thread suffix marks the top of the unwinding

    def _end_chain(self, key: tuple) -> None:
        chain = self._chains.pop(key, None)
        if chain is None:
            return
        origin = chain.origin
        data = {"rc": chain.rc, "result": rc_name(chain.rc), "chain": chain.links, "thread": chain.thread,
                "origin": f"{origin['file']}:{origin['line']}" if origin and origin["file"] else None,
                "origin_msg": origin["msg"] if origin else None}
        if chain.funcs:
            data["funcs"] = chain.funcs
        text = f"NCCL error {chain.rc} ({data['result']}) via {' <- '.join(reversed(chain.links))}"
        self.sink.event(chain.first, "nccl.error_chain", Severity.ERROR, text=text, **chain.where, **data)
