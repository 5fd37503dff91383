"""Python tracebacks: one Stack per traceback (frames innermost first) and a
`py.exception` event for its final `Type: message` line.

Handles chained tracebacks (`The above exception was the direct cause ...`,
`During handling of the above exception ...`), source and 3.11+ caret lines,
`[Previous line repeated N more times]`, multi-line messages, and torch's DataLoader
re-raise (`Caught RuntimeError in DataLoader worker process 0.` then an
`Original Traceback (most recent call last):` inside the message).  Ranks writing to
one log interleave: a traceback is kept open per launcher rank.  Pastes often start
mid-way, so frames or a final exception line alone are taken too; a `Word: text` line
counts as an exception only when the word names one (see `is_exception_name`).
Lines are parsed by grammars/pytrace.lark (see docs/formats.d/pytrace.md).
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
import re
from dataclasses import dataclass, field

from lark import Transformer, v_args

from postmortem.model import Frame, Severity, Stack
from postmortem.parsers.base import Line
from postmortem.parsers.blocks import RankBlockParser

# `Name: text` is an exception when its last dotted part is a builtin exception or
# ends in one of these (and has a capitalised stem: `ValueError`, not `Error`/`ERROR`; a
# private class keeps its leading underscores: numpy/_core/_exceptions.py `_ArrayMemoryError`).
EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning", "Interrupt", "Exit", "Failure")
BUILTIN_EXCEPTIONS = frozenset(
    name for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, BaseException))
_SUFFIXED = re.compile(r"_*[A-Z]\w*(?:%s)" % "|".join(EXCEPTION_SUFFIXES))

_EXC_LINE = r"(?:[A-Za-z_]\w*\.)*_*[A-Z]\w*(?:%s)(?::|$)" % "|".join(EXCEPTION_SUFFIXES)
PREFILTER = re.compile(
    r"^\s*(?:(?:Original )?Traceback \(most recent call last\):"
    r"|File \".+\", line \d+(?:, in |$)"
    r"|The above exception was the direct cause|During handling of the above exception"
    r"|" + _EXC_LINE
    + r"|(?:%s)(?::|$))" % "|".join(sorted(n for n in BUILTIN_EXCEPTIONS if not _SUFFIXED.fullmatch(n))))

# A message continues on the next lines, unless that line starts something else.
MAX_MESSAGE_LINES = 8
_OTHER_RECORD = re.compile(
    r"^(?:\[|\d{4}-\d\d-\d\d|[IWEFCV]\d{4} |(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)[:\s]"
    r"|\S+:\d+:\d+ \[\d+\] NCCL |W\d|E\d)")
# torch re-raises a worker's exception in the main process with this message.
_DATALOADER_RERAISE = re.compile(r"^Caught \w+ in DataLoader worker process (\d+)\.")


def _wanted_by_another_parser(text: str) -> bool:
    """A message's next line is not ours when another format's prefilter takes it."""
    from postmortem.parsers import PARSERS  # the registry imports this module

    return any(cls.prefilter is not None and cls.prefilter.search(text) is not None
               for cls in PARSERS if cls is not TracebackParser)


def _other_block_prefilters() -> tuple:
    """The prefilters of the other per-rank block parsers (faulthandler, gdb, native ...): a
    line one of them starts ends a traceback's source lines."""
    from postmortem.parsers import PARSERS  # the registry imports this module

    return _block_prefilters(PARSERS)


@functools.lru_cache(maxsize=4)
def _block_prefilters(parsers: tuple) -> tuple:
    return tuple(cls.prefilter for cls in parsers
                 if issubclass(cls, RankBlockParser) and cls is not TracebackParser and cls.prefilter is not None)


def is_exception_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last in BUILTIN_EXCEPTIONS or _SUFFIXED.fullmatch(last) is not None


@v_args(inline=True)
class _ToTuples(Transformer):
    def start(self, item):
        return item

    def header(self, *words):
        return ("header", len(words) == 2)  # True for torch's `Original Traceback`

    def frame(self, _file, path, lineno, function=None):
        return ("frame", Frame(function=str(function) if function is not None else None,
                               file=str(path), line=int(lineno), language="python"))

    def chain(self, marker):
        return ("chain", "cause" if marker.type == "CAUSE" else "context")

    def repeated(self, _word, count):
        return ("repeated", int(count))

    def exception(self, name, text=None):
        return ("exception", (str(name), str(text).strip() if text is not None else ""))


_TRANSFORMER = _ToTuples()


@dataclass
class _Traceback:
    line: Line                    # header (or first line seen of a headerless paste)
    original: bool = False        # torch's `Original Traceback` (the worker's)
    chained: str | None = None    # cause | context: how it links to the previous one
    frames: list[Frame] = field(default_factory=list)
    expect_source: bool = False   # the line after a frame is its source line
    source: str = ""              # the innermost frame's source line, when printed


@dataclass
class _Context:
    """Per launcher rank: the traceback being read, or the message being collected."""

    tb: _Traceback | None = None
    chained: str | None = None    # a chain marker seen, for the next traceback
    message_index: int | None = None  # py.exception whose message may continue
    message_lines: list[str] = field(default_factory=list)


class TracebackParser(RankBlockParser[_Context]):
    """One `_Context` per launcher rank (`self.blocks`)."""

    name = "pytrace"
    order = 80
    prefilter = PREFILTER
    grammar_name = "pytrace"
    transformer = _TRANSFORMER

    def is_open(self, c: _Context) -> bool:
        return bool(c.tb is not None or c.message_index is not None or c.chained)

    def feed(self, line: Line) -> bool:
        ctx = self.blocks.of(line, _Context)
        stripped = line.text.strip()
        item = self.parse_line(stripped) if stripped else None
        if item is not None and item[0] == "exception" and not is_exception_name(item[1][0]):
            item = None
        if item is not None and item[0] == "exception" and self._launchers_line(line):
            return self._hand_over(line, ctx, item[1])
        if item is None:
            return self._other_line(line, ctx, stripped)
        self._end_message(ctx)
        kind, value = item
        return getattr(self, f"_on_{kind}")(line, ctx, value)

    def end(self, ctx: _Context) -> None:
        self._end_message(ctx)
        self._end_traceback(ctx, title="")

    # -- one method per line kind ------------------------------------------------

    def _on_header(self, line: Line, ctx: _Context, original: bool) -> bool:
        self._end_traceback(ctx, title="")  # an unfinished one (interleaved, cut)
        ctx.tb = _Traceback(line, original=original, chained=ctx.chained)
        ctx.chained = None
        return True

    def _on_frame(self, line: Line, ctx: _Context, frame: Frame) -> bool:
        if ctx.tb is None:
            ctx.tb = _Traceback(line)  # a paste that starts mid-way
        ctx.tb.frames.append(frame)
        ctx.tb.expect_source = True
        ctx.tb.source = ""
        return True

    def _on_chain(self, line: Line, ctx: _Context, how: str) -> bool:
        self._end_traceback(ctx, title="")
        ctx.chained = how
        return True

    def _on_repeated(self, line: Line, ctx: _Context, count: int) -> bool:
        if ctx.tb is None or not ctx.tb.frames:
            return False
        last = ctx.tb.frames[-1]
        ctx.tb.frames[-1] = dataclasses.replace(last, note=f"repeated {count} more times")
        return True

    def _on_exception(self, line: Line, ctx: _Context, exc) -> bool:
        name, message = exc
        data = {"type": name, "message": message}
        m = _DATALOADER_RERAISE.match(message)
        if m:
            data["dataloader_worker"] = int(m.group(1))
        tb = ctx.tb
        if tb is not None:
            data["frames"] = len(tb.frames)
            if tb.original:
                data["original"] = True
            if tb.chained:
                data["chained"] = tb.chained
            if tb.source:
                data["source"] = tb.source
        self.sink.event(line, "py.exception", Severity.ERROR, **data)
        self._end_traceback(ctx, title=f"{name}: {message}" if message else name)
        ctx.message_index = len(self.sink.events) - 1
        ctx.message_lines = []
        return True

    # -- lines that are no traceback line --------------------------------------------

    @staticmethod
    def _launchers_line(line: Line) -> bool:
        """torchrun's `...ChildFailedError:` heads the launcher's failure table: its line."""
        from postmortem.parsers.launcher import LauncherParser  # the registry imports us

        return LauncherParser.prefilter is not None and LauncherParser.prefilter.search(line.text) is not None

    def _hand_over(self, line: Line, ctx: _Context, exc) -> bool:
        """Finish the traceback with this title, and let the launcher parser claim the line.

        Once we are not busy the dispatcher offers the line to the launcher parser; if it
        declines, the line comes back to us as a lone exception line.
        """
        if ctx.tb is None:
            return self._on_exception(line, ctx, exc)
        name, message = exc
        self._end_message(ctx)
        self._end_traceback(ctx, title=f"{name}: {message}" if message else name)
        ctx.chained = None
        return False

    def _other_line(self, line: Line, ctx: _Context, stripped: str) -> bool:
        if ctx.tb is not None and stripped and self._inside_traceback(line, ctx.tb, stripped):
            return True
        if ctx.message_index is not None and self._continues_message(ctx, stripped):
            return True
        if not stripped and ctx.chained:
            return True  # the blank lines around a chain marker
        self._end_message(ctx)
        if ctx.tb is not None:
            self._end_traceback(ctx, title="")
        return False

    def _inside_traceback(self, line: Line, tb: _Traceback, stripped: str) -> bool:
        """Source lines, carets, and a paste's flattened source line after a frame."""
        if any(p.match(line.text) for p in _other_block_prefilters()):
            return False
        if line.text[:1].isspace() or tb.expect_source:
            if tb.expect_source and tb.frames:
                tb.source = stripped[:200]
            tb.expect_source = False
            return True
        return False

    def _continues_message(self, ctx: _Context, stripped: str) -> bool:
        if not stripped or len(ctx.message_lines) >= MAX_MESSAGE_LINES:
            return False
        if _OTHER_RECORD.match(stripped) or _wanted_by_another_parser(stripped):
            return False
        ctx.message_lines.append(stripped)
        return True

    def _end_message(self, ctx: _Context) -> None:
        index, lines = ctx.message_index, ctx.message_lines
        ctx.message_index, ctx.message_lines = None, []
        if index is None or not lines:
            return
        ev = self.sink.events[index]
        self.sink.events[index] = dataclasses.replace(ev, data=dict(ev.data, continuation="\n".join(lines)))

    def _end_traceback(self, ctx: _Context, title: str) -> None:
        tb, ctx.tb = ctx.tb, None
        if tb is None or not tb.frames:
            return
        data = {}
        if tb.original:
            data["original"] = True
        if tb.chained:
            data["chained"] = tb.chained
        if not title:
            data["unfinished"] = True
        self.sink.stack(Stack(
            frames=tuple(reversed(tb.frames)), origin="traceback", ref=tb.line.ref(),
            host=tb.line.host, rank=tb.line.rank, title=title, data=data))
