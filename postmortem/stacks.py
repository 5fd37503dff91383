"""One stack interface over every source (satyr's generic layer): crash-thread choice,
frame normalization and the frame part of signatures.

The frame walk is Socorro siggen's (CSignatureTool.generate), with its knowledge kept
as data in postmortem/knowledge/frames/*.txt:

* sentinel.txt   - if a stack holds one of these frames, the walk starts there;
* irrelevant.txt - frames that say nothing about the crash are skipped;
* prefix.txt     - frames too generic to stand alone are kept and the walk goes on;
  the first frame that is not a prefix ends the walk;
* idle.txt       - frames of a waiting thread, used only to pick the crashing thread.

Every decision leaves a note, so a signature can be explained (`walk(...).notes`).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Iterable

from postmortem.knowledge.registry import deaths, produced_by
from postmortem.model import Event, Frame, Stack
from postmortem.packaged import packaged

FRAME_LISTS = ("irrelevant", "prefix", "sentinel", "idle")
MAX_FRAMES = 5          # prefix frames kept before the walk gives up
NATIVE_ORIGINS = ("core", "coredumpctl", "gdb", "ucx", "c10", "backtrace_symbols", "eu-stack", "lldb")
# Events that say a process died of a signal or exit code (signals.toml `death`), however read.
SIGNAL_KINDS = deaths("fatal_signal") | (deaths("exit") & produced_by("parser:launcher"))

# Run-specific text that must not reach a signature: (pattern, replacement), applied in order.
SCRUB = (
    (re.compile(r"/dev/shm/\S+"), "/dev/shm/*"),
    (re.compile(r"\btorch_\d+_\d+(?:_\d+)?\b"), "torch_*"),
    (re.compile(r"\bnccl-[A-Za-z0-9]{4,}\b"), "nccl-*"),
    (re.compile(r"\b(?:/tmp|/var/tmp)/\S+"), "/tmp/*"),
    (re.compile(r"\btmp[a-z0-9_]{6,}\b"), "tmp*"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "0x*"),
    (re.compile(r"\b[0-9a-fA-F]{12,}\b"), "*"),           # build ids, container ids, hashes
    (re.compile(r"(?<![\w.])\d{3,}(?![\w.])"), "N"),      # pids, tids, sizes, counters
)

_ARGS = re.compile(r"\((?:[^()]|\([^()]*\))*\)(?:\s*const)?\s*$")   # trailing (args) [const]
_TEMPLATE = re.compile(r"<[^<>]*>")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_DECORATION = re.compile(r"(?:@plt|@@?[A-Z_]+[\d.]*|\s*\[clone [^\]]*\])+$")
# The decorations are searched for in the name's last DECORATION_WINDOW characters only: a
# `$`-anchored search tries every start, which is quadratic on a long name.
DECORATION_WINDOW = 256
_KEEP_ANGLE = ("<signal handler called>", "<module>", "<lambda>", "<listcomp>", "<dictcomp>",
               "<genexpr>", "<setcomp>")


class FrameListError(ValueError):
    """A frame list has a line that is not a valid regular expression."""


@dataclass(frozen=True, slots=True)
class FrameLists:
    irrelevant: tuple[re.Pattern, ...]
    prefix: tuple[re.Pattern, ...]
    sentinel: tuple[re.Pattern, ...]
    idle: tuple[re.Pattern, ...]


@dataclass(frozen=True, slots=True)
class Walk:
    """The frames a signature uses, and why each frame was taken or skipped."""

    frames: tuple[str, ...]
    notes: tuple[str, ...]


# ------------------------------------------------------------------------------ lists

def read_list(name: str) -> tuple[re.Pattern, ...]:
    """One list file as compiled patterns; a bad line raises FrameListError naming file:line."""
    ref = packaged("postmortem.knowledge", "frames", f"{name}.txt")
    patterns = []
    for number, raw in enumerate(ref.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            patterns.append(re.compile(line))
        except re.error as exc:
            raise FrameListError(f"frames/{name}.txt:{number}: {exc}: {line!r}") from exc
    return tuple(patterns)


@functools.cache
def frame_lists() -> FrameLists:
    return FrameLists(**{name: read_list(name) for name in FRAME_LISTS})


def _first_match(text: str, patterns: tuple[re.Pattern, ...]) -> re.Pattern | None:
    return next((p for p in patterns if p.fullmatch(text)), None)


# ------------------------------------------------------------------------ normalizing

def scrub(text: str) -> str:
    """Remove what differs between runs of the same crash: addresses, pids, temp names."""
    for pattern, replacement in SCRUB:
        text = pattern.sub(replacement, text)
    return text


def _basename(path: str) -> str:
    return PureWindowsPath(path).name if "\\" in path else PurePosixPath(path).name


def _strip_templates(name: str) -> str:
    if name in _KEEP_ANGLE:
        return name
    while _TEMPLATE.search(name):
        name = _TEMPLATE.sub("", name)
    return name


def _native_name(function: str) -> str:
    name = _OFFSET.sub("", function.strip())
    cut = _DECORATION.search(name, max(0, len(name) - DECORATION_WINDOW))
    name = name[:cut.start()] if cut else name
    name = _ARGS.sub("", name).strip()
    name = _strip_templates(name)
    return scrub(name).strip()


def normalize(frame: Frame) -> str | None:
    """A frame as text fit for a signature, or None when nothing is known about it.

    Python frames read `file-stem.function`; native frames are the function without
    arguments, templates, offsets or symbol versions; a native frame with no function
    is `module@?` (the offset is left out: it changes with every build)."""
    if frame.note.strip() == "<signal handler called>":
        return "<signal handler called>"
    name = (frame.function or "").strip()
    if name in ("", "??", "???"):
        return f"{_basename(frame.module)}@?" if frame.module else None
    if frame.language == "python":
        stem = _basename(frame.file).rsplit(".", 1)[0] if frame.file else ""
        return scrub(f"{stem}.{name}" if stem else name)
    return _native_name(name) or None


# ------------------------------------------------------------------- crashing thread

def _is_idle(stack: Stack, lists: FrameLists) -> bool:
    for frame in stack.frames:
        text = normalize(frame)
        if text is None or _first_match(text, lists.irrelevant):
            continue
        return _first_match(text, lists.idle) is not None
    return False


def _signal_tids(events: Iterable[Event]) -> set[int]:
    return {e.tid or e.data.get("tid") for e in events if e.kind in SIGNAL_KINDS} - {None}


def _fuller(chosen: Stack, stacks: list[Stack]) -> Stack:
    """gdb prints the crash frame alone, then the whole thread: take the longest stack that
    begins with the chosen stack's frames."""
    head = chosen.frames
    longer = [s for s in stacks if len(s.frames) > len(head) and s.frames[:len(head)] == head]
    return max(longer, key=lambda s: len(s.frames)) if longer else chosen


def crashing_with_reason(stacks: Iterable[Stack], events: Iterable[Event] = ()) -> tuple[Stack | None, str]:
    """The ladder, then the fullest print of the same thread."""
    stacks = list(stacks)
    if not stacks:   # before copying the events (400,000 at 8,192 ranks)
        return None, "no stack in the bundle"
    chosen, why = _ladder(stacks, list(events))
    if chosen is not None and chosen.frames:
        fuller = _fuller(chosen, stacks)
        if fuller is not chosen:
            return fuller, f"{why}; its full print ({len(fuller.frames)} frames, {fuller.thread or 'no label'})"
    return chosen, why


def _ladder(stacks: list[Stack], events: list[Event]) -> tuple[Stack | None, str]:
    """The crash-thread ladder, one step per branch, first match wins."""
    stacks = list(stacks)
    if not stacks:   # before the frame lists: compiling them is a startup cost (issue 17)
        return None, "no stack in the bundle"
    lists = frame_lists()
    marked = [s for s in stacks if s.crashed]
    if len(marked) == 1:
        return marked[0], "the only stack its source marked as crashing"
    if marked:
        tids = _signal_tids(events)
        by_tid = [s for s in marked if s.tid is not None and s.tid in tids]
        if by_tid:   # several marks (gdb prints the signal thread twice): the signal's tid decides
            return by_tid[0], f"marked as crashing and its tid {by_tid[0].tid} took the signal"
        busy = [s for s in marked if not _is_idle(s, lists)]
        if busy:
            return busy[0], "the first marked stack that is not waiting (futex, pause, join ...)"
        return marked[0], "the first of several marked stacks"
    native = [s for s in stacks if s.origin in NATIVE_ORIGINS and not _is_idle(s, lists)]
    if native:
        return native[0], f"the first native stack ({native[0].origin}) that is not waiting"
    busy = [s for s in stacks if not _is_idle(s, lists)]
    if busy:
        return busy[0], f"no stack is marked; the first that is not waiting ({busy[0].origin})"
    if stacks:
        return stacks[0], "no stack is marked; the first one"
    return None, "no stack in the bundle"


def crashing(stacks: Iterable[Stack], events: Iterable[Event] = ()) -> Stack | None:
    return crashing_with_reason(stacks, events)[0]


# ------------------------------------------------------------------------------ walk

def _start(texts: list[str | None], lists: FrameLists) -> tuple[int, str | None]:
    for index, text in enumerate(texts):
        if text is not None and _first_match(text, lists.sentinel):
            return index, text
    return 0, None


def walk(stack: Stack | None, lists: FrameLists | None = None, max_frames: int = MAX_FRAMES) -> Walk:
    """Siggen's walk: sentinel, then skip irrelevant frames, keep prefixes, stop at the first other frame."""
    if stack is None:
        return Walk((), ("no crashing stack: the signature has no frames",))
    lists = lists or frame_lists()
    texts = [normalize(f) for f in stack.frames]
    start, sentinel = _start(texts, lists)
    notes = [f"sentinel; starting at frame {start}: {sentinel}"] if sentinel else []
    kept: list[str] = []
    for index in range(start, len(texts)):
        text = texts[index]
        if text is None:
            notes.append(f"frame {index}: unknown (no function, no module); skipped")
        elif (pattern := _first_match(text, lists.irrelevant)) is not None:
            notes.append(f"frame {index}: irrelevant; skipped: {text} (matches {pattern.pattern})")
        elif kept and kept[-1] == text:
            notes.append(f"frame {index}: repeats the previous frame; skipped: {text}")
        else:
            kept.append(text)
            if _first_match(text, lists.prefix) is None:
                notes.append(f"frame {index}: not a prefix; stop: {text}")
                break
            notes.append(f"frame {index}: prefix; continue: {text}")
            if len(kept) >= max_frames:
                notes.append(f"{max_frames} prefix frames; stop")
                break
    if not kept:
        notes.append("no relevant frame: the signature has no frames")
    return Walk(tuple(kept), tuple(notes))


def top_frames(stacks: Iterable[Stack], n: int = MAX_FRAMES, events: Iterable[Event] = ()) -> list[str]:
    """The signature frames of the crashing stack (kept for callers of the sig1 API)."""
    return list(walk(crashing(stacks, events), max_frames=n).frames)


# ------------------------------------------------------------------------ signal name

def signal_name(events: Iterable[Event]) -> str | None:
    """The fatal signal the bundle reports (SIGBUS ...), from the first event that names one."""
    for e in events:
        if e.kind not in SIGNAL_KINDS:
            continue
        signo = e.data.get("signo")
        if isinstance(signo, int) and signo > 0:
            import signal as _signal  # here: the signal module builds its enums when imported

            try:
                return _signal.Signals(signo).name
            except ValueError:
                return f"signal{signo}"
        for key in ("name", "signal"):
            value = e.data.get(key)
            if isinstance(value, str) and value.startswith("SIG") and value[3:].isalpha():
                return value
    return None


# ------------------------------------------------------------------- all-rank grouping

_RANK_IN_PATH = re.compile(r"rank[_-]?(\d+)", re.I)
_TORCHRUN_LOG = re.compile(r"attempt_\d+/(\d+)/(?:stderr|stdout|error)")
HANG_ORIGINS = ("py-spy", "faulthandler", "gdb")


@dataclass(frozen=True, slots=True)
class StackGroup:
    """Ranks whose main threads stand in the same place (frames compared after normalizing)."""

    frames: tuple[str, ...]       # normalized, innermost first
    ranks: tuple[int, ...]
    stacks: tuple[Stack, ...]     # one per rank, in rank order
    where: str                    # the innermost frame that says something, e.g. `fr_hang.load_batch`


def rank_of(stack: Stack) -> int | None:
    """The stack's rank: from the launcher prefix, else from the file it came from
    (`pyspy/rank3.txt`, torchrun's `attempt_0/3/stderr.log`)."""
    if stack.rank is not None:
        return stack.rank
    m = _RANK_IN_PATH.search(stack.ref.path) or _TORCHRUN_LOG.search(stack.ref.path)
    return int(m.group(1)) if m else None


_GDB_FIRST_THREAD = re.compile(r"^(?:Thread )?1\b")


def _is_main_thread(stack: Stack) -> bool:
    """The main thread's stack ends in the program's `<module>` (a worker thread's in threading's
    bootstrap); gdb, which shows native frames only, numbers the main thread 1."""
    py = [f for f in stack.frames if f.language == "python"]
    if py:
        return py[-1].function == "<module>"
    return stack.origin == "gdb" and bool(stack.thread) and bool(_GDB_FIRST_THREAD.match(stack.thread))


def main_stacks(stacks: Iterable[Stack]) -> dict[int, Stack]:
    """Per rank, the main thread's stack from a hang dump (py-spy first, then faulthandler, gdb)."""
    best: dict[int, tuple[int, Stack]] = {}
    for s in stacks:
        if s.origin not in HANG_ORIGINS or not _is_main_thread(s):
            continue
        rank = rank_of(s)
        if rank is None:
            continue
        order = HANG_ORIGINS.index(s.origin)
        if rank not in best or order < best[rank][0]:
            best[rank] = (order, s)
    return {r: s for r, (_, s) in sorted(best.items())}


def _python_key(stack: Stack, depth: int) -> tuple[str, ...]:
    """Python frames only: a native print (--native) of the same place then groups with a plain one."""
    frames = [f for f in stack.frames if f.language == "python"] or list(stack.frames)
    return tuple(t for t in (normalize(f) for f in frames[:depth]) if t)


def _where(stack: Stack, lists: FrameLists) -> str:
    """The innermost frame that says what the thread does: Python first, else native code
    that is neither a wait primitive nor irrelevant."""
    for language in ("python", "native"):
        for f in stack.frames:
            text = normalize(f) if f.language == language else None
            if text and not _first_match(text, lists.irrelevant) and not _first_match(text, lists.idle):
                return text
    texts = [normalize(f) for f in stack.frames]
    return next((t for t in texts if t), "?")


def group_by_stack(stacks: Iterable[Stack], depth: int = 6) -> list[StackGroup]:
    """The main thread of every rank, grouped by identical (normalized) top frames; the biggest
    group first, so "7 ranks wait in all_reduce, rank 3 is in save_checkpoint" reads off the list."""
    groups: dict[tuple[str, ...], list[tuple[int, Stack]]] = {}
    for rank, s in main_stacks(stacks).items():
        groups.setdefault(_python_key(s, depth), []).append((rank, s))
    lists = frame_lists() if groups else None
    out = [StackGroup(key, tuple(r for r, _ in members), tuple(s for _, s in members), _where(members[0][1], lists))
           for key, members in groups.items()]
    return sorted(out, key=lambda g: (-len(g.ranks), g.ranks))


def traceback_of(stacks: Iterable[Stack], e: Event) -> Stack | None:
    """The Python traceback that ends in this exception line: the last one printed before it in
    the same file."""
    before = [s for s in stacks if s.origin == "traceback" and s.ref.path == e.ref.path
              and (s.ref.line or 0) <= (e.ref.line or 0)]
    return max(before, key=lambda s: s.ref.line or 0) if before else None
