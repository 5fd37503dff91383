"""`py-spy dump` output (py-spy 0.3 - 0.4, with and without --native): one Stack per thread.

    Process 11645: /usr/bin/python3 train.py
    Python v3.11.7 (/usr/bin/python3.11)

    Thread 11645 (idle): "MainThread"
        clock_nanosleep (libc.so.6)            <- native frame (--native): function (module)
        load_batch (train.py:3)                <- Python frame: function (file:line)
        <module> (train.py:7)
        0x7f3aee04524a (libc.so.6)             <- native frame without a symbol
    Thread 11729 (active+gil): "prefetch"
        ...

Frames are innermost first.  `--locals` adds `Arguments:`/`Locals:` blocks under a frame,
indented deeper; they are skipped.  py-spy names no rank: the launcher prefix of the line,
or the file's name (`rank3.txt`), says which rank it was (postmortem.stacks.rank_of).
"""
from __future__ import annotations

import re

from postmortem.model import Frame, Severity, Stack
from postmortem.parsers.base import Line, LineParser

_PROCESS = re.compile(r"^Process (?P<pid>\d+): (?P<cmd>.*)$")
_PYTHON = re.compile(r"^Python v(?P<version>\d+\.\d+[\w.+]*)(?: \((?P<exe>.*)\))?$")
_THREAD = re.compile(r"^Thread (?P<tid>\d+|0x[0-9A-Fa-f]+) \((?P<status>[\w+ -]+)\)(?:: \"(?P<name>.*)\")?\s*$")
_FRAME = re.compile(r"^(?P<indent>\s{2,8})(?P<func>\S(?:.*\S)?) \((?P<where>[^()]*(?:\([^()]*\)[^()]*)*)\)\s*$")
_LOCALS = re.compile(r"^\s{6,}(?:Arguments|Locals):?\s*$|^\s{8,}\S")
_PY_FILE = re.compile(r"(?:\.pyw?|<frozen [^>]+>|<string>|<stdin>)$")
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")

PREFILTER = re.compile(r"^(?:Process \d+: |Python v\d+\.\d+|Thread (?:\d+|0x[0-9A-Fa-f]+) \([\w+ -]+\))")


class PySpyParser(LineParser):
    name = "py-spy"
    order = 60
    prefilter = PREFILTER

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        self._pid: int | None = None
        self._cmd = ""
        self._thread: tuple[Line, re.Match] | None = None
        self._frames: list[Frame] = []
        self._in_dump = False

    @property
    def busy(self) -> bool:
        return self._in_dump

    def feed(self, line: Line) -> bool:
        text = line.text.rstrip()
        if m := _PROCESS.match(text):
            self._end_thread()
            self._pid, self._cmd, self._in_dump = int(m.group("pid")), m.group("cmd"), True
            self.sink.event(line, "pyspy.process", Severity.INFO, pid=self._pid, cmd=self._cmd[:300])
            return True
        if _PYTHON.match(text):
            self._in_dump = True
            return True
        if m := _THREAD.match(text):
            self._end_thread()
            self._in_dump = True
            self._thread = (line, m)
            return True
        if not self._in_dump:
            return False
        if not text:
            if self._thread is None:   # the blank line after the header
                return True
            self._end_thread()
            self._in_dump = False
            return True
        if self._thread is not None:
            if m := _FRAME.match(text):
                if len(m.group("indent")) <= 4:
                    self._frames.append(_frame(m.group("func"), m.group("where")))
                    return True
            if _LOCALS.match(text):
                return True
        self._end_thread()
        self._in_dump = False
        return False

    def finish(self) -> None:
        self._end_thread()

    def _end_thread(self) -> None:
        if self._thread is None:
            return
        line, m = self._thread
        self._thread = None
        frames, self._frames = tuple(self._frames), []
        tid_text = m.group("tid")
        tid = int(tid_text, 16) if tid_text.startswith("0x") else int(tid_text)
        name = m.group("name")
        self.sink.stack(Stack(
            frames=frames, origin="py-spy", ref=line.ref(), thread=name or tid_text, crashed=False,
            host=line.host, pid=self._pid, tid=tid, rank=line.rank,
            title=f"py-spy dump of pid {self._pid}" if self._pid else "py-spy dump",
            data={"status": m.group("status"), "name": name or "", "cmd": self._cmd[:300]}))


def _frame(func: str, where: str) -> Frame:
    """`load_batch (train.py:3)` is Python; `clock_nanosleep (libc.so.6)` and
    `0x7f3a... (libc.so.6)` are native; a native frame with debug info reads `f (x.cc:12)`."""
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit():
        path, line = where, ""
    if _PY_FILE.search(path):
        return Frame(function=func, file=path, line=int(line) if line else None, language="python")
    if _ADDRESS.match(func):
        return Frame(function=None, module=path or None, address=int(func, 16), language="native")
    if line:
        return Frame(function=func, file=path, line=int(line), language="native")
    return Frame(function=func, module=path or None, language="native")
