"""Native crash reports that are not a debugger's: UCX's fatal-signal block, glibc
backtrace_symbols() dumps, c10 (PyTorch C++) exception frames, and std::terminate.

* UCX: `[host:pid:thread:tid] Caught signal 7 (Bus error: nonexistent physical address)`
  (event `native.signal`), then `==== backtrace (tid:   3095) ====`, frames
  ` 0 0x... func()  file:0`, and a row of `=`.
* backtrace_symbols: `/lib/libc.so.6(+0x3cf40)[0x7f...]`, `lib.so(sym+0x94)[0x...]`;
  a paste may wrap a long line in two, which is joined back.
* c10: `Exception raised from query at file:95 (most recent call first):` then
  `frame #0: c10::Error::Error(...) + 0x42 (0x1518a06137d2 in /path/libc10.so)`.
* `terminate called after throwing an instance of 'c10::CUDAError'` and its
  `  what():  CUDA error: unknown error` (event `native.terminate`); the message may
  continue over several lines (c10 appends CUDA hints).

Each line is parsed by grammars/native.lark (see docs/formats.d/native.md).
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

_HEX = r"0x[0-9a-fA-F]+"
PREFILTER = re.compile(
    r"^\s*(?:\[[^\]\s:]+:\d+\s*:[^\]]*:\d+\] Caught signal \d+"
    r"|==== backtrace \(tid:"
    r"|Exception raised from \S+ at "
    r"|frame #\d+: (?!0x)"
    r"|terminate called "
    # backtrace_symbols, complete or cut by a paste after the `(`
    # (one pass over the token: a lookahead for `/` or `.so`, then the token taken whole)
    r"|(?=[^\s()\[\]]*(?:/|\.so))[^\s()\[\]]*+(?:\(|\s?\[0x))")

# A backtrace_symbols line cut by a paste: the object and `(` are there, `]` is not.
_CUT_SYMBOLS_LINE = re.compile(r"^[^\s()\[\]]+\([^\s()]*(?:\+(?:0x[0-9a-fA-F]*)?)?(?:\)\s?\[(?:0x[0-9a-fA-F]*)?)?$")
_C10_TAIL = re.compile(rf" \((?P<addr>{_HEX}) in (?P<module>.+)\)$")
_C10_OFFSET = re.compile(rf" \+ (?P<off>{_HEX})$")
# A UCX/backtrace "address" below this is an offset inside the object (UCX's
# detailed build prints offsets), above it an absolute pc.
_LOWEST_ABSOLUTE_PC = 0x10000000
# How many lines of an exception message may follow `what():` (c10 appends hints).
MAX_WHAT_LINES = 8

# Signal numbers -> names, for UCX's `Caught signal N (text: cause)`.
SIGNAL_NAMES = signals.NAMES


@v_args(inline=True)
class _ToTuples(Transformer):
    """Each line becomes (kind, value) with plain Python values."""

    def start(self, item):
        return item

    def ucx_signal(self, host, pid, *rest):
        # Drop the padding by its token type: a thread name may itself be white space to isspace()
        # (a control character such as \x1e), and must still count as the thread.
        values = [str(t) for t in rest if getattr(t, "type", "") != "UCX_PAD"]
        thread, tid, signo, text = values
        signal, _, detail = text.partition(": ")
        return ("ucx_signal", {"host": str(host), "pid": int(pid), "thread": thread, "tid": int(tid),
                               "signo": int(signo), "signal": signal, "detail": detail})

    def ucx_backtrace_header(self, *parts):
        return ("ucx_header", int(parts[-1]))

    def ucx_frame(self, index, _pad, value, _pad2, function, _pad3, *location):
        file, line = (str(location[0]), location[1]) if len(location) == 2 else ("?", location[0])
        function = str(function)
        frame = Frame(function=None if function.startswith("?") else function,
                      file=None if file.startswith("?") else file, line=int(line) or None)
        return ("ucx_frame", (frame, int(value, 16)))

    def ucx_symbols_frame(self, index, _pad, frame):
        return ("ucx_frame", (frame[1], None))

    def symbols_frame(self, obj, *rest):
        values = [str(t) for t in rest if not str(t).isspace()]
        address = int(values[-1], 16)
        symbol = values[0] if len(values) == 3 else None
        offset = int(values[-2], 16)
        return ("symbols_frame", Frame(function=symbol, module=str(obj), offset=offset, address=address))

    def symbols_frame_bare(self, obj, *rest):
        return ("symbols_frame", Frame(module=str(obj), address=int(str(rest[-1]), 16)))

    def c10_raised(self, function, source):
        return ("c10_raised", (str(function), str(source)))

    def c10_frame(self, index, text):
        return ("c10_frame", _c10_frame(str(text)))

    def terminate(self, cxx_type, rest=None):
        return ("terminate", (str(cxx_type), None))

    def terminate_other(self, text):
        return ("terminate", (None, f"terminate called {text}"))

    def what(self, _word, text=None):
        return ("what", str(text).strip() if text is not None else "")


_TRANSFORMER = _ToTuples()


def _c10_frame(text: str) -> Frame:
    """`func + 0x42 (0xaddr in /lib.so)`, `<unknown function> + 0xc2ba3 (0x... in lib)`."""
    address = module = offset = None
    m = _C10_TAIL.search(text)
    if m:
        address, module = int(m.group("addr"), 16), m.group("module")
        text = text[:m.start()]
    m = _C10_OFFSET.search(text)
    if m:
        offset = int(m.group("off"), 16)
        text = text[:m.start()]
    function = None if text in ("<unknown function>", "") else text
    return Frame(function=function, module=module, address=address, offset=offset)


@dataclass
class _FrameRun:
    """An open run of frames of one kind (ucx, backtrace_symbols, c10)."""

    origin: str
    line: Line
    title: str
    crashed: bool
    tid: int | None = None
    pid: int | None = None
    frames: list[Frame] = field(default_factory=list)
    data: dict = field(default_factory=dict)


@dataclass
class _Context:
    """Per launcher rank: the open block, a cut line waiting for its end, the last cause."""

    block: _FrameRun | None = None
    cut: str | None = None               # first half of a wrapped backtrace_symbols line
    terminate: dict | None = None        # last `terminate called ...` (title for the stack)
    what_lines: list[str] | None = None  # collecting a multi-line what() message
    terminate_index: int | None = None   # where its event sits in sink.events
    expect_what: bool = False            # just after `terminate called ...`: what() may follow
    signal: dict | None = None           # last UCX `Caught signal`


class NativeStackParser(RankBlockParser[_Context]):
    """One `_Context` per launcher rank (`self.blocks`)."""

    name = "native"
    order = 50
    prefilter = PREFILTER
    grammar_name = "native"
    transformer = _TRANSFORMER

    def is_open(self, c: _Context) -> bool:
        return bool(c.block or c.cut is not None or c.what_lines is not None or c.expect_what)

    def feed(self, line: Line) -> bool:
        ctx = self.blocks.of(line, _Context)
        text = line.text.strip()
        expect_what, ctx.expect_what = ctx.expect_what, False
        if not expect_what and ctx.terminate_index is not None and ctx.what_lines is None:
            ctx.terminate_index = None  # the line after `terminate` was no what(): nothing to add
        if ctx.cut is not None:
            joined, ctx.cut = ctx.cut + text, None
            item = self.parse_line(joined)
            if item is not None and item[0] == "symbols_frame":
                return self._dispatch(line, ctx, item)
        item = self.parse_line(text) if text else None
        if item is None:
            return self._not_ours(line, ctx, text)
        return self._dispatch(line, ctx, item)

    def end(self, ctx: _Context) -> None:
        self._end_terminate(ctx)
        self._end_block(ctx)

    # -- dispatch ---------------------------------------------------------------

    def _dispatch(self, line: Line, ctx: _Context, item) -> bool:
        kind, value = item
        if kind != "what":
            self._end_terminate(ctx)
        return getattr(self, f"_on_{kind}")(line, ctx, value)

    def _not_ours(self, line: Line, ctx: _Context, text: str) -> bool:
        """A line that is no frame: a what() continuation, a cut line, or the block's end."""
        if ctx.what_lines is not None:
            if text and not PREFILTER.match(text) and len(ctx.what_lines) < MAX_WHAT_LINES:
                ctx.what_lines.append(text)
                return True
            self._end_terminate(ctx)
        if ctx.block is not None and ctx.block.origin == "ucx" and re.fullmatch(r"=+", text):
            self._end_block(ctx)  # the UCX footer
            return True
        if _CUT_SYMBOLS_LINE.match(text):
            ctx.cut = text
            return True
        self._end_block(ctx)
        return False

    # -- one method per line kind ------------------------------------------------

    def _on_ucx_signal(self, line: Line, ctx: _Context, sig: dict) -> bool:
        self._end_block(ctx)
        ctx.signal = sig
        self.sink.event(line, "native.signal", Severity.FATAL, host=sig["host"], pid=sig["pid"],
                        tid=sig["tid"], signo=sig["signo"], signal=sig["signal"], detail=sig["detail"],
                        name=SIGNAL_NAMES.get(sig["signo"]), source="ucx")
        return True

    def _on_ucx_header(self, line: Line, ctx: _Context, tid: int) -> bool:
        self._end_block(ctx)
        sig = ctx.signal if ctx.signal and ctx.signal["tid"] == tid else None
        title = f"Caught signal {sig['signo']} ({sig['signal']}: {sig['detail']})" if sig else ""
        ctx.block = _FrameRun("ucx", line, title, crashed=True, tid=tid, pid=sig["pid"] if sig else None)
        return True

    def _on_ucx_frame(self, line: Line, ctx: _Context, value) -> bool:
        if ctx.block is None or ctx.block.origin != "ucx":
            return False
        frame, printed = value
        if printed is not None:
            if printed < _LOWEST_ABSOLUTE_PC:
                frame = _replace(frame, offset=printed)
            else:
                frame = _replace(frame, address=printed)
        ctx.block.frames.append(frame)
        return True

    def _on_symbols_frame(self, line: Line, ctx: _Context, frame: Frame) -> bool:
        if ctx.block is None or ctx.block.origin not in ("backtrace_symbols", "ucx"):
            self._end_block(ctx)
            ctx.block = _FrameRun("backtrace_symbols", line, self._cause(ctx), crashed=True)
        ctx.block.frames.append(frame)
        return True

    def _on_c10_raised(self, line: Line, ctx: _Context, raised) -> bool:
        self._end_block(ctx)
        function, source = raised
        title = self._cause(ctx) or f"Exception raised from {function} at {source}"
        ctx.block = _FrameRun("c10", line, title, crashed=ctx.terminate is not None,
                           data={"raised_from": function, "source": source})
        return True

    def _on_c10_frame(self, line: Line, ctx: _Context, frame: Frame) -> bool:
        if ctx.block is None or ctx.block.origin != "c10":
            self._end_block(ctx)  # frames pasted without their header
            ctx.block = _FrameRun("c10", line, self._cause(ctx), crashed=ctx.terminate is not None)
        ctx.block.frames.append(frame)
        return True

    def _on_terminate(self, line: Line, ctx: _Context, value) -> bool:
        self._end_block(ctx)
        cxx_type, other = value
        data = {"type": cxx_type} if cxx_type else {"type": None, "detail": other}
        self.sink.event(line, "native.terminate", Severity.FATAL, **data)
        ctx.terminate = data
        ctx.terminate_index = len(self.sink.events) - 1
        ctx.what_lines = None
        ctx.expect_what = True
        return True

    def _on_what(self, line: Line, ctx: _Context, what: str) -> bool:
        if ctx.terminate is None or ctx.terminate_index is None:
            return False  # a what() with no terminate before it is not ours
        ctx.what_lines = [what] if what else []
        return True

    # -- helpers ------------------------------------------------------------------

    def _cause(self, ctx: _Context) -> str:
        if ctx.terminate is not None and ctx.terminate.get("type"):
            what = ctx.terminate.get("what")
            return f"{ctx.terminate['type']}: {what}" if what else ctx.terminate["type"]
        if ctx.signal is not None:
            return f"Caught signal {ctx.signal['signo']} ({ctx.signal['signal']})"
        return ""

    def _end_terminate(self, ctx: _Context) -> None:
        """Put the collected what() message on the terminate event."""
        lines, ctx.what_lines = ctx.what_lines, None
        if lines is None or ctx.terminate_index is None:
            return
        ev = self.sink.events[ctx.terminate_index]
        data = dict(ev.data, what=lines[0] if lines else "")
        if len(lines) > 1:
            data["message"] = "\n".join(lines)
        self.sink.events[ctx.terminate_index] = dataclasses.replace(ev, data=data)
        ctx.terminate = dict(ctx.terminate or {}, what=data["what"])
        ctx.terminate_index = None

    def _end_block(self, ctx: _Context) -> None:
        b, ctx.block = ctx.block, None
        if b is None or not b.frames:
            return
        self.sink.stack(Stack(
            frames=tuple(b.frames), origin=b.origin, ref=b.line.ref(), thread=str(b.tid) if b.tid else None,
            crashed=b.crashed, host=b.line.host, pid=b.pid, tid=b.tid, rank=b.line.rank,
            title=b.title, data=b.data))


def _replace(frame: Frame, **changes) -> Frame:
    return dataclasses.replace(frame, **changes)
