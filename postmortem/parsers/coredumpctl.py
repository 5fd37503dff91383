"""systemd's `coredumpctl info` and `coredumpctl list` (written by `postmortem collect` as
coredumpctl_info.txt / coredumpctl_list.txt; docs/formats.md, coredumpctl).

`info` prints one record per core: right-aligned `Key: value` lines (`PID: 131409 (QK4.bin)`,
`Signal: 11 (SEGV)`, `Timestamp: Wed 2026-04-15 15:05:10 CDT (6s ago)`, `Command Line:`,
`Executable:`, `Storage: ... (present)`), then `Message:` whose indented continuation holds
systemd-coredump's `Stack trace of thread N:` blocks of frames
`#0  0x00007f114877dc6b pw_stream_dequeue_buffer (libpipewire-0.3.so.0 + 0x86c6b)` (older
systemd: `(libc.so.6)`, no offset; `n/a` when no symbol).  One `coredumpctl.signal` event per
record (a death), one Stack per thread; systemd-coredump prints the thread that received the
signal first, so that stack is marked as crashed.
`list` prints a table `TIME PID UID GID SIG COREFILE EXE [SIZE]` (SIG a number, or a name
such as `SIGSEGV` in newer systemd): one `coredumpctl.listed`
event per row (context: the same death is read from `info`, not counted twice).

A regex parser, not a grammar: the record is keyed `Key: value` text whose values (command
lines, paths) are free text, split here with one pattern per line shape.
The zone is printed as an abbreviation (`CEST`, `CDT`, `MSK`), which is ambiguous (CST): only
UTC/GMT give a zoned WALL stamp; any other zone gives WALL_LOCAL with `zone` kept as printed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from postmortem import signals
from postmortem.model import ClockKind, Frame, Severity, Stack, Stamp
from postmortem.parsers.base import Line, LineParser, emit

_RECORD_START = r"^\s*PID: \d+ \([^)]*\)\s*$"
_LIST_HEADER = r"^TIME\s+PID\s+UID\s+GID\s+SIG\s+COREFILE\s+EXE\b"
_WHEN = r"(?:\w{3} )?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:[A-Za-z][\w+-]*|[+-]\d{4})"
_LIST_ROW = re.compile(
    rf"^(?P<when>{_WHEN})\s+(?P<pid>\d+)\s+(?P<uid>\d+)\s+(?P<gid>\d+)\s+(?P<sig>\d+|SIG[A-Z0-9+-]+|-)\s+"
    r"(?P<corefile>present|missing|none|error|truncated|inaccessible|journal|-)\s+(?P<exe>\S.*?)"
    r"(?:\s+(?P<size>\d+(?:\.\d+)?[BKMGT]|-|n/a))?\s*$")

PREFILTER = re.compile(rf"{_RECORD_START}|{_LIST_HEADER}|^{_WHEN}\s+\d+\s+\d+\s+\d+\s+(?:\d+|SIG[A-Z0-9+-]+|-)\s+\w")

_FIELD = re.compile(r"^\s*(?P<key>[A-Z][A-Za-z ]*?): (?P<value>.*?)\s*$")
_CONTINUATION = re.compile(r"^\s{8,}\S|^\s*$")
_THREAD = re.compile(r"^\s+Stack trace of thread (?P<tid>\d+):\s*$")
_FRAME = re.compile(
    r"^\s+#(?P<no>\d+)\s+0x(?P<addr>[0-9a-fA-F]+) (?P<func>.+?) "
    r"\((?P<lib>[^()]+?)(?: \+ 0x(?P<off>[0-9a-fA-F]+))?\)\s*$")
_NUM_NAME = re.compile(r"^(?P<num>\d+) \((?P<name>[^)]*)\)$")
_TIMESTAMP = re.compile(
    r"^(?:\w{3} )?(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))? "
    r"(?P<zone>[A-Za-z][\w+-]*|[+-]\d{4})(?: \(.*\))?$")
_STORAGE_STATE = re.compile(r"\((?P<state>[a-z ]+)\)$")
_UTC = ("UTC", "GMT", "Z")


def parse_time(text: str) -> tuple[Stamp | None, str | None]:
    """The stamp of `Wed 2026-04-15 15:05:10 CDT (6s ago)` and the zone as printed."""
    m = _TIMESTAMP.match(text.strip())
    if not m:
        return None, None
    frac = m["frac"] or ""
    try:
        wall = datetime.strptime(f"{m['date']} {m['time']}", "%Y-%m-%d %H:%M:%S")
    except ValueError:   # month 54, second 61: not a time, the line keeps no stamp
        return None, None
    if frac:
        wall = wall.replace(microsecond=int(frac[:6].ljust(6, "0")))
    resolution = 10.0 ** -len(frac[:6]) if frac else 1.0
    zone = m["zone"]
    if zone in _UTC:
        return Stamp(ClockKind.WALL, wall=wall.replace(tzinfo=timezone.utc), resolution_s=resolution), zone
    if zone[0] in "+-":
        try:
            offset = datetime.strptime(zone, "%z").tzinfo
        except ValueError:   # an offset past +-24h
            return Stamp(ClockKind.WALL_LOCAL, wall=wall, resolution_s=resolution), zone
        return Stamp(ClockKind.WALL, wall=wall.replace(tzinfo=offset), resolution_s=resolution), zone
    return Stamp(ClockKind.WALL_LOCAL, wall=wall, resolution_s=resolution), zone


def _frame(m: re.Match) -> Frame:
    func = m["func"]
    return Frame(function=None if func in ("n/a", "??") else func, module=m["lib"],
                 address=int(m["addr"], 16), offset=int(m["off"], 16) if m["off"] else None)


@dataclass
class _Thread:
    line: Line
    tid: int
    frames: list[Frame] = field(default_factory=list)


@dataclass
class _Record:
    fields: dict[str, str] = field(default_factory=dict)
    lines: dict[str, Line] = field(default_factory=dict)
    threads: list[_Thread] = field(default_factory=list)


class CoredumpctlParser(LineParser):
    name = "coredumpctl"
    prefilter = PREFILTER

    def __init__(self, path, sink):
        super().__init__(path, sink)
        self.record: _Record | None = None
        self.in_message = False

    @property
    def busy(self) -> bool:
        return self.record is not None

    def feed(self, line: Line) -> bool:
        text = line.text
        if self.record is not None:
            if self._feed_record(line, text):
                return True
            self._flush()
        if re.match(_RECORD_START, text):
            self.record = _Record()
            self.in_message = False
            return self._feed_record(line, text)
        if re.match(_LIST_HEADER, text):
            return True
        m = _LIST_ROW.match(text)
        if m:
            self._listed(line, m)
            return True
        return False

    def finish(self) -> None:
        self._flush()

    def _feed_record(self, line: Line, text: str) -> bool:
        rec = self.record
        if "PID" in rec.fields and re.match(_RECORD_START, text):
            return False  # the next core's record
        if self.in_message:
            m = _THREAD.match(text)
            if m:
                rec.threads.append(_Thread(line, int(m["tid"])))
                return True
            m = _FRAME.match(text)
            if m and rec.threads:
                rec.threads[-1].frames.append(_frame(m))
                return True
            if _CONTINUATION.match(text) and text.strip():
                return True   # Module ... lines, frames we do not read, message text
            if not text.strip():
                return True
        m = _FIELD.match(text)
        if m and not (m["key"] == "PID" and "PID" in rec.fields):
            key = m["key"]
            rec.fields[key], rec.lines[key] = m["value"], line
            self.in_message = key == "Message"
            return True
        if _CONTINUATION.match(text) and text.strip() and rec.fields:
            return True   # a wrapped value (Command Line, Environment)
        return False

    def _flush(self) -> None:
        rec, self.record, self.in_message = self.record, None, False
        if rec is None or "PID" not in rec.fields:
            return
        f = rec.fields
        pid_m = _NUM_NAME.match(f["PID"])
        pid = int(pid_m["num"]) if pid_m else None
        data: dict = {"pid": pid, "comm": pid_m["name"] if pid_m else None}
        sig_m = _NUM_NAME.match(f.get("Signal", ""))
        if sig_m:
            data["signo"] = int(sig_m["num"])
            data["signal"] = signals.name_of(sig_m["name"]) or signals.name_of(int(sig_m["num"]))
        uid_m = _NUM_NAME.match(f.get("UID", "")) or re.match(r"^(?P<num>\d+)$", f.get("UID", ""))
        if uid_m:
            data["uid"] = int(uid_m["num"])
        stamp, zone = parse_time(f.get("Timestamp", ""))
        if zone:
            data["zone"] = zone
            data["timestamp"] = f["Timestamp"]
        if "Command Line" in f:
            data["command"] = f["Command Line"]
        if "Executable" in f:
            data["exe"] = f["Executable"]
        if "Storage" in f:
            data["storage"] = f["Storage"]
            state = _STORAGE_STATE.search(f["Storage"])
            if state:
                data["corefile"] = state["state"]
        if "Hostname" in f:
            data["hostname"] = f["Hostname"]
        data["threads"] = len(rec.threads)
        at = rec.lines.get("Signal") or rec.lines["PID"]
        if "signo" in data:
            emit(self.sink, at, "coredumpctl.signal", Severity.ERROR, stamp=stamp, pid=pid,
                 tid=rec.threads[0].tid if rec.threads else None,
                 text=f"core of {data['comm']} (pid {pid}): signal {f['Signal']}", data=data)
        else:
            self.sink.problems.append(f"{self.path}:{rec.lines['PID'].no}: coredumpctl record without a "
                                      "Signal: line; no death recorded for it")
        title = f"Signal: {f['Signal']}" if "Signal" in f else ""
        for i, t in enumerate(rec.threads):
            self.sink.stack(Stack(
                frames=tuple(t.frames), origin="coredumpctl", ref=t.line.ref(), thread=f"thread {t.tid}",
                crashed=i == 0, host=t.line.host, pid=pid, tid=t.tid, rank=t.line.rank, title=title,
                data={k: data[k] for k in ("command", "exe") if k in data}))

    def _listed(self, line: Line, m: re.Match) -> None:
        stamp, zone = parse_time(m["when"])
        data = {"pid": int(m["pid"]), "uid": int(m["uid"]), "gid": int(m["gid"]),
                "corefile": m["corefile"], "exe": m["exe"], "time": m["when"], "zone": zone}
        if m["sig"].isdigit():  # older systemd prints the number, newer the name
            data["signo"], data["signal"] = int(m["sig"]), signals.name_of(int(m["sig"]))
        elif m["sig"] != "-":
            data["signal"] = m["sig"]
            if m["sig"] in signals.NUMBERS:
                data["signo"] = signals.NUMBERS[m["sig"]]
        if m["size"]:
            data["size"] = m["size"]
        emit(self.sink, line, "coredumpctl.listed", Severity.INFO, stamp=stamp, pid=int(m["pid"]), data=data)
