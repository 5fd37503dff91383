"""Stacks and core facts as the HTML report shows them.

The crashing thread comes first (the ladder in `postmortem.stacks.crashing`), then the
other threads a source marked as crashed, then the rest, folded.  Frames are grouped
into runs by what they belong to (Python, NCCL, CUDA, other native code), so a reader
sees at a glance where the fault crossed from Python into a library.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from postmortem.model import Fact, Frame, Stack
from postmortem.stacks import crashing

MAX_STACKS = 60            # past this, stacks are counted, not shown
MAX_FRAMES = 80            # per stack

_CUDA = re.compile(r"cuda|cublas|cudnn|cufft|curand|cusparse|nvrtc|nvjitlink|cupti|libnvidia", re.I)
_NCCL = re.compile(r"nccl", re.I)

# The core facts worth a line each, in reading order, with their labels.
CORE_FACTS = (
    ("core.signal", "signal"), ("core.si_code", "si_code"), ("core.fault_addr", "fault address"),
    ("core.fault_mapping", "mapping"), ("core.fault_mapping_offset", "offset in mapping"),
    ("core.fault_how", "fault from"), ("core.pid", "pid"), ("core.tid", "crashing tid"),
    ("core.threads", "threads"), ("core.comm", "comm"), ("core.cmdline", "command line"),
    ("core.exe", "executable"), ("core.arch", "arch"), ("core.mappings", "mappings"),
    ("core.build_ids", "build-ids"), ("core.truncated", "truncated"),
)


@dataclass(frozen=True)
class FrameRun:
    group: str                 # python | nccl | cuda | native
    frames: list[tuple[int, Frame]]   # (index innermost-first, frame)


@dataclass(frozen=True)
class StackView:
    stack: Stack
    anchor: str
    is_primary: bool
    runs: list[FrameRun]
    cut_frames: int


@dataclass(frozen=True)
class StacksView:
    shown: list[StackView]     # primary and crashed stacks, open
    folded: list[StackView]    # other threads
    cut: int                   # stacks not shown at all


@dataclass(frozen=True)
class CoreView:
    artifact: str
    facts: list[tuple[str, str]]   # (label, shown value)
    fault_line: str                # "0x7ff41cabd000 → /dev/shm/torch_12888_0 + 64.0 MiB", or ""


def frame_group(f: Frame) -> str:
    if f.language == "python":
        return "python"
    name = f"{f.module or ''} {f.function or ''}"
    if _NCCL.search(name):
        return "nccl"
    if _CUDA.search(name):
        return "cuda"
    return "native"


def group_frames(frames: Iterable[Frame]) -> list[FrameRun]:
    runs: list[FrameRun] = []
    for i, f in enumerate(frames):
        group = frame_group(f)
        if runs and runs[-1].group == group:
            runs[-1].frames.append((i, f))
        else:
            runs.append(FrameRun(group, [(i, f)]))
    return runs


def build_stacks(stacks: tuple[Stack, ...]) -> StacksView:
    primary = crashing(stacks)
    ordered = sorted(stacks, key=lambda s: (s is not primary, not s.crashed))
    views = [_view(s, n, s is primary) for n, s in enumerate(ordered[:MAX_STACKS], start=1)]
    shown = [v for v in views if v.is_primary or v.stack.crashed]
    folded = [v for v in views if not (v.is_primary or v.stack.crashed)]
    return StacksView(shown, folded, max(0, len(ordered) - MAX_STACKS))


def _view(s: Stack, number: int, is_primary: bool) -> StackView:
    frames = s.frames[:MAX_FRAMES]
    return StackView(s, f"stack-{number}", is_primary, group_frames(frames), len(s.frames) - len(frames))


def describe_frame(f: Frame) -> str:
    """One frame as a line: function, where it lives, and the source position when known."""
    parts = [f.function or "??"]
    if f.module:
        module = f.module.rsplit("/", 1)[-1]
        parts.append(f"in {module}" + (f"+{f.offset:#x}" if f.offset is not None else ""))
    if f.file:
        parts.append(f"at {f.file}" + (f":{f.line}" if f.line is not None else ""))
    if f.address is not None:
        parts.append(f"[{f.address:#x}]")
    if f.note:
        parts.append(f"({f.note})")
    return " ".join(parts)


def build_cores(facts: tuple[Fact, ...]) -> list[CoreView]:
    """One block per core file, from the `core.*` facts the core reader measured."""
    by_artifact: dict[str, dict[str, Fact]] = {}
    for f in facts:
        if f.name.startswith("core."):
            by_artifact.setdefault(f.ref.path, {}).setdefault(f.name, f)
    return [_core_view(path, named) for path, named in by_artifact.items()]


def _core_view(path: str, named: dict[str, Fact]) -> CoreView:
    shown = [(label, _fact_text(named[name])) for name, label in CORE_FACTS if name in named]
    fault_line = ""
    if "core.fault_addr" in named:
        fault_line = _fact_text(named["core.fault_addr"])
        if "core.fault_mapping" in named:
            fault_line += f" → {_fact_text(named['core.fault_mapping'])}"
            if "core.fault_mapping_offset" in named:
                fault_line += f" + {_fact_text(named['core.fault_mapping_offset'])}"
        else:
            fault_line += " → no file-backed mapping"
    return CoreView(path, shown, fault_line)


def _fact_text(f: Fact) -> str:
    text = f.text or str(f.value)
    return text if len(text) <= 300 else text[:299] + "…"
