"""The training process as `collect` sees it: its environment (filtered to the variables that
change NCCL, torch, CUDA and OpenMP, and redacted), its limits and its memory cgroup.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from postmortem.collect.redact import redact_value
from postmortem.collect.steps import Item, Produce, Read

# Environment variables worth keeping: the ones that change how NCCL, torch, CUDA and OpenMP behave.
ENV_PREFIXES = ("NCCL_", "TORCH_", "CUDA_", "PYTORCH_", "OMP_")
# Memory-cgroup files that say what the limit was and whether it was hit.
CGROUP_V1_FILES = ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.usage_in_bytes",
                   "memory.max_usage_in_bytes", "memory.failcnt", "memory.oom_control",
                   "memory.soft_limit_in_bytes")
CGROUP_V2_FILES = ("memory.max", "memory.high", "memory.current", "memory.peak",
                   "memory.swap.max", "memory.events", "memory.events.local")
# Where each hierarchy is usually mounted (v2 alone, or v1 + v2 "hybrid" under unified/).
CGROUP_V1_ROOTS = ("/sys/fs/cgroup/memory",)
CGROUP_V2_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")


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
    if pid:
        items.append(Item("pid_ns.txt", (Produce(f"grep NSpid /proc/{pid}/status and its descendants'",
                                                  lambda: describe_nspid(descendants(pid))),)))
    return items


# ---------------------------------------------------------------------------------------------
# Pid namespaces: /proc/PID/status `NSpid:` lists a process's pid in every pid namespace it is
# in, outermost (this /proc's) first.  A containerised job logs its inner pids, the host's
# kernel log the outer ones: the pairs let `analyze` give each process one identity.

MAX_DESCENDANTS = 256


def descendants(pid: int) -> list[int]:
    """pid and its descendants (a launcher's ranks and their workers), breadth first."""
    found, queue = [pid], [pid]
    while queue and len(found) < MAX_DESCENDANTS:
        parent = queue.pop(0)
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = [int(p) for p in children.read_text().split()]
            except (OSError, ValueError):
                continue
            for kid in kids:
                if kid not in found and len(found) < MAX_DESCENDANTS:
                    found.append(kid)
                    queue.append(kid)
    return found


def describe_nspid(pids: list[int]) -> str:
    lines = []
    for p in pids:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue   # exited meanwhile
        lines += [f"/proc/{p}/status: {line}" for line in status.splitlines() if line.startswith("NSpid:")]
    if not lines:
        raise FileNotFoundError(f"/proc/{pids[0]}/status: no NSpid line (process gone, or a kernel before 4.1)")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Environment: filter to the prefixes that matter and redact secrets.

def read_environ(pid: int | None) -> dict[str, str]:
    if not pid:
        return dict(os.environ)
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (entry.decode("utf-8", errors="replace").partition("=") for entry in raw.split(b"\0") if entry)
    return {name: value for name, _, value in pairs}


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


