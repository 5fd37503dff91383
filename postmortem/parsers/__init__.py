"""The parser registry and the line dispatcher.

PARSERS is the one ordered list of text formats, discovered from the package (see
`discover`).  `parse_text` reads one text artifact line by line and splits it among them
(see base.py for the protocol), so a file that mixes training stderr, NCCL lines,
tracebacks and a faulthandler dump is read by the right parser line by line.  Message
patterns from the knowledge files (messages.py) are matched on every line in addition,
whoever claimed it.

Importing every parser module costs more than reading a small bundle, so a text artifact
starts with stand-ins (`_Deferred`) built from index.json (made by tools/parser_index.py:
each parser's name, order, prefilter and gates, with a digest of the package's sources):
a parser's module is imported the first time its prefilter takes a line.  The index is used
only while it was made from exactly these sources by this Python version; otherwise, and
once anything reads PARSERS, the real classes are used, as before.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Iterable, Iterator

from postmortem import knowledge
from postmortem.budget import Meter
from postmortem.parsers import messages
from postmortem.parsers.base import Line, LineParser, Sink
from postmortem.parsers.wrappers import clean, strip, unwrap_callstack


def discover(package: str = __name__, path=None) -> tuple[type[LineParser], ...]:
    """Every parser of the package: the LineParser subclasses in the modules of
    `postmortem/parsers/` that set their own `name` and a `prefilter`, ordered by `order`
    (so a new format's module is its registration: no edit here)."""
    import pkgutil

    found: dict[str, type[LineParser]] = {}
    for info in sorted(pkgutil.iter_modules(__path__ if path is None else path), key=lambda m: m.name):
        module = importlib.import_module(f"{package}.{info.name}")
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, LineParser) and obj.__module__ == module.__name__
                    and "name" in vars(obj) and obj.prefilter is not None):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return tuple(sorted(found.values(), key=lambda cls: (cls.order, cls.name)))


class _Registry:
    """PARSERS: the tuple `discover()` returns, found the first time it is read (iterated,
    indexed, compared); parse_text does not read it while index.json is current."""

    def __init__(self) -> None:
        self._found: tuple[type[LineParser], ...] | None = None

    @property
    def found(self) -> tuple[type[LineParser], ...]:
        if self._found is None:
            self._found = discover()
        return self._found

    @property
    def resolved(self) -> bool:
        return self._found is not None

    def __iter__(self):
        return iter(self.found)

    def __len__(self) -> int:
        return len(self.found)

    def __getitem__(self, i):
        return self.found[i]

    def __contains__(self, cls) -> bool:
        return cls in self.found

    def __eq__(self, other) -> bool:
        return self.found == (other.found if isinstance(other, _Registry) else other)

    def __hash__(self) -> int:
        return hash(self.found)

    def __repr__(self) -> str:
        return repr(self.found)


# The parser registry.  Order matters only when two prefilters match the same line: the first
# to claim wins (each parser's `order`).
PARSERS: tuple[type[LineParser], ...] = _Registry()  # type: ignore[assignment]

INDEX = "index.json"
# What a parser's prefilter may be built from besides the parsers package itself.
INDEX_ALSO = ("signals.py", "sizes.py")


def index_sources() -> dict[str, str]:
    """The texts the index is made from: every module of the package's folders, and INDEX_ALSO."""
    from pathlib import Path

    out = {}
    for folder in __path__:   # listdir, not glob: glob compiles a regex on every start
        for f in sorted(Path(folder, name) for name in os.listdir(folder) if name.endswith(".py")):
            out[f"parsers/{f.name}"] = f.read_text(encoding="utf-8")
    top = Path(__file__).resolve().parent.parent
    for name in INDEX_ALSO:
        out[name] = (top / name).read_text(encoding="utf-8")
    return out


def index_digest() -> str:
    from postmortem.packaged import sha256_hex

    parts = [f"python {sys.version_info[0]}.{sys.version_info[1]}\n".encode()]
    for name, text in index_sources().items():
        parts += (f"{name}\n{len(text)}\n".encode(), text.encode("utf-8"))
    return sha256_hex(b"".join(parts))


_INDEX_STATE: list = []   # [the current index's parsers, or None], once looked up


def _index() -> list[dict] | None:
    """index.json's parsers when the index was made from the current sources, else None."""
    if not _INDEX_STATE:
        from postmortem.packaged import packaged

        try:
            made = json.loads(packaged(__name__, INDEX).read_text(encoding="utf-8"))
            current = made.get("digest") == index_digest()
        except (OSError, ValueError):
            made, current = {}, False
        _INDEX_STATE.append(made["parsers"] if current else None)
    return _INDEX_STATE[0]


def _pattern(spec) -> re.Pattern[str] | None:
    return None if spec is None else re.compile(spec[0], spec[1])


class _Deferred:
    """A parser whose module is not imported yet, for one artifact: `wants` answers from the
    prefilter and gates of its index entry (LineParser.wants, which the indexed parser does
    not override); the first line it is fed makes the real parser, which then answers
    everything.  Until then it is not busy and finishing it does nothing (the index checks
    both of a fresh instance)."""

    __slots__ = ("name", "_entry", "_path", "_sink", "_real", "_patterns", "_gates")

    def __init__(self, entry: dict, patterns: _Patterns, path: str, sink: Sink) -> None:
        self.name, self._entry, self._path, self._sink, self._real = entry["name"], entry, path, sink, None
        self._patterns, self._gates = patterns, None

    def real(self) -> LineParser:
        if self._real is None:
            module = importlib.import_module(self._entry["module"])
            self._real = getattr(module, self._entry["class"])(self._path, self._sink)
        return self._real

    @property
    def busy(self) -> bool:
        return self._real is not None and self._real.busy

    def wants(self, line: Line) -> bool:
        if self._real is not None:
            return self._real.wants(line)
        text = line.text
        if not text:  # asked of every artifact (scan.py): the answer depends on the patterns alone
            blank = self._patterns.blank
            if blank is None:
                blank = self._patterns.blank = self._wants_text(text)
            return blank
        return self._wants_text(text)

    def _wants_text(self, text: str) -> bool:
        gates = self._gates
        if gates is None:
            gates = self._gates = self._patterns.gates()
        gate_start, gate_words = gates
        if gate_start is not None or gate_words is not None:
            if not ((gate_start is not None and gate_start.match(text))
                    or (gate_words is not None and gate_words.search(text))):
                return False
        return self._patterns.prefilter().search(text) is not None

    def feed(self, line: Line) -> bool:
        return self.real().feed(line)

    def finish(self) -> None:
        if self._real is not None:
            self._real.finish()


class _Patterns:
    """An indexed parser's gates, compiled the first time it is offered a line (a bundle
    whose lines all go to one parser never compiles the others': some gates cost
    milliseconds), and its prefilter compiled the first time a line passes the gates (the
    big prefilters are the ones behind gates)."""

    __slots__ = ("_gates", "_prefilter", "_spec", "_entry", "blank")

    def __init__(self, entry: dict) -> None:
        self._entry, self._gates = entry, None
        self.blank: bool | None = None  # whether a line with no text passes (see _Deferred.wants)
        self._spec, self._prefilter = entry["prefilter"], None

    def gates(self) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
        if self._gates is None:
            self._gates = (_pattern(self._entry["gate_start"]), _pattern(self._entry["gate_words"]))
        return self._gates

    def prefilter(self) -> re.Pattern[str]:
        if self._prefilter is None:
            self._prefilter = _pattern(self._spec)
        return self._prefilter


_PATTERNS: dict[str, _Patterns] = {}


def _instances(path: str, sink: Sink, imported=sys.modules) -> list:
    """One parser per registered format for one artifact, in registry order: stand-ins for
    those whose module is not `imported` yet, while the index is current and PARSERS was not
    read or replaced."""
    registry = PARSERS
    entries = _index() if isinstance(registry, _Registry) and not registry.resolved else None
    if entries is None:
        return [cls(path, sink) for cls in registry]
    out = []
    for e in entries:
        module = imported.get(e["module"])
        if module is not None or e["eager"]:
            cls = getattr(module or importlib.import_module(e["module"]), e["class"])
            out.append(cls(path, sink))
            continue
        key = f"{e['module']}.{e['class']}"
        patterns = _PATTERNS.get(key)
        if patterns is None:
            patterns = _PATTERNS[key] = _Patterns(e)
        out.append(_Deferred(e, patterns, path, sink))
    return out


def index() -> dict:
    """What tools/parser_index.py writes to index.json: every parser of PARSERS in order, with
    what `_Deferred` needs, and whether it must be imported at once (it overrides `wants`, or
    a fresh instance is busy or writes something when finished)."""
    def spec(rx):
        return None if rx is None else [rx.pattern, rx.flags]

    parsers = []
    for cls in discover():
        sink = Sink()
        fresh = cls("index", sink)
        fresh_busy = bool(fresh.busy)
        fresh.finish()
        quiet = not (sink.events or sink.stacks or sink.facts or sink.problems)
        eager = cls.wants is not LineParser.wants or fresh_busy or not quiet or cls.prefilter is None
        parsers.append({"name": cls.name, "module": cls.__module__, "class": cls.__qualname__, "order": cls.order,
                        "prefilter": spec(cls.prefilter), "gate_start": spec(cls.gate_start),
                        "gate_words": spec(cls.gate_words), "eager": eager})
    return {"generator": "tools/parser_index.py", "digest": index_digest(), "parsers": parsers,
            "python": f"{sys.version_info[0]}.{sys.version_info[1]}"}


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


def read_as(path: str, no: int, raw: str, host: str | None) -> list[Line]:
    """The Line(s) a physical line is read as: its wrappers stripped (wrappers.strip), and an
    elastic error record's traceback unwrapped into the lines it holds (wrappers.unwrap_callstack)."""
    text, rank, wrapped_host, stamp = strip(raw)
    return [Line(path, no, t, raw, wrapped_host or host, rank, stamp) for t in unwrap_callstack(text) or (text,)]


def parse_text(path: str, raw_lines: Iterable[str], host: str | None = None,
               k: knowledge.Knowledge | None = None, numbering: Iterator[int] | None = None,
               meter: Meter | None = None) -> TextResult:
    """Read one text artifact; never raises on content.  `numbering` numbers events in
    reading order across a whole bundle.  With a `meter`, the bundle's budget applies:
    a line seen more than `repeats` times (outside any block) is counted, not parsed
    again, and parsing stops with what it has when time or the event budget runs out.
    `raw_lines` may be a bundle.Lines, whose numbering skips runs of blank lines."""
    sink = Sink(numbering=numbering) if numbering is not None else Sink()
    parsers = _instances(path, sink)
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
        for line in read_as(path, n, raw, host):
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


__all__ = ["PARSERS", "parse_text", "read_as", "TextResult", "Line", "LineParser", "Sink"]
