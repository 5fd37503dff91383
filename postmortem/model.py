"""The model: small frozen dataclasses shared by every stage.

Data flows one way: bundle -> parsers -> timeline -> classify -> report.  Parsers
turn text into these objects once; nothing downstream re-parses text.  Every
object keeps a `Ref` to the artifact and line (or byte offset) it came from, so
any claim the tool makes can point at its evidence.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Mapping


@dataclass(frozen=True, slots=True)
class Ref:
    """Where a claim comes from: a line of a text artifact, or a byte offset in a binary one."""

    path: str
    line: int | None = None
    offset: int | None = None
    text: str = ""  # the cited line as read (launcher wrapper included), for the report
    record: str = ""  # a record inside a structured file (a Flight Recorder dump's `entries[12]`)

    def describe(self) -> str:
        if self.record:
            return f"{self.path}#{self.record}"
        if self.line is not None:
            return f"{self.path}:{self.line}"
        if self.offset is not None:
            return f"{self.path}@{self.offset:#x}"
        return self.path


class ClockKind(str, Enum):
    """What a source's own clock reading means (before the timeline resolves it)."""

    WALL = "wall"            # a wall-clock time with a known zone (aware datetime)
    WALL_LOCAL = "wall_local"  # a wall-clock time printed in an unknown local zone (naive datetime)
    BOOT = "boot"            # seconds since this host booted (kernel printk clock)
    DELTA = "delta"          # seconds since the previous line of the same file (dmesg -d / -H)
    RELATIVE = "relative"    # seconds since some process-local origin (NCCL TRACE ms)


@dataclass(frozen=True, slots=True)
class Stamp:
    """A time exactly as one source printed it.

    `wall` is a datetime (aware for WALL, naive for WALL_LOCAL); `seconds` is used for
    BOOT, DELTA and RELATIVE.  `year_known` is False for formats that omit the year
    (syslog `Mon DD`, torch `MMDD`); the timeline fills it in from a dated source.
    """

    clock: ClockKind
    wall: datetime | None = None
    seconds: float | None = None
    year_known: bool = True
    resolution_s: float = 1.0


class Basis(str, Enum):
    """How an event's absolute time was obtained; anything but MEASURED is inferred."""

    MEASURED = "measured"      # the source printed a wall time with a known zone
    CONVERTED = "converted"    # computed from the source's clock (boot time + printk seconds, assumed zone)
    ANCHORED = "anchored"      # placed by matching the same physical event in another source
    MTIME = "file-mtime"       # taken from a file's modification time
    ORDER_ONLY = "order-only"  # no time at all: only its order within its artifact is known


@dataclass(frozen=True, slots=True)
class When:
    at: datetime | None
    basis: Basis
    uncertainty_s: float | None = None
    note: str = ""


class Severity(str, Enum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    FATAL = "fatal"


@dataclass(frozen=True, slots=True)
class Event:
    """One thing a source reported, at one line.

    `kind` is a dotted name (`nccl.warn`, `kernel.xid`, `torch.worker_killed`); the
    list of kinds and the `data` keys each carries is in docs/kinds.md.
    """

    kind: str
    text: str
    ref: Ref
    severity: Severity = Severity.INFO
    stamp: Stamp | None = None
    host: str | None = None
    pid: int | None = None
    tid: int | None = None
    rank: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    when: When | None = None  # filled in by the timeline
    seq: int = 0              # global reading order, filled in by the pipeline


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack frame, the same shape whatever printed it (satyr's generic frame)."""

    function: str | None = None   # symbol or Python function name; None when unknown (`??`)
    module: str | None = None     # shared object path (native) or None
    file: str | None = None       # source file (Python file, or C source from debug info)
    line: int | None = None
    address: int | None = None    # absolute pc, where printed
    offset: int | None = None     # offset inside `module` (or inside `function` for sym+off)
    language: str = "native"      # "python" | "native"
    note: str = ""                # `<signal handler called>`, `inlined`, ...


@dataclass(frozen=True, slots=True)
class Stack:
    """A thread's stack as one source printed it; frames innermost first."""

    frames: tuple[Frame, ...]
    origin: str                   # faulthandler | gdb | eu-stack | lldb | core | traceback | ucx | c10 | backtrace_symbols
    ref: Ref
    thread: str | None = None     # the source's own thread label (pthread id, LWP, "Thread 3")
    crashed: bool = False         # the source marked this as the current / faulting thread
    host: str | None = None
    pid: int | None = None
    tid: int | None = None
    rank: int | None = None
    title: str = ""               # header line, e.g. "Fatal Python error: Bus error" or exception text
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fact:
    """Measured state: `shm.size_bytes`, `env.NCCL_P2P_DISABLE`, `core.fault_mapping` ..."""

    name: str
    value: Any
    ref: Ref
    unit: str = ""
    host: str | None = None
    text: str = ""                # human-readable form, e.g. "64M"


class ArtifactStatus(str, Enum):
    OK = "ok"
    SKIPPED = "skipped"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Artifact:
    """Every file seen in a bundle, what it was taken for, and what became of it."""

    path: str                     # path inside the bundle, '/'-separated
    kind: str                     # detected kind: text, core, binary, archive-member, link, ...
    status: ArtifactStatus
    message: str = ""
    parsers: tuple[str, ...] = ()  # parsers that claimed at least one line
    size: int | None = None
    lines: int = 0
    unclaimed: int = 0            # lines that look like a supported format but no parser took
    host: str | None = None       # host the bundle layout assigns (one subfolder per host)
    mtime: datetime | None = None


class Category(str, Enum):
    CONFIG = "config"
    COMMS = "comms"
    HARDWARE = "hardware"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule's claim: a cause, how sure, and the evidence behind it."""

    cause: str
    category: Category
    confidence: float
    rule: str
    summary: str
    evidence: tuple[Ref, ...]
    counter: tuple[str, ...] = ()   # counter-evidence, in words, with its ref where known
    first_seq: int | None = None    # earliest supporting event in reading order
    first_at: datetime | None = None
    last_at: datetime | None = None
    first_earliest: datetime | None = None  # bounds of first_at from its event's When (None: no bound that way)
    first_latest: datetime | None = None
    discriminator: str = ""         # for signatures: Xid code, signal, NCCL error ...
    role: str = "root"              # root (can be the first failure) | symptom (a consequence)
    strength: str = ""              # strong (one is enough to claim) | weak (needs a second sign), from the registry
    signal: str = ""                # the registered signal id behind it (knowledge/signals.toml, msg.<id>)
    signs: tuple[str, ...] = ()     # independent registered signs a rule combined into this one finding
    culprit_ranks: tuple[int, ...] = ()  # ranks the finding blames when they are not the ranks its lines print
                                         # (a straggler is the rank that did NOT time out)
    advice: str = ""                # a fix the rule derived from what it read (e.g. the release that fixed it)


@dataclass(frozen=True, slots=True)
class LauncherRoot:
    """torchrun's "Root Cause (first observed failure)": the first process its agent saw fail.
    Evidence to weigh, not the answer: in a timeout it is a rank that waited and gave up."""

    ref: Ref
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    exitcode: int | None = None
    signal: str | None = None
    time: str | None = None          # as torchrun printed it (the agent's local time, to the second)
    error_file: str | None = None    # the @record error file, when the rank wrote one
    agrees: bool | None = None       # names the rank the verdict blames (None: the verdict names none)
    note: str = ""                   # how it was weighed, in words


@dataclass(frozen=True, slots=True)
class Verdict:
    category: Category
    cause: str
    confidence: float
    summary: str
    explanation: str
    root: Finding | None
    symptoms: tuple[Finding, ...]
    alternatives: tuple[Finding, ...]
    remediation: tuple[str, ...]
    next_steps: tuple[str, ...]
    counter_evidence: tuple[str, ...]
    signature: str
    trace: tuple[str, ...]
    collect: tuple[str, ...] = ()   # what to gather when the verdict is unknown
    commands: tuple[str, ...] = ()  # next_steps that are shell commands (pasteable)
    steps: tuple[str, ...] = ()     # next_steps in prose
    title: str = ""                 # the cause's title in words (knowledge), for headlines
    launcher_root: LauncherRoot | None = None  # torchrun's first observed failure, weighed
    # An unknown verdict whose evidence points one way without enough to claim: that cause and
    # its support ("" and 0.0 otherwise, and for every claim)
    leaning: str = ""
    leaning_support: float = 0.0


@dataclass(frozen=True, slots=True)
class Case:
    """Everything the parsers read from one bundle: what the classifier sees."""

    name: str
    events: tuple[Event, ...]
    stacks: tuple[Stack, ...]
    facts: tuple[Fact, ...]
    artifacts: tuple[Artifact, ...]


@dataclass(frozen=True, slots=True)
class Analysis:
    """Everything the renderers read."""

    case: Case
    verdict: Verdict
    timeline_notes: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    limits: tuple[str, ...] = ()    # budgets the bundle reached (time, bytes, files), in words
