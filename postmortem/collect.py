"""`postmortem collect`: gather what a crash post-mortem needs from this node into a bundle.

Everything is read-only and best-effort: each item is one file in the bundle, made by one or
more steps (a command, a file read, a symlink read).  A missing tool or file is recorded in
`manifest.json` and never stops the run; every command has a timeout and runs without a shell
(the only `sh -c` is the fixed string `ulimit -a`, a shell builtin).

Output is a directory (`--out DIR`) or a gzip tarball (`--out FILE.tar.gz`) with the same
layout at the archive root.  The manifest says, per file: the command, exit code, duration,
start time (ISO with offset) and status (ok | missing | timeout | error).

This module must never import torch: it runs on the node that just crashed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Iterable

from postmortem import __version__

DEFAULT_TIMEOUT_S = 30.0
GDB_TIMEOUT_S = 180.0

# Environment variables worth keeping: the ones that change how NCCL, torch, CUDA and OpenMP behave.
ENV_PREFIXES = ("NCCL_", "TORCH_", "CUDA_", "PYTORCH_", "OMP_")
# A variable whose name contains one of these words has its whole value replaced.
SECRET_NAME_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# `scheme://userinfo@` -> `scheme://<redacted>@`; the userinfo may itself contain '@' (greedy).
URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#]*@")
REDACTED = "<redacted>"

# Memory-cgroup files that say what the limit was and whether it was hit.
CGROUP_V1_FILES = ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.usage_in_bytes",
                   "memory.max_usage_in_bytes", "memory.failcnt", "memory.oom_control",
                   "memory.soft_limit_in_bytes")
CGROUP_V2_FILES = ("memory.max", "memory.high", "memory.current", "memory.peak",
                   "memory.swap.max", "memory.events", "memory.events.local")
# Where each hierarchy is usually mounted (v2 alone, or v1 + v2 "hybrid" under unified/).
CGROUP_V1_ROOTS = ("/sys/fs/cgroup/memory",)
CGROUP_V2_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")

SINCE_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
SINCE_SPAN = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>s|m|min|h|d)$")


# ---------------------------------------------------------------------------------------------
# Steps: the smallest unit of work.  Each returns a StepResult; none raises.

@dataclass(frozen=True)
class StepResult:
    command: str
    status: str                   # ok | missing | timeout | error
    output: str = ""
    exit_code: int | None = None
    duration_s: float = 0.0
    started_at: str = ""
    note: str = ""


def now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="milliseconds")


def quiet_env() -> dict[str, str]:
    """The collector's own environment for children: C locale so output parses the same everywhere."""
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env.pop("LANGUAGE", None)
    return env


@dataclass(frozen=True)
class Run:
    """Run a command (argv, never a shell string) with a timeout."""

    argv: tuple[str, ...]
    timeout_s: float = DEFAULT_TIMEOUT_S
    merge_stderr: bool = False    # gdb prints useful warnings on stderr

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def __call__(self) -> StepResult:
        started, t0 = now_iso(), time.monotonic()
        exe = shutil.which(self.argv[0])
        if exe is None:
            return StepResult(self.command, "missing", started_at=started,
                              note=f"{self.argv[0]}: not found on PATH")
        try:
            proc = subprocess.run(
                [exe, *self.argv[1:]], stdin=subprocess.DEVNULL, capture_output=True,
                timeout=self.timeout_s, env=quiet_env(), check=False)
        except subprocess.TimeoutExpired as exc:
            return StepResult(self.command, "timeout", decode(exc.stdout), None,
                              time.monotonic() - t0, started,
                              f"killed after {self.timeout_s:g} s")
        except OSError as exc:
            return StepResult(self.command, "error", "", None, time.monotonic() - t0, started,
                              str(exc))
        out = decode(proc.stdout)
        err = decode(proc.stderr)
        if self.merge_stderr and err:
            out = out + err
        return StepResult(self.command, "ok" if proc.returncode == 0 else "error", out,
                          proc.returncode, time.monotonic() - t0, started,
                          "" if self.merge_stderr else err.strip()[-2000:])


@dataclass(frozen=True)
class Read:
    """Read a text file (optionally only the lines starting with `only`)."""

    path: str
    only: str | None = None

    @property
    def command(self) -> str:
        return f"grep '^{self.only}' {self.path}" if self.only else f"cat {self.path}"

    def __call__(self) -> StepResult:
        started, t0 = now_iso(), time.monotonic()
        try:
            text = Path(self.path).read_text(errors="replace")
        except FileNotFoundError:
            return StepResult(self.command, "missing", started_at=started, note="no such file")
        except OSError as exc:
            return StepResult(self.command, "error", started_at=started, note=str(exc))
        if self.only is not None:
            text = "".join(ln for ln in text.splitlines(keepends=True) if ln.startswith(self.only))
        return StepResult(self.command, "ok", text, 0, time.monotonic() - t0, started)


@dataclass(frozen=True)
class Readlink:
    path: str

    @property
    def command(self) -> str:
        return f"readlink {self.path}"

    def __call__(self) -> StepResult:
        started = now_iso()
        try:
            return StepResult(self.command, "ok", os.readlink(self.path) + "\n", 0, 0.0, started)
        except FileNotFoundError:
            return StepResult(self.command, "missing", started_at=started, note="no such file")
        except OSError as exc:
            return StepResult(self.command, "error", started_at=started, note=str(exc))


@dataclass(frozen=True)
class Produce:
    """Text computed in Python (redacted environment, cgroup files); `command` says from what."""

    command: str
    make: Callable[[], str]

    def __call__(self) -> StepResult:
        started, t0 = now_iso(), time.monotonic()
        try:
            text = self.make()
        except FileNotFoundError as exc:
            return StepResult(self.command, "missing", started_at=started, note=str(exc))
        except OSError as exc:
            return StepResult(self.command, "error", started_at=started, note=str(exc))
        return StepResult(self.command, "ok", text, 0, time.monotonic() - t0, started)


def decode(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# Items: one bundle file each.

@dataclass(frozen=True)
class Item:
    file: str
    steps: tuple
    labelled: bool = False        # several steps -> one "label: value" line per output line


STATUS_RANK = {"ok": 0, "missing": 1, "timeout": 2, "error": 3}


def base_items() -> list[Item]:
    """What every run collects, in the order it is collected."""
    return [
        Item("dmesg.txt", (Run(("dmesg",)),)),
        Item("dmesg_T.txt", (Run(("dmesg", "-T")),)),
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


def process_items(pid: int | None) -> list[Item]:
    """The training process's environment, limits and memory cgroup (this process when no --pid)."""
    source = f"/proc/{pid}/environ" if pid else "os.environ (collector's own; no --pid given)"
    items = [
        Item("env.txt", (Produce(f"filter {','.join(ENV_PREFIXES)} and redact: {source}",
                                 lambda: describe_env(read_environ(pid))),)),
        Item("cgroup_memory.txt", (Produce(f"read memory cgroup files of /proc/{pid or 'self'}/cgroup",
                                           lambda: describe_cgroup_memory(pid)),)),
    ]
    # ulimit -a prints differently in dash and bash; /proc/PID/limits is the same everywhere.
    items.append(Item("proc_limits.txt", (Read(f"/proc/{pid or 'self'}/limits"),)))
    return items


# ---------------------------------------------------------------------------------------------
# Environment: filter to the prefixes that matter and redact secrets.

def read_environ(pid: int | None) -> dict[str, str]:
    if not pid:
        return dict(os.environ)
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (entry.decode("utf-8", errors="replace").partition("=") for entry in raw.split(b"\0") if entry)
    return {name: value for name, _, value in pairs}


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_NAME_WORDS)


def redact_value(name: str, value: str) -> str:
    if is_secret_name(name):
        return REDACTED
    return URL_CREDENTIALS.sub(lambda m: m.group("scheme") + REDACTED + "@", value)


def describe_env(env: dict[str, str]) -> str:
    kept = sorted(name for name in env if name.startswith(ENV_PREFIXES))
    return "".join(f"{name}={redact_value(name, env[name])}\n" for name in kept)


# ---------------------------------------------------------------------------------------------
# Memory cgroup: v1 and v2 files of the process's own group, as "path: line" lines.

def cgroup_paths(pid: int | None) -> tuple[str | None, str | None]:
    """(v1 memory path, v2 path) from /proc/PID/cgroup."""
    v1 = v2 = None
    for line in Path(f"/proc/{pid or 'self'}/cgroup").read_text().splitlines():
        hid, controllers, path = line.split(":", 2)
        if hid == "0" and controllers == "":
            v2 = path
        elif "memory" in controllers.split(","):
            v1 = path
    return v1, v2


def cgroup_dirs(roots: Iterable[str], rel: str | None) -> list[Path]:
    """The group's own directory under each mounted root (or the root itself inside a namespace)."""
    found: list[Path] = []
    for root in roots:
        for candidate in (Path(root) / (rel or "/").lstrip("/"), Path(root)):
            if candidate.is_dir() and candidate not in found:
                found.append(candidate)
                break
    return found


def describe_cgroup_memory(pid: int | None) -> str:
    v1, v2 = cgroup_paths(pid)
    lines = [f"# /proc/{pid or 'self'}/cgroup memory (v1): {v1}", f"# /proc/{pid or 'self'}/cgroup v2: {v2}"]
    tables = ((CGROUP_V1_ROOTS, v1, CGROUP_V1_FILES), (CGROUP_V2_ROOTS, v2, CGROUP_V2_FILES))
    for roots, rel, names in tables:
        if rel is None:
            continue
        for folder in cgroup_dirs(roots, rel):
            for name in names:
                try:
                    text = (folder / name).read_text()
                except OSError:
                    continue
                lines.extend(f"{folder / name}: {value}" for value in text.splitlines())
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Cores: copied in as they are, plus `gdb -batch -ex 'thread apply all bt'` when possible.

def core_items(cores: list[str], exe: str | None, pid: int | None, workdir: Path) -> list[Item]:
    items: list[Item] = []
    for core in cores:
        name = Path(core).name
        items.append(Item(f"cores/{name}", (CopyFile(core),)))
        items.append(Item(f"gdb_bt_{safe_name(name)}.txt", (GdbBacktrace(core, exe, pid, workdir),)))
    return items


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


@dataclass(frozen=True)
class CopyFile:
    """A binary item: the step copies the file itself (see write_item)."""

    path: str

    @property
    def command(self) -> str:
        return f"cp {self.path}"

    def __call__(self) -> StepResult:
        started = now_iso()
        if not Path(self.path).is_file():
            return StepResult(self.command, "missing", started_at=started, note="no such file")
        return StepResult(self.command, "ok", "", 0, 0.0, started)


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
                    "-ex", "thread apply all bt", exe, core),
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
    result = Run(("gdb", "-batch", "-nx", "-c", core), timeout_s=60.0, merge_stderr=True)()
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
    (folder / item.file).write_text(text)
    status = "ok" if any(r.status == "ok" for r in results) else worst.status
    return Record(item.file, "; ".join(r.command for r in results), status, worst.exit_code,
                  round(sum(r.duration_s for r in results), 3), first.started_at,
                  "; ".join(r.note for r in results if r.note),
                  [step_dict(r) for r in results])


def write_single(item: Item, result: StepResult, folder: Path) -> None:
    target = folder / item.file
    target.parent.mkdir(parents=True, exist_ok=True)
    step = item.steps[0]
    if isinstance(step, CopyFile):
        if result.status == "ok":
            shutil.copyfile(step.path, target)
        return
    if result.status != "missing" or result.output:
        target.write_text(result.output)


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


def parse_since(since: str | None, now: datetime | None = None) -> str | None:
    """`2h`, `30m`, `1d`, `90s` -> an absolute local time journalctl reads; anything else is passed on."""
    if not since:
        return None
    match = SINCE_SPAN.match(since.strip())
    if not match:
        return since
    seconds = float(match.group("n")) * SINCE_UNITS[match.group("unit")]
    start = (now or datetime.now()) - timedelta(seconds=seconds)
    return start.strftime("%Y-%m-%d %H:%M:%S")


def collect_into(folder: Path, args: argparse.Namespace, scratch: Path) -> dict:
    since = parse_since(args.since)
    items = (base_items() + since_items(since) + process_items(args.pid)
             + core_items(args.core or [], args.exe, args.pid, scratch))
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
        "items": [vars(r) for r in records],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def is_tarball(out: str) -> bool:
    return out.endswith((".tar.gz", ".tgz"))


def default_out() -> str:
    return f"postmortem-{socket.gethostname()}-{datetime.now().strftime('%Y%m%dT%H%M%S')}"


def write_tarball(folder: Path, target: Path) -> None:
    with tarfile.open(target, "w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)


def summarize(manifest: dict, out: str) -> str:
    counts: dict[str, int] = {}
    for item in manifest["items"]:
        counts[item["status"]] = counts.get(item["status"], 0) + 1
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"postmortem collect: wrote {out} ({parts})"


# ---------------------------------------------------------------------------------------------
# CLI

def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = "Gather this node's crash evidence (kernel log, shm, limits, env, cores) into a bundle."
    parser.add_argument("--out", metavar="DIR|FILE.tar.gz",
                        help="bundle folder (must be new or empty) or .tar.gz/.tgz file "
                             "(default: ./postmortem-HOST-TIME)")
    parser.add_argument("--since", metavar="SPAN",
                        help="journal/coredump window: 2h, 30m, 1d, 90s, or any journalctl time")
    parser.add_argument("--core", metavar="PATH", action="append",
                        help="core file to copy in and backtrace with gdb (repeatable)")
    parser.add_argument("--exe", metavar="PATH",
                        help="executable for gdb (default: /proc/PID/exe, else the one the core names)")
    parser.add_argument("--pid", type=int, metavar="N",
                        help="training process: its environment, limits and cgroup are read")
    return parser


def main(args: argparse.Namespace) -> int:
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


if __name__ == "__main__":
    sys.exit(main(configure(argparse.ArgumentParser(prog="postmortem collect")).parse_args()))
