"""Launchers: what torchrun, DeepSpeed, mp.spawn, mpirun, srun, docker compose and the shell say when a worker dies.

Each family of lines has a start rule in grammars/launcher.lark and a cheap regex in
FAMILIES that picks it.  Lines are one-liners except torchrun's ChildFailedError table,
which is read as a block (one `launcher.child_failed` event per `[N]:` entry).

Exit codes: negative = killed by that signal number (torch, DeepSpeed, Python's
subprocess); the shell and srun print the strsignal(3) text instead.  Both are mapped
to a signal name with the tables below (Linux numbering, whatever the analysing host).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from lark import Transformer, v_args

from postmortem.grammar import load
from postmortem.model import ClockKind, Severity, Stamp
from postmortem import signals
from postmortem.parsers.base import Line, LineParser
from postmortem.parsers.keywords import any_word
from postmortem.parsers.wrappers import COMPOSE_CONTAINER

SIGNALS = signals.NAMES
# strsignal(3) texts (glibc) as bash, dash, srun and mpirun print them.
STRSIGNALS = {t: n for t, n in signals.TEXTS.items() if t != "Floating-point exception"}

_STRSIGNAL_ALTERNATION = "|".join(re.escape(s) for s in STRSIGNALS)

# (start rule, regex that selects it).  A line may select several; the first parse wins.
FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # `[N]:` opens a table too: the lines above it may have gone to the traceback parser.
    ("table_line", re.compile(r"ChildFailedError:|^\S+ FAILED\s*$|^(?:Other )?Failures:|^Root Cause|^\[\d+\]:\s*$")),
    ("agent_line", re.compile(
        r"closing signal SIG|via signal SIG|failed \(exitcode: |death signal, shutting down"
        r"|\] Killing subprocess \d|\] exits with return code = ")),
    ("spawn_line", re.compile(r"ProcessExitedException: process \d")),
    ("mpi_line", re.compile(r"^mpirun noticed that process|^Primary job +terminated")),
    ("slurm_line", re.compile(r"^srun: error: [^:]+: tasks? [\d,-]+: |^slurmstepd(?:-\S+)?: error: (?:\*\*\* |Detected )")),
    ("shell_job", re.compile(rf"^[\w./-]+: line \d+: +\d+ (?:{_STRSIGNAL_ALTERNATION})")),
    ("shell_bare", re.compile(rf"^(?:{_STRSIGNAL_ALTERNATION})(?: \(core dumped\))?\s*$")),
    ("ray_line", re.compile(r"^\(raylet\) A worker died or was killed")),
    ("compose_exit", re.compile(rf"^{COMPOSE_CONTAINER} exited with code \d{{1,3}}\s*$")),
    ("subprocess_line", re.compile(r"^(?:subprocess\.)?CalledProcessError: Command '.*' died with <Signals\.SIG")),
    # a logger's own prefix may precede Lightning's message: it is read from `body` on
    ("lightning_line", re.compile(r"(?P<body>(?:\[rank: \d+\] )?Child process with PID \d+ terminated with code -?\d+\.)")),
)

# Lines a launcher prints while it starts the job: (launcher, regex with a `stamp` group,
# strptime format of the stamp or "glog").  The first one of a file opens the job's
# window (job.py); DeepSpeed's `process N spawned` line also ties a pid to its local rank.
STARTS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # torchrun's own module logs only while it starts (the OMP_NUM_THREADS banner, its config);
    # elastic/ lines also come mid-run (restarts, failures) and would open the window late.
    ("torchrun", re.compile(r"^(?P<stamp>[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+) +(?P<pid>\d+) "
                            r"torch/distributed/(?:run\.py:\d+\]|launcher/api\.py:\d+\] Starting elastic_operator)"),
     "glog"),
    ("deepspeed", re.compile(r"^\[(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\] \[[A-Z]+\] "
                             r"\[(?:launch|runner|launcher_helper)\.py:\d+:\w+\]"), "%Y-%m-%d %H:%M:%S,%f"),
    ("ray", re.compile(r"^(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\s+INFO \S+ -- "
                       r"(?:Started a local Ray instance|Connecting to existing Ray cluster)"), "%Y-%m-%d %H:%M:%S,%f"),
    # `ray job submit` (ray/dashboard/modules/job/cli.py, cli_logger.success): the submission
    # is where the job begins; logged with a time when stdout is not a terminal.
    ("ray", re.compile(r"^(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\s+SUCC \S+ -- "
                       r"Job '[^']+' submitted successfully\s*$"), "%Y-%m-%d %H:%M:%S,%f"),
)
# Lines a launcher prints when the job as a whole has ended: (launcher, regex with `stamp`
# and `status` groups, strptime format).  They close the job's window (job.py END_KINDS).
ENDS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # `ray job submit` once the job is over (ray/dashboard/modules/job/cli.py _log_job_status:
    # "Job '{job_id}' succeeded" | "... failed" | "... was stopped"), e.g. in Ray's RayJob
    # quick start: `2023-08-21 17:08:46,040 SUCC cli.py:34 -- Job 'rayjob-sample-5ntcr' succeeded`.
    ("ray", re.compile(r"^(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\s+[A-Z]+ \S+ -- "
                       r"Job '(?P<job>[^']+)' (?P<status>succeeded|failed|was stopped)\s*$"), "%Y-%m-%d %H:%M:%S,%f"),
)
_SPAWNED = re.compile(r"\] process (?P<pid>\d+) spawned with command: (?P<cmd>.*)$")
_LOCAL_RANK = re.compile(r"--local_rank=(\d+)")

# Lines a ChildFailedError table may continue with besides its own fields: the Python
# traceback an `@record`ed worker wrote, indented by two spaces (and `  ` blank lines).
_TABLE_CONTINUATION = re.compile(r"^  ")

_SEVERITY: dict[str, Severity] = {
    "launcher.child_failed": Severity.ERROR,
    "launcher.exit": Severity.ERROR,
    "launcher.failed": Severity.ERROR,
    "launcher.cancelled": Severity.ERROR,
    "launcher.oom_kill": Severity.ERROR,
    "launcher.sigterm": Severity.WARNING,
    "launcher.signal_received": Severity.WARNING,
}


def signal_of_exitcode(code: int | None) -> str | None:
    """-7 -> SIGBUS; 0 and positive codes are plain exits."""
    if code is None or code >= 0:
        return None
    return SIGNALS.get(-code, f"SIG{-code}")


def _month_day_stamp(mmdd: str, hms: str) -> Stamp | None:
    """glog `W1129 08:28:35.908000`: no year, local zone, millisecond precision."""
    for year in (1900, 1904):  # 1904 only so that a Feb 29 line still gets a stamp
        try:
            wall = datetime.strptime(f"{year}{mmdd} {hms}", "%Y%m%d %H:%M:%S.%f")
        except ValueError:
            continue
        return Stamp(ClockKind.WALL_LOCAL, wall=wall, year_known=False, resolution_s=1e-3)
    return None


def _wall_stamp(text: str, fmt: str, resolution: float) -> Stamp | None:
    try:
        return Stamp(ClockKind.WALL_LOCAL, wall=datetime.strptime(text, fmt), resolution_s=resolution)
    except ValueError:
        return None


@v_args(inline=True)
class _ToRecord(Transformer):
    """Turn each parsed line into a plain dict: `what` says which line it was."""

    # -- envelopes of agent lines
    def glog_prefix(self, head, hms, pid, source, _line):
        return {"stamp": _month_day_stamp(str(head)[1:], str(hms)), "agent_pid": int(pid),
                "source": str(source)}

    def agent_line(self, prefix, msg):
        return {**msg, **prefix}

    def stdlib_line(self, _level, logger, msg):
        return {**msg, "logger": str(logger)}

    def asctime_line(self, asctime, logger, _level, msg):
        return {**msg, "logger": str(logger),
                "stamp": _wall_stamp(str(asctime), "%Y-%m-%d %H:%M:%S,%f", 1e-3)}

    def deepspeed_line(self, asctime, _level, source, msg):
        return {**msg, "source": str(source),
                "stamp": _wall_stamp(str(asctime), "%Y-%m-%d %H:%M:%S,%f", 1e-3)}

    def bare_line(self, msg):
        return msg

    # -- agent messages
    def sending_signal(self, pid, signame):
        return {"what": "sigterm", "launcher": "torchrun", "pid": int(pid), "signal": str(signame)}

    def spawn_terminating(self, pid, signame):
        return {"what": "sigterm", "launcher": "spawn", "pid": int(pid), "signal": str(signame)}

    def agent_failed(self, code, local_rank, pid, binary):
        return {"what": "exit", "launcher": "torchrun", "exitcode": int(code),
                "local_rank": int(local_rank), "pid": int(pid), "binary": str(binary)}

    def death_signal(self, signo):
        return {"what": "signal_received", "signo": int(signo), "signal": SIGNALS.get(int(signo))}

    def killing_subprocess(self, pid):
        return {"what": "sigterm", "launcher": "deepspeed", "pid": int(pid)}

    def deepspeed_exit(self, cmdlist, code):
        m = re.search(r"--local_rank=(\d+)", cmdlist)
        return {"what": "exit", "launcher": "deepspeed", "exitcode": int(code), "cmd": str(cmdlist),
                "local_rank": int(m.group(1)) if m else None}

    # -- torch.multiprocessing.spawn
    def spawn_line(self, _exc, index, end):
        return {**end, "what": "exit", "launcher": "spawn", "local_rank": int(index)}

    def spawn_signal(self, signame):
        return {"signal": str(signame)}

    def spawn_exitcode(self, code):
        return {"exitcode": int(code)}

    # -- ChildFailedError table
    def table_header(self, _exc):
        return {"what": "table_header"}

    def table_banner(self, name):
        return {"what": "table_banner", "script": str(name)}

    def failures_section(self):
        return {"what": "section", "root": False}

    def root_section(self, _note=None):
        return {"what": "section", "root": True}

    def root_note(self):
        return None

    def no_other_failures(self):
        return {"what": "border"}

    def border(self, _border):
        return {"what": "border"}

    def entry_start(self, index):
        return {"what": "entry", "index": int(index)}

    def time_field(self, text):
        return {"what": "field", "time": str(text)}

    def host_field(self, host):
        return {"what": "field", "host": str(host)}

    def rank_field(self, rank, local_rank):
        return {"what": "field", "rank": int(rank), "local_rank": int(local_rank)}

    def exitcode_field(self, code, pid, signame=None):
        fields = {"what": "field", "exitcode": int(code), "pid": int(pid)}
        if signame is not None:
            fields["signal"] = str(signame)
        return fields

    def error_file_field(self, path):
        return {"what": "field", "error_file": None if path == "<N/A>" else str(path)}

    def traceback_field(self, text):
        return {"what": "field", "traceback": str(text)}

    # -- mpirun
    def mpi_line(self, rank, pid, node, end):
        return {**end, "what": "exit", "launcher": "mpirun", "rank": int(rank), "pid": int(pid),
                "host": str(node)}

    def mpi_signal(self, signo, text):
        return {"signo": int(signo), "signal": SIGNALS.get(int(signo)) or STRSIGNALS.get(str(text))}

    def mpi_status(self, code):
        return {"exitcode": int(code)}

    def mpi_nonzero(self, count, _word):
        return {"what": "failed", "launcher": "mpirun", "count": int(count)}

    # -- Slurm
    def srun_task(self, host, _word, tasks, status):
        single = str(tasks).isdecimal()
        return {**status, "what": "exit", "launcher": "srun", "host": str(host), "tasks": str(tasks),
                "rank": int(tasks) if single else None}

    def status_signal(self, text, core=None):
        return {"signal": STRSIGNALS.get(str(text)), "core_dumped": core is not None}

    def status_exit(self, code):
        return {"exitcode": int(code)}

    def status_oom(self):
        return {"oom": True}

    def step_cancelled(self, _stepd, kind, step, host, at, reason=None):
        return {"what": "cancelled", "launcher": "slurm", "scope": str(kind).lower(), "step": str(step),
                "host": str(host), "at": str(at), "reason": reason,
                "stamp": _wall_stamp(str(at), "%Y-%m-%dT%H:%M:%S", 1.0)}

    def cancel_reason(self, *words):
        return " ".join(str(w) for w in words)

    def step_oom(self, _stepd, count, _oom, _events, step, _rest=None):
        return {"what": "oom_kill", "launcher": "slurm", "count": int(count),
                "step": str(step).split("=")[-1].split()[-1]}

    # -- shell
    def shell_job(self, script, script_line, pid, text, *rest):
        core = any(str(t) == "(core dumped)" for t in rest)
        command = next((str(t) for t in rest if t.type == "REST"), None)
        return {"what": "exit", "launcher": "shell", "script": str(script), "script_line": int(script_line),
                "pid": int(pid), "signal": STRSIGNALS.get(str(text)), "core_dumped": core,
                "command": command}

    def shell_bare(self, text, core=None):
        return {"what": "exit", "launcher": "shell", "signal": STRSIGNALS.get(str(text)),
                "core_dumped": core is not None}

    # -- Ray
    def ray_line(self, rest):
        return {"what": "exit", "launcher": "ray", "detail": "A worker died or was killed " + str(rest)}

    def compose_exit(self, container, code):
        # a container's exit status is its process's: 128+N when signal N killed it (docker run reference)
        code = int(code)
        signal = SIGNALS.get(code - 128) if 128 < code <= 128 + 64 else None
        return {"what": "exit", "launcher": "compose", "host": str(container), "exitcode": code, "signal": signal}

    # -- CPython subprocess: the launcher's child died of a signal
    def subprocess_line(self, _exc, command, signals_repr, _signo):
        return {"what": "exit", "launcher": "subprocess", "signal": str(signals_repr).split(".", 1)[1],
                "command": str(command)[1:-1]}

    # -- Lightning's child-process observer: the rank prefix is the local rank (i + 1)
    def lightning_msg(self, pid, code, _rest=None):
        return {"what": "exit", "launcher": "lightning", "pid": int(pid), "exitcode": int(code)}

    def lightning_ranked(self, local_rank, msg):
        return {**msg, "local_rank": int(local_rank)}

    def lightning_line(self, msg):
        return msg


_TRANSFORMER = _ToRecord()


def _parse(start: str, text: str) -> dict | None:
    """The record for `text` under `start`, or None when the grammar rejects it."""
    try:
        return load("launcher", start=start, transformer=_TRANSFORMER).parse(text)
    except Exception:  # noqa: BLE001 - lark errors and transformer errors alike decline the line
        return None


@dataclass
class _Entry:
    """One `[N]:` entry of a ChildFailedError table while it is being read."""

    first: Line
    root: bool
    script: str | None
    fields: dict = field(default_factory=dict)
    cite: Line | None = None          # the exitcode line: the evidence for the death
    traceback: list[str] = field(default_factory=list)


@dataclass
class _Table:
    root: bool = False
    script: str | None = None
    entry: _Entry | None = None


class LauncherParser(LineParser):
    name = "launcher"
    order = 70
    prefilter = re.compile("|".join(f"(?:{rx.pattern})" for _, rx in FAMILIES)
                           + "".join(f"|(?:{re.sub(r'[(][?]P<[a-z]+>', '(?:', rx.pattern)})" for _, rx, _ in STARTS + ENDS))
    # Necessary conditions for the prefilter, cheap to test (see LineParser.gate_start).
    gate_start = re.compile(rf"\S+ FAILED|(?:Other )?Failures:|Root Cause|\[\d+\]:|mpirun noticed|Primary job|srun: error|"
                            rf"slurmstepd|[\w./-]+: line \d+: |(?:{_STRSIGNAL_ALTERNATION})|\(raylet\)"
                            r"|[IWEF]\d{4} |\[?\d{4}-\d\d-\d\d |CalledProcessError: ")
    gate_words = any_word(["ChildFailedError:", "closing signal SIG", "via signal SIG", "failed (exitcode: ",
                           "death signal, shutting down", "] Killing subprocess", "] exits with return code = ",
                           "ProcessExitedException: process", " exited with code ",
                           "CalledProcessError: Command ", "Child process with PID "])

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        self._table: _Table | None = None
        self._started = False  # this file's launcher start line was seen

    @property
    def busy(self) -> bool:
        return self._table is not None

    def feed(self, line: Line) -> bool:
        if self._table is not None:
            if self._feed_table(line):
                return True
            self._close_table()
        for start, rx in FAMILIES:
            m = rx.search(line.text)
            if m is None:
                continue
            record = _parse(start, line.text[m.start("body"):] if "body" in rx.groupindex else line.text)
            if record is not None:
                self._handle(line, record)
                return True
        return self._start_line(line)

    def _start_line(self, line: Line) -> bool:
        for launcher, rx, fmt in ENDS:
            m = rx.match(line.text)
            if m is not None:
                self.sink.event(line, "launcher.finished", Severity.INFO, stamp=self._start_stamp(m, fmt),
                                launcher=launcher, status=m["status"], job=m["job"])
                return True
        for launcher, rx, fmt in STARTS:
            m = rx.match(line.text)
            if m is None:
                continue
            spawned = _SPAWNED.search(line.text)
            if spawned:
                rank = _LOCAL_RANK.search(spawned["cmd"])
                self.sink.event(line, "launcher.spawned", Severity.INFO, stamp=self._start_stamp(m, fmt),
                                pid=int(spawned["pid"]), launcher=launcher,
                                local_rank=int(rank.group(1)) if rank else None)
            if not self._started:
                self._started = True
                agent = m.groupdict().get("pid")
                self.sink.event(line, "launcher.start", Severity.INFO, stamp=self._start_stamp(m, fmt),
                                launcher=launcher, agent_pid=int(agent) if agent else None)
            return True
        return False

    @staticmethod
    def _start_stamp(m: re.Match, fmt: str) -> Stamp | None:
        text = m["stamp"]
        if fmt == "glog":
            mmdd, hms = text[1:].split(" ", 1)
            return _month_day_stamp(mmdd, hms)
        return _wall_stamp(text, fmt, 1e-3)

    def finish(self) -> None:
        self._close_table()

    # -- one-liners
    def _handle(self, line: Line, record: dict) -> None:
        what = record.pop("what")
        if what in ("table_header", "table_banner", "section", "entry", "field", "border"):
            self._table = _Table()
            self._table_record(line, what, record)
            return
        kind = f"launcher.{what}"
        stamp = record.pop("stamp", None)
        pid, rank, host = record.pop("pid", None), record.pop("rank", None), record.pop("host", None)
        if "exitcode" in record and "signal" not in record:
            record["signal"] = signal_of_exitcode(record["exitcode"])
        data = {k: v for k, v in record.items() if v is not None}
        self.sink.event(line, kind, _SEVERITY.get(kind, Severity.INFO), stamp=stamp, pid=pid,
                        rank=rank, host=host, **data)

    # -- the ChildFailedError table
    def _feed_table(self, line: Line) -> bool:
        record = _parse("table_line", line.text)
        if record is not None:
            self._table_record(line, record.pop("what"), record)
            return True
        entry = self._table.entry
        if entry is not None and "traceback" in entry.fields and (
                _TABLE_CONTINUATION.match(line.text) or not line.text.strip()):
            entry.traceback.append(line.text[2:])
            return True
        return False

    def _table_record(self, line: Line, what: str, record: dict) -> None:
        table = self._table
        if what == "table_header":
            self._flush_entry()
            self.sink.event(line, "launcher.failed", Severity.ERROR, launcher="torchrun")
        elif what == "table_banner":
            table.script = record["script"]
        elif what == "section":
            self._flush_entry()
            table.root = record["root"]
        elif what == "border":
            self._flush_entry()
        elif what == "entry":
            self._flush_entry()
            table.entry = _Entry(first=line, root=table.root, script=table.script)
        elif what == "field" and table.entry is not None:
            table.entry.fields.update(record)
            if "exitcode" in record:
                table.entry.cite = line

    def _flush_entry(self) -> None:
        entry = self._table.entry if self._table else None
        if entry is None:
            return
        self._table.entry = None
        f = dict(entry.fields)
        if "exitcode" in f and "signal" not in f:
            f["signal"] = signal_of_exitcode(f["exitcode"])
        if entry.traceback:
            f["traceback"] = "\n".join([f["traceback"], *entry.traceback]).rstrip()
            last = [t.strip() for t in entry.traceback if t.strip()]
            if last:
                f["exception"] = last[-1]
        stamp = _wall_stamp(f["time"], "%Y-%m-%d_%H:%M:%S", 1.0) if "time" in f else None
        pid, rank, host = f.pop("pid", None), f.pop("rank", None), f.pop("host", None)
        data = {k: v for k, v in f.items() if v is not None}
        data.update(root=entry.root, launcher="torchrun")
        if entry.script:
            data["script"] = entry.script
        self.sink.event(entry.cite or entry.first, "launcher.child_failed", Severity.ERROR,
                        stamp=stamp, host=host, pid=pid, rank=rank, **data)

    def _close_table(self) -> None:
        if self._table is not None:
            self._flush_entry()
            self._table = None
