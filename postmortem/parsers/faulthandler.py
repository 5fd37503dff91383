"""Python faulthandler dumps (CPython 3.8 - 3.14): one Stack per thread.

A dump starts with a header (`Fatal Python error: Bus error`, `Timeout (0:00:05)!`) or
directly with a thread header (`faulthandler.register` / `dump_traceback`), lists
every thread as `Thread 0x... (most recent call first):` followed by
`  File "x.py", line 12 in f` frames, and after a fatal signal ends with
`Extension modules: ... (total: N)`.  The faulting thread is `Current thread`.

Dumps are written with write(2) and carry no timestamp or PID, so ranks sharing a
log interleave; a dump is kept open per launcher rank and survives a few foreign
lines between its frames.  Pastes often drop the header: frames alone open a dump.
Each line is parsed by grammars/faulthandler.lark (see docs/formats.d/faulthandler.md).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from lark import Transformer, v_args

from postmortem.model import Frame, Severity, Stack
from postmortem import signals
from postmortem.parsers.base import Line
from postmortem.parsers.blocks import RankBlockParser

# strsignal() texts faulthandler prints for the signals it handles (3.13 hyphenates
# "Floating-point"), and their numbers on Linux.
FATAL_SIGNALS: dict[str, int] = {
    text: signals.NUMBERS[name] for text, name in signals.TEXTS.items()
    if name in ("SIGSEGV", "SIGBUS", "SIGABRT", "SIGFPE", "SIGILL")
}

# Lines that can start or belong to a dump when no dump is open.  Markers (`  ...`,
# `  <no Python frame>`) are only taken inside a dump.
PREFILTER = re.compile(
    r"^\s*(?:Fatal Python error: |Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!"
    r"|(?:Current thread|Thread) 0x[0-9a-fA-F]+ .*most recent call first"
    r"|Stack \(most recent call first\):|File \".*\", line (?:\d+|\?\?\?) in "
    r"|Extension modules: |Current thread's C stack|<Cannot show all threads)")

# Consecutive lines of other output tolerated inside an open dump (another rank's
# line landing between two frames) before the dump is taken as finished.
FOREIGN_LINES_TOLERATED = 3

# No leading \s*: searched in a run of blanks it was quadratic (the names are stripped anyway).
_EXTENSION_TOTAL = re.compile(r"\(total: (\d+)\)\s*$")


@v_args(inline=True)
class _ToTuples(Transformer):
    """Each grammar rule becomes (kind, value) with plain Python values."""

    def start(self, item):
        return item

    def fatal(self, text):
        return ("fatal", str(text))

    def runtime_state(self, text):
        return ("runtime_state", str(text))

    def timeout(self, duration):
        return ("timeout", str(duration))

    def thread_header(self, word, ident, name=None):
        return ("thread", (word.startswith("Current"), str(ident), name))

    def thread_name(self, name):
        return str(name)

    def stack_header(self):
        return ("stack", None)

    def frame(self, path, lineno, func):
        return ("frame", Frame(function=_known(func), file=_known(path),
                               line=int(lineno) if lineno.isdecimal() else None, language="python"))

    def marker(self, text):
        return ("marker", str(text))

    def extension_modules(self, text):
        return ("extensions", str(text))

    def c_stack_header(self):
        return ("c_stack", None)

    def binary_frame(self, path, *rest):
        return ("binary_frame", _binary_frame(str(path)[1:-1], [str(t) for t in rest]))

    def free_threaded(self):
        return ("marker", "<Cannot show all threads while the GIL is disabled>")


_TRANSFORMER = _ToTuples()


def _known(text) -> str | None:
    return None if text == "???" else str(text)


def _binary_frame(path: str, rest: list[str]) -> Frame:
    """`Binary file "<path>", at sym+0x10 [0xaddr]` (3.14 C stack)."""
    address = int(rest[-1], 16)
    function = offset = None
    if len(rest) == 2:
        sym, _, off = rest[0].rpartition("+")
        function = sym or None
        offset = int(off, 16)
    module = None if path == "<unknown>" else path
    return Frame(function=function, module=module, address=address, offset=offset)


@dataclass
class _Thread:
    line: Line                   # header line (or first frame of a headerless paste)
    label: str | None            # pthread id as printed, e.g. 0x00007f59012786c0
    current: bool
    name: str | None = None      # 3.14 thread name
    frames: list[Frame] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    native: bool = False         # a 3.14 C stack block


@dataclass
class _Dump:
    title: str                   # header text, e.g. "Fatal Python error: Bus error"
    fatal: bool                  # after a fatal signal: "Current thread" is the crashed one
    event_index: int             # where its event sits in sink.events (to add extension modules)
    thread: _Thread | None = None
    seen: set[str] = field(default_factory=set)
    foreign: int = 0


class FaulthandlerParser(RankBlockParser[_Dump]):
    """One open dump per launcher rank (`self.blocks`); a rank's dump is open until it ends."""

    name = "faulthandler"
    order = 30
    prefilter = PREFILTER
    grammar_name = "faulthandler"
    transformer = _TRANSFORMER

    def feed(self, line: Line) -> bool:
        text = line.text.strip()
        dump = self.blocks.get(line)
        if not text:
            if dump is None:
                return False
            self._end_thread(dump)  # blank lines separate threads
            return True
        item = self.parse_line(text)
        if item is None:
            if dump is not None:
                dump.foreign += 1
                if dump.foreign > FOREIGN_LINES_TOLERATED:
                    self._close(line.rank)
            return False
        kind, value = item
        handler = getattr(self, f"_on_{kind}")
        return handler(line, dump, value)

    def end(self, dump: _Dump) -> None:
        self._end_thread(dump)

    # -- one method per line kind ------------------------------------------------

    def _on_fatal(self, line: Line, dump, what: str) -> bool:
        signo = FATAL_SIGNALS.get(what)
        if signo is not None:
            self.sink.event(line, "py.fatal_signal", Severity.FATAL, signal=what, signo=signo)
        else:  # Py_FatalError: `Fatal Python error: <func>: <msg>`
            self.sink.event(line, "py.fatal_error", Severity.FATAL, message=what)
        self._open(line, f"Fatal Python error: {what}", fatal=signo is not None)
        return True

    def _on_runtime_state(self, line: Line, dump, state: str) -> bool:
        return dump is not None

    def _on_timeout(self, line: Line, dump, duration: str) -> bool:
        title = f"Timeout ({duration})!"
        self.sink.event(line, "py.dump", Severity.WARNING, reason=title)
        self._open(line, title, fatal=False)
        return True

    def _on_thread(self, line: Line, dump, header) -> bool:
        current, label, name = header
        if dump is None or label in dump.seen:
            dump = self._open_plain(line, "thread dump")
        self._end_thread(dump)
        dump.seen.add(label)
        dump.thread = _Thread(line, label, current, name)
        dump.foreign = 0
        return True

    def _on_stack(self, line: Line, dump, _) -> bool:
        if dump is None:
            dump = self._open_plain(line, "thread dump")
        self._end_thread(dump)
        dump.thread = _Thread(line, None, current=True)
        dump.foreign = 0
        return True

    def _on_frame(self, line: Line, dump, frame: Frame) -> bool:
        if dump is None:
            dump = self._open_plain(line, "no header")
        if dump.thread is None or dump.thread.native:
            self._end_thread(dump)
            dump.thread = _Thread(line, None, current=False)
        dump.thread.frames.append(frame)
        dump.foreign = 0
        return True

    def _on_marker(self, line: Line, dump, marker: str) -> bool:
        if dump is None:
            return False
        if dump.thread is not None:
            dump.thread.notes.append(marker)
        dump.foreign = 0
        return True

    def _on_extensions(self, line: Line, dump, text: str) -> bool:
        if dump is None:
            dump = self._open_plain(line, "no header")
        modules, total = _extension_modules(text)
        ev = self.sink.events[dump.event_index]
        data = dict(ev.data, extension_modules=modules, extension_count=total)
        self.sink.events[dump.event_index] = dataclasses.replace(ev, data=data)
        self._close(line.rank)  # the last line of a fatal dump
        return True

    def _on_c_stack(self, line: Line, dump, _) -> bool:
        if dump is None:
            return False
        current = dump.thread.label if dump.thread else None
        self._end_thread(dump)
        dump.thread = _Thread(line, current, current=True, native=True)
        return True

    def _on_binary_frame(self, line: Line, dump, frame: Frame) -> bool:
        if dump is None or dump.thread is None or not dump.thread.native:
            return False
        dump.thread.frames.append(frame)
        return True

    # -- dumps and threads --------------------------------------------------------

    def _open(self, line: Line, title: str, fatal: bool) -> _Dump:
        """Start a dump whose header event was just emitted."""
        self._close(line.rank)
        dump = _Dump(title, fatal, event_index=len(self.sink.events) - 1)
        self.blocks.put(line, dump)
        return dump

    def _open_plain(self, line: Line, reason: str) -> _Dump:
        self.sink.event(line, "py.dump", Severity.INFO, reason=reason)
        return self._open(line, reason, fatal=False)

    def _end_thread(self, dump: _Dump) -> None:
        t, dump.thread = dump.thread, None
        if t is None or not (t.frames or t.notes):
            return
        data = {"dump": dump.title}
        if t.name:
            data["name"] = t.name
        if t.notes:
            data["notes"] = tuple(t.notes)
        if "..." in t.notes:
            data["truncated"] = True
        if t.native:
            data["c_stack"] = True
        self.sink.stack(Stack(
            frames=tuple(t.frames), origin="faulthandler", ref=t.line.ref(), thread=t.label,
            crashed=t.current and dump.fatal, host=t.line.host, rank=t.line.rank,
            title=dump.title, data=data))

    def _close(self, rank) -> None:
        dump = self.blocks.pop(rank)
        if dump is not None:
            self.end(dump)


def _extension_modules(text: str) -> tuple[list[str], int | None]:
    """`a, b, c (total: 3)` -> (["a", "b", "c"], 3); a cut-off paste has no total."""
    total = None
    m = _EXTENSION_TOTAL.search(text)
    if m:
        total = int(m.group(1))
        text = text[:m.start()]
    modules = [name.strip() for name in text.split(",") if name.strip()]
    return modules, total
