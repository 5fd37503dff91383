"""The parser registry and the line dispatcher.

PARSERS is the one ordered list of text formats, discovered from the package (see
`discover`).  `parse_text` reads one text artifact line by line and splits it among them
(see base.py for the protocol), so a file that mixes training stderr, NCCL lines,
tracebacks and a faulthandler dump is read by the right parser line by line.  Message
patterns from the knowledge files (messages.py) are matched on every line in addition,
whoever claimed it.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Iterable, Iterator

from postmortem import knowledge
from postmortem.budget import Meter
from postmortem.parsers import messages
from postmortem.parsers.base import Line, LineParser, Sink
from postmortem.parsers.wrappers import clean, strip


def discover(package: str = __name__, path=None) -> tuple[type[LineParser], ...]:
    """Every parser of the package: the LineParser subclasses in the modules of
    `postmortem/parsers/` that set their own `name` and a `prefilter`, ordered by `order`
    (so a new format's module is its registration: no edit here)."""
    found: dict[str, type[LineParser]] = {}
    for info in sorted(pkgutil.iter_modules(__path__ if path is None else path), key=lambda m: m.name):
        module = importlib.import_module(f"{package}.{info.name}")
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, LineParser) and obj.__module__ == module.__name__
                    and "name" in vars(obj) and obj.prefilter is not None):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return tuple(sorted(found.values(), key=lambda cls: (cls.order, cls.name)))


# The parser registry.  Order matters only when two prefilters match the same line: the first
# to claim wins (each parser's `order`).
PARSERS: tuple[type[LineParser], ...] = discover()


@dataclass
class TextResult:
    sink: Sink
    lines: int
    unclaimed: int
    parsers: tuple[str, ...]
    repeated: int = 0      # identical lines counted but not parsed again (the budget's `repeats`)
    stopped: str = ""      # why parsing stopped before the end (time or event budget)


# Distinct lines remembered for the identical-line count; beyond this, lines are just parsed.
_SEEN_CAP = 200_000


def parse_text(path: str, raw_lines: Iterable[str], host: str | None = None,
               k: knowledge.Knowledge | None = None, numbering: Iterator[int] | None = None,
               meter: Meter | None = None) -> TextResult:
    """Read one text artifact; never raises on content.  `numbering` numbers events in
    reading order across a whole bundle.  With a `meter`, the bundle's budget applies:
    a line seen more than `repeats` times (outside any block) is counted, not parsed
    again, and parsing stops with what it has when time or the event budget runs out.
    `raw_lines` may be a bundle.Lines, whose numbering skips runs of blank lines."""
    sink = Sink(numbering=numbering) if numbering is not None else Sink()
    parsers = [cls(path, sink) for cls in PARSERS]
    matcher = messages.MessageMatcher(path, sink, k)
    used: set[str] = set()
    in_block: list[LineParser] = []  # parsers inside a multi-line block, in registry order
    n = unclaimed = repeated = 0
    stopped = ""
    numbered = raw_lines.numbered() if hasattr(raw_lines, "numbered") else enumerate(raw_lines, start=1)
    seen: dict[int, int] = {}
    repeats = meter.budget.repeats if meter is not None else None
    for i, (n, raw) in enumerate(numbered):
        if meter is not None and not i & 1023:
            if meter.events + len(sink.events) > meter.budget.events:
                meter.stop(f"event budget of {meter.budget.events} events reached")
            if meter.out_of_time():
                stopped = f"stopped at line {n}: {meter.stopped}"
                break
        if repeats is not None and not in_block:
            key = hash(raw)
            times = seen.get(key, 0) + 1
            if times > repeats:
                repeated += 1
                continue
            if len(seen) < _SEEN_CAP:
                seen[key] = times
        raw = clean(raw)
        text, rank, wrapped_host, stamp = strip(raw)
        line = Line(path, n, text, raw, wrapped_host or host, rank, stamp)
        claimed_by = _offer(parsers, in_block, line, sink)
        if claimed_by:
            used.add(claimed_by.name)
        elif any(_wants(sink, p, line) for p in parsers):
            unclaimed += 1
        if matcher.feed(line):
            used.add(matcher.name)
    for p in parsers:
        _safely(sink, p, p.finish)
    return TextResult(sink, n, unclaimed, tuple(sorted(used)), repeated, stopped)


def _offer(parsers: list[LineParser], in_block: list[LineParser], line: Line, sink: Sink) -> LineParser | None:
    """Busy parsers first, then whoever wants the line; keeps `in_block` up to date.

    A parser can only become busy by claiming a line, so `busy` is asked only of the
    parsers in `in_block` instead of every parser on every line.  This runs once per
    line of every file: the calls are inlined rather than wrapped."""
    claimed = None
    for p in list(in_block):
        if _feed(sink, p, line):
            claimed = p
            break
    still_busy = [p for p in in_block if _is_busy(sink, p)] if in_block else in_block
    if claimed is None:
        for p in parsers:  # a parser whose block just ended may start a new one with this line
            if p not in still_busy and _wants(sink, p, line) and _feed(sink, p, line):
                claimed = p
                break
    if claimed is not None and claimed not in still_busy and _is_busy(sink, claimed):
        still_busy = [p for p in parsers if p is claimed or p in still_busy]
    in_block[:] = still_busy
    return claimed


def _feed(sink: Sink, parser: LineParser, line: Line) -> bool:
    try:
        return bool(parser.feed(line))
    except Exception as exc:  # noqa: BLE001 - a parser bug costs one line and a note
        _note(sink, parser, f"{line.path}:{line.no}", exc)
        return False


def _wants(sink: Sink, parser: LineParser, line: Line) -> bool:
    try:
        return parser.wants(line)
    except Exception as exc:  # noqa: BLE001
        _note(sink, parser, f"{line.path}:{line.no}", exc)
        return False


def _note(sink: Sink, parser: LineParser, where: str, exc: Exception) -> None:
    sink.problems.append(f"{parser.name} parser failed at {where}: {type(exc).__name__}: {exc}")


def _is_busy(sink: Sink, parser: LineParser) -> bool:
    return _safely(sink, parser, lambda: parser.busy)


def _safely(sink: Sink, parser: LineParser, fn, *args) -> bool:
    """A parser bug costs one line and a note, never the analysis."""
    try:
        return bool(fn(*args))
    except Exception as exc:  # noqa: BLE001 - containment boundary
        where = f"{args[0].path}:{args[0].no}" if args else parser.path
        sink.problems.append(f"{parser.name} parser failed at {where}: {type(exc).__name__}: {exc}")
        return False


__all__ = ["PARSERS", "parse_text", "TextResult", "Line", "LineParser", "Sink"]
