"""Cores held by systemd-coredump, fetched with `coredumpctl` — only when `--core` asks.

`--core` takes, besides a core file's path, a PID (the core systemd-coredump stored for that
process) or the word `coredumpctl` (every core it stored in the `--since` window, newest
first, at most MAX_CORES).  What the program prints, from systemd's own source:

* `coredumpctl --json=short list` prints its table (src/coredump/coredumpctl.c:
  `table_new("time", "pid", "uid", "gid", "sig", "corefile", "exe", "size")`, newer versions
  an `id` column first) as a JSON array of objects (src/shared/format-table.c
  table_data_to_json): `time` realtime µs, `pid`/`uid`/`gid`/`sig` integers (or null),
  `corefile` a word (`present`, `journal`, `missing`, `none`, `truncated`, ...), `exe` a path,
  `size` bytes or null.  With no core it exits 1 saying "No coredumps found.".
* `coredumpctl -o FILE dump PID` writes the newest matching core to FILE, decompressed.

The core is written into the collector's scratch folder, then copied into the bundle opened
without following a link (a core holds the process's memory: the manifest says so).
"""
from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from postmortem.collect.steps import Item, Run, StepResult, now_iso

ALL_CORES = "coredumpctl"          # `--core coredumpctl`: every stored core in the window
MAX_CORES = 8
STORED = ("present", "journal", "truncated")  # `corefile` values that mean the core can be dumped
DUMP_TIMEOUT_S = 600.0


def since_args(since: str | None) -> tuple[str, ...]:
    return ("--since", since) if since else ()


def listed(since: str | None) -> tuple[list[dict], str]:
    """The stored cores coredumpctl lists (newest first), and a note when it could not say."""
    result = Run(("coredumpctl", "--json=short", "--no-pager", "-q", "list", *since_args(since)))()
    if result.status == "missing":
        return [], result.note
    if result.status != "ok":
        return [], (result.note or f"coredumpctl list exited {result.exit_code}").splitlines()[0][:200]
    try:
        rows = json.loads(result.output)
    except ValueError:
        return [], "coredumpctl --json=short list printed no JSON"
    if not isinstance(rows, list):
        return [], "coredumpctl --json=short list printed no JSON array"
    rows = [r for r in rows if isinstance(r, dict) and isinstance(r.get("pid"), int) and not isinstance(r.get("pid"), bool)]
    return sorted(rows, key=lambda r: r.get("time") if isinstance(r.get("time"), int) else 0, reverse=True), ""


def wanted(values: list[str], since: str | None) -> tuple[list[tuple[int, dict]], list[str]]:
    """(pid, listing row) for each core `--core` asks coredumpctl for, and notes."""
    pids = [int(v) for v in values if v.isdigit() and not Path(v).exists()]
    every = ALL_CORES in values
    if not pids and not every:
        return [], []
    rows, note = listed(since)
    notes = [note] if note else []
    by_pid: dict[int, dict] = {}
    for r in rows:
        by_pid.setdefault(r["pid"], r)
    chosen: list[int] = list(dict.fromkeys(pids))
    if every:
        stored = [r["pid"] for r in rows if r.get("corefile") in STORED]
        chosen += [p for p in dict.fromkeys(stored) if p not in chosen]
        if len(chosen) > MAX_CORES:
            notes.append(f"coredumpctl lists {len(chosen)} cores: the newest {MAX_CORES} are gathered")
        chosen = chosen[:MAX_CORES]
    return [(p, by_pid.get(p, {})) for p in chosen], notes


def core_name(pid: int, row: dict) -> str:
    exe = row.get("exe") if isinstance(row.get("exe"), str) else ""
    base = "".join(c if c.isalnum() or c in "_.-" else "_" for c in os.path.basename(exe))[:60]
    return f"core.{base}.{pid}" if base else f"core.{pid}"


@dataclass(frozen=True)
class CoredumpctlDump:
    """A binary item: `coredumpctl -o SCRATCH dump PID`; write_item copies SCRATCH in."""

    pid: int
    since: str | None
    path: str                      # where coredumpctl writes the core (the collector's scratch)
    warning: str = ""
    note: str = ""                 # what the listing said about this core

    @property
    def command(self) -> str:
        return f"coredumpctl --no-pager -q -o {self.path} dump {self.pid}"

    def __call__(self) -> StepResult:
        started = now_iso()
        if shutil.which("coredumpctl") is None:
            return StepResult(self.command, "missing", started_at=started, note="coredumpctl: not found on PATH")
        result = Run(("coredumpctl", "--no-pager", "-q", *since_args(self.since), "-o", self.path, "dump",
                      str(self.pid)), timeout_s=DUMP_TIMEOUT_S)()
        if result.status != "ok":
            return StepResult(self.command, result.status, "", result.exit_code, result.duration_s, started,
                              "; ".join(n for n in (result.note.strip()[:300], self.note) if n))
        try:
            st = os.lstat(self.path)
        except OSError:
            return StepResult(self.command, "missing", started_at=started, note="coredumpctl wrote no core")
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
            return StepResult(self.command, "error", started_at=started,
                              note="the dumped core is not a regular file: refused")
        note = "; ".join(n for n in (self.warning, self.note) if n)
        return StepResult(self.command, "ok", "", 0, result.duration_s, started, note)


def coredump_items(values: list[str], since: str | None, exe: str | None, workdir: Path, warning: str,
                   gdb_step) -> tuple[list[Item], list[str]]:
    """Items for the cores `--core PID` / `--core coredumpctl` ask systemd-coredump for: the
    core, then gdb's backtrace of it (`gdb_step(core_path, exe)`)."""
    picks, notes = wanted(values, since)
    items: list[Item] = []
    for pid, row in picks:
        name = core_name(pid, row)
        scratch = str(workdir / f"coredumpctl.{name}")
        said = ", ".join(f"{k} {row[k]}" for k in ("sig", "corefile", "exe", "size") if row.get(k) is not None)
        items.append(Item(f"cores/{name}", (CoredumpctlDump(pid, since, scratch, warning,
                                                             f"coredumpctl list: {said}" if said else ""),)))
        row_exe = row.get("exe") if isinstance(row.get("exe"), str) else None
        items.append(Item(f"gdb_bt_{name}.txt", (gdb_step(scratch, exe or row_exe),)))
    return items, notes
