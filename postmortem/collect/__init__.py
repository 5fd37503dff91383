"""`postmortem collect`: gather what a crash post-mortem needs from this node into a bundle.

Everything is read-only and best-effort: each item is one file in the bundle, made by one or
more steps (a command, a file read, a symlink read).  A missing tool or file is recorded in
`manifest.json` and never stops the run; every command has a timeout and runs without a shell
(the only `sh -c` is the fixed string `ulimit -a`, a shell builtin).

Output is a directory (`--out DIR`) or a gzip tarball (`--out FILE.tar.gz`) holding the same
layout under one top-level folder named after the tarball.  The manifest says, per file: the
command, exit code, duration, start time (ISO with offset) and status (ok | missing | timeout |
error); `not_gathered` and stderr name what could not be gathered.  Every text written is
redacted (redact.py); cores are copied only when named with --core, never through a link, and
the manifest warns that they hold process memory.  `clock.json` holds a clock triple
(clock.py).  Modules: steps (units of work), process (env, limits, cgroup), job (logs,
NCCL_DEBUG_FILE, Flight Recorder dumps, py-spy), coredumps (`--core PID|coredumpctl`: cores
systemd-coredump holds), redact, clock.

This module must never import torch: it runs on the node that just crashed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import socket
import stat
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path


from postmortem import __version__
from postmortem.collect.clock import clock_triple
from postmortem.collect.redact import REDACTED, is_secret_name, redact_text, redact_value  # noqa: F401

from postmortem.collect.process import ENV_PREFIXES, process_items, read_environ  # noqa: F401
from postmortem.collect.steps import (  # noqa: F401  (the steps are part of this module's interface)
    DEFAULT_TIMEOUT_S, Item, Produce, Read, Readlink, Run, StepResult, decode, now_iso, quiet_env,
)

GDB_TIMEOUT_S = 180.0
CORE_WARNING = ("a core holds the process's memory: its environment, tokens, keys, passwords and "
                "data, secrets included; share the bundle only where those may go")

SINCE_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
SINCE_SPAN = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>s|m|min|h|d)$")


# ---------------------------------------------------------------------------------------------
# Items: one bundle file each.

STATUS_RANK = {"ok": 0, "missing": 1, "timeout": 2, "error": 3}


def base_items(since: str | None = None) -> list[Item]:
    """What every run collects, in the order it is collected; the kernel log from `since` on."""
    window = ("--since", since) if since else ()
    return [
        Item("dmesg.txt", (Run(("dmesg", *window)),)),
        Item("dmesg_T.txt", (Run(("dmesg", "-T", *window)),)),
        Item("proc_stat_btime.txt", (Read("/proc/stat", only="btime "),)),
        Item("uptime_s.txt", (Run(("uptime", "-s")),)),
        Item("df_shm.txt", (Run(("df", "-h", "/dev/shm")),)),
        Item("df_B1_shm.txt", (Run(("df", "-B1", "/dev/shm")),)),
        Item("mount.txt", (Run(("mount",)),)),
        Item("free.txt", (Run(("free", "-h")),)),
        Item("meminfo.txt", (Read("/proc/meminfo"),)),
        Item("ulimit.txt", (Run(("sh", "-c", "ulimit -a")),)),
        Item("nvidia-smi-q.txt", (Run(("nvidia-smi", "-q"), timeout_s=60.0),)),
        Item("nvidia-smi-topo.txt", (Run(("nvidia-smi", "topo", "-m")),)),
        Item("timezone.txt", (Read("/etc/timezone"), Readlink("/etc/localtime"),
                              Run(("date", "+%z")), Run(("date", "+%Z"))), labelled=True),
    ]


def since_items(since: str | None) -> list[Item]:
    """Journal and systemd-coredump, limited to `--since` where given."""
    window = ("--since", since) if since else ()
    return [
        Item("journalctl_k.txt", (Run(("journalctl", "-k", "--no-pager", "-o", "short-iso-precise",
                                       *window)),)),
        Item("coredumpctl_list.txt", (Run(("coredumpctl", "list", "--no-pager", *window)),)),
        Item("coredumpctl_info.txt", (Run(("coredumpctl", "info", "--no-pager", *window)),)),
    ]


# ---------------------------------------------------------------------------------------------
# Cores: copied in as they are, plus `gdb -batch -ex 'thread apply all bt'` when possible.

def core_items(cores: list[str], exe: str | None, pid: int | None, workdir: Path) -> list[Item]:
    """Core files named by path; `--core PID` and `--core coredumpctl` are systemd-coredump's
    (coredumps.py)."""
    items: list[Item] = []
    for core in cores:
        if core == coredumps.ALL_CORES or (core.isdigit() and not Path(core).exists()):
            continue
        name = Path(core).name
        items.append(Item(f"cores/{name}", (CopyFile(core, CORE_WARNING),)))
        items.append(Item(f"gdb_bt_{safe_name(name)}.txt", (GdbBacktrace(core, exe, pid, workdir),)))
    return items


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


@dataclass(frozen=True)
class CopyFile:
    """A binary item: the step copies the file itself (see write_item)."""

    path: str
    warning: str = ""

    @property
    def command(self) -> str:
        return f"cp {self.path}"

    def __call__(self) -> StepResult:
        started = now_iso()
        try:
            st = os.lstat(self.path)
        except OSError:
            return StepResult(self.command, "missing", started_at=started, note="no such file")
        if stat.S_ISLNK(st.st_mode):
            return StepResult(self.command, "error", started_at=started,
                              note="a symbolic link: refused (name the core file itself)")
        if not stat.S_ISREG(st.st_mode):
            return StepResult(self.command, "error", started_at=started, note="not a regular file: refused")
        return StepResult(self.command, "ok", "", 0, 0.0, started, self.warning)


@dataclass(frozen=True)
class GdbBacktrace:
    core: str
    exe: str | None
    pid: int | None
    workdir: Path

    @property
    def command(self) -> str:
        return "gdb -batch -ex 'thread apply all bt' EXE CORE"

    def __call__(self) -> StepResult:
        if shutil.which("gdb") is None:
            return StepResult(self.command, "missing", started_at=now_iso(), note="gdb: not found on PATH")
        if not Path(self.core).is_file():
            return StepResult(self.command, "missing", started_at=now_iso(), note="no such core file")
        core = plain_core(self.core, self.workdir)
        exe = self.exe or (f"/proc/{self.pid}/exe" if self.pid else None) or exe_from_core(core)
        if not exe or not Path(exe).exists():
            return StepResult(self.command, "missing", started_at=now_iso(),
                              note=f"executable not found ({exe or 'unknown'}); pass --exe")
        return Run(("gdb", "-batch", "-nx", "-ex", "set pagination off",
                    "-ex", "thread apply all bt", "--", os.path.abspath(exe), os.path.abspath(core)),
                   timeout_s=GDB_TIMEOUT_S, merge_stderr=True)()


def plain_core(core: str, workdir: Path) -> str:
    """gdb cannot read a gzip'ed core: decompress it into the scratch folder first."""
    if not core.endswith(".gz"):
        return core
    target = workdir / Path(core).name[:-3]
    with gzip.open(core, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return str(target)


CORE_GENERATED_BY = re.compile(r"Core was generated by `(?P<cmd>[^']*)'")


def exe_from_core(core: str) -> str | None:
    """The executable named in the core (gdb's 'Core was generated by `python3 x.py`')."""
    result = Run(("gdb", "-batch", "-nx", "--core=" + os.path.abspath(core)), timeout_s=60.0,
                 merge_stderr=True)()
    match = CORE_GENERATED_BY.search(result.output)
    if not match or not match.group("cmd").split():
        return None
    program = match.group("cmd").split()[0]
    return program if os.path.isabs(program) else shutil.which(program)


# ---------------------------------------------------------------------------------------------
# Running items and writing the bundle.

@dataclass
class Record:
    file: str
    command: str
    status: str
    exit_code: int | None
    duration_s: float
    started_at: str
    note: str = ""
    steps: list[dict] = field(default_factory=list)


def run_item(item: Item, folder: Path) -> Record:
    results = [step() for step in item.steps]
    first = results[0]
    worst = max(results, key=lambda r: STATUS_RANK[r.status])
    if not item.labelled:
        write_single(item, first, folder)
        return Record(item.file, first.command, first.status, first.exit_code,
                      round(first.duration_s, 3), first.started_at, first.note)
    text = "".join(f"{r.command}: {line}\n" for r in results if r.status == "ok"
                   for line in r.output.splitlines())
    (folder / item.file).write_text(redact_text(text))
    status = "ok" if any(r.status == "ok" for r in results) else worst.status
    return Record(item.file, "; ".join(r.command for r in results), status, worst.exit_code,
                  round(sum(r.duration_s for r in results), 3), first.started_at,
                  "; ".join(r.note for r in results if r.note),
                  [step_dict(r) for r in results])


def write_single(item: Item, result: StepResult, folder: Path) -> None:
    target = folder / item.file
    target.parent.mkdir(parents=True, exist_ok=True)
    step = item.steps[0]
    if isinstance(step, (CopyFile, coredumps.CoredumpctlDump)):
        if result.status == "ok":
            copy_no_follow(step.path, target)
        return
    if result.status != "missing" or result.output:
        target.write_text(redact_text(result.output))


def copy_no_follow(source: str, target: Path) -> None:
    """Copy a regular file opened without following a link at its last component."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            raise OSError(f"{source}: not a regular file")
        with open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)


def step_dict(result: StepResult) -> dict:
    return {"command": result.command, "status": result.status, "exit_code": result.exit_code,
            "duration_s": round(result.duration_s, 3), "started_at": result.started_at,
            "note": result.note}


def clock_facts() -> dict:
    """The collector's clocks: wall time, and boot time from CLOCK_BOOTTIME (better than btime)."""
    wall = time.time()
    boottime = time.clock_gettime(time.CLOCK_BOOTTIME)
    boot = datetime.fromtimestamp(wall - boottime).astimezone()
    return {"time_epoch_s": round(wall, 6), "clock_boottime_s": round(boottime, 6),
            "boot_at": boot.isoformat(timespec="microseconds"),
            "utc_offset": datetime.now().astimezone().strftime("%z")}


class BadArgument(ValueError):
    pass


SINCE_WORDS = ("today", "yesterday", "now")


def parse_since(since: str | None, now: datetime | None = None) -> str | None:
    """`2h`, `30m`, `1d`, `90s` -> an absolute local time journalctl and dmesg read; an ISO date
    or time, `today` and `yesterday` are passed on; anything else is a usage error."""
    if not since:
        return None
    match = SINCE_SPAN.match(since.strip())
    if not match:
        text = since.strip()
        if text in SINCE_WORDS:
            return text
        try:
            return datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise BadArgument(f"--since {since!r}: use a span (2h, 30m, 1d, 90s), an ISO date or time "
                              f"(2026-01-02 10:00), today or yesterday") from None
    seconds = float(match.group("n")) * SINCE_UNITS[match.group("unit")]
    start = (now or datetime.now()) - timedelta(seconds=seconds)
    return start.strftime("%Y-%m-%d %H:%M:%S")


def check_pid(pid: int | None) -> None:
    if pid is None:
        return
    if pid <= 0 or not Path(f"/proc/{pid}").is_dir():
        raise BadArgument(f"--pid {pid}: no such process on this node")


def collect_into(folder: Path, args: argparse.Namespace, scratch: Path) -> dict:
    since = parse_since(args.since)
    try:
        env = read_environ(args.pid) if args.pid else {}
    except OSError:
        env = {}   # env.txt's own step records why
    stored, core_notes = coredumps.coredump_items(
        args.core or [], since, args.exe, scratch, CORE_WARNING,
        lambda core, exe: GdbBacktrace(core, exe, None, scratch))
    items = (base_items(since) + since_items(since) + process_items(args.pid)
             + core_items(args.core or [], args.exe, args.pid, scratch) + stored
             + job_items(args.log or [], env, args.pid, getattr(args, "hang", False)))
    clock = clock_triple()
    (folder / "clock.json").write_text(json.dumps(clock, indent=2) + "\n")
    started = now_iso()
    records = [run_item(item, folder) for item in items]
    manifest = {
        "postmortem_version": __version__,
        "host": socket.gethostname(),
        "collected_at": started,
        "finished_at": now_iso(),
        "since": args.since,
        "since_resolved": since,
        "pid": args.pid,
        "clock": clock_facts(),
        "clock_triple": "clock.json",
        "items": [vars(r) for r in records],
        "not_gathered": [f"{r.file}: {r.status}" + (f" ({r.note})" if r.note else "")
                         for r in records if r.status != "ok"] + [f"cores from coredumpctl: {n}" for n in core_notes],
        "warnings": [CORE_WARNING] if any(r.file.startswith("cores/") and r.status == "ok"
                                          for r in records) else [],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def is_tarball(out: str) -> bool:
    return out.endswith((".tar.gz", ".tgz"))


def default_out() -> str:
    return f"postmortem-{socket.gethostname()}-{datetime.now().strftime('%Y%m%dT%H%M%S')}"


def tarball_top(target: Path) -> str:
    """The one top-level folder of a tarball: its name without .tar.gz/.tgz."""
    name = target.name
    for suffix in (".tar.gz", ".tgz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return safe_name(name) or "postmortem-bundle"


def write_tarball(folder: Path, target: Path) -> None:
    top = tarball_top(target)
    with tarfile.open(target, "w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            tar.add(path, arcname=f"{top}/{path.relative_to(folder).as_posix()}", recursive=False)


def summarize(manifest: dict, out: str) -> str:
    counts: dict[str, int] = {}
    for item in manifest["items"]:
        counts[item["status"]] = counts.get(item["status"], 0) + 1
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    lines = [f"postmortem collect: wrote {out} ({parts})"]
    lines += [f"  not gathered: {what}" for what in manifest.get("not_gathered", [])]
    lines += [f"  warning: {what}" for what in manifest.get("warnings", [])]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# CLI

def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = "Gather this node's crash evidence (kernel log, shm, limits, env, cores) into a bundle."
    parser.add_argument("--out", metavar="DIR|FILE.tar.gz",
                        help="bundle folder (must be new or empty) or .tar.gz/.tgz file "
                             "(default: ./postmortem-HOST-TIME)")
    parser.add_argument("--since", metavar="SPAN",
                        help="journal/coredump window: 2h, 30m, 1d, 90s, or any journalctl time")
    parser.add_argument("--core", metavar="PATH|PID|coredumpctl", action="append",
                        help="core file to copy in and backtrace with gdb (repeatable); a PID: that "
                             "process's core as systemd-coredump stored it; 'coredumpctl': every core it "
                             f"stored in the --since window (newest {coredumps.MAX_CORES}), via coredumpctl")
    parser.add_argument("--exe", metavar="PATH",
                        help="executable for gdb (default: /proc/PID/exe, else the one the core names)")
    parser.add_argument("--pid", type=int, metavar="N",
                        help="training process: its environment, limits and cgroup are read, and the "
                             "NCCL_DEBUG_FILE and Flight Recorder dumps its environment names")
    parser.add_argument("--log", metavar="PATH", action="append",
                        help="training log to copy in, redacted (repeatable)")
    parser.add_argument("--hang", action="store_true",
                        help="the job hangs: take py-spy dumps (with and without --native) of --pid "
                             "and its children")
    return parser


def main(args: argparse.Namespace) -> int:
    try:
        parse_since(args.since)
        check_pid(args.pid)
    except BadArgument as exc:
        print(f"postmortem collect: {exc}", file=sys.stderr)
        return 2
    out = args.out or default_out()
    if not is_tarball(out):
        folder = Path(out)
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            print(f"postmortem collect: {out} exists and is not an empty folder", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="postmortem-collect-") as tmp:
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        if is_tarball(out):
            staging = Path(tmp) / "bundle"
            staging.mkdir()
            manifest = collect_into(staging, args, scratch)
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            write_tarball(staging, Path(out))
        else:
            Path(out).mkdir(parents=True, exist_ok=True)
            manifest = collect_into(Path(out), args, scratch)
    print(summarize(manifest, out), file=sys.stderr)
    return 0


from postmortem.collect.job import job_items  # noqa: E402  (job.py uses the steps above)
from postmortem.collect import coredumps  # noqa: E402
