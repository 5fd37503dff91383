"""The steps of `collect`: the smallest units of work (run a command, read a file, read a
link, compute text).  Each returns a StepResult and none raises; commands run without a
shell, with a timeout, in the C locale.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable

DEFAULT_TIMEOUT_S = 30.0

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


@dataclass(frozen=True)
class Item:
    file: str
    steps: tuple
    labelled: bool = False        # several steps -> one "label: value" line per output line
