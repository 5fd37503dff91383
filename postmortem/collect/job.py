"""What the job itself left on this node: the training logs `collect` is pointed at, the
NCCL_DEBUG_FILE and PyTorch Flight Recorder dumps its environment names, and `py-spy dump`
stacks of its live processes.  Logs are text and get redacted when written; dumps are copied
as they are (Flight Recorder pickles are read safely by `analyze`, never unpickled).
"""
from __future__ import annotations

import glob
import socket
from pathlib import Path

from postmortem.collect import CopyFile, safe_name
from postmortem.collect.steps import Item, Read, Run

# Flight Recorder dump prefixes (a rank number is appended): torch's variables and default.
FR_PREFIX_VARS = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
FR_DEFAULT_PREFIX = "/tmp/nccl_trace_rank_"
MAX_JOB_FILES = 1024             # dumps or logs per kind
PY_SPY_TIMEOUT_S = 60.0


def job_items(logs: list[str], env: dict[str, str], pid: int | None, hang: bool) -> list[Item]:
    items = [Item(f"logs/{safe_name(Path(log).name)}", (Read(log),)) for log in logs]
    items += nccl_debug_items(env)
    items += flight_recorder_items(env)
    if pid:
        items += py_spy_items([pid] + (children_of(pid) if hang else []))
    return items


def nccl_debug_items(env: dict[str, str]) -> list[Item]:
    """NCCL_DEBUG_FILE, where NCCL expands %h to the host name and %p to the pid."""
    pattern = env.get("NCCL_DEBUG_FILE")
    if not pattern:
        return []
    pattern = glob.escape(pattern).replace("%h", socket.gethostname()).replace("%p", "*")
    return [Item(f"logs/nccl/{safe_name(Path(path).name)}", (Read(path),))
            for path in sorted(glob.glob(pattern))[:MAX_JOB_FILES]]


def flight_recorder_items(env: dict[str, str]) -> list[Item]:
    prefixes = [env[name] for name in FR_PREFIX_VARS if env.get(name)] or [FR_DEFAULT_PREFIX]
    paths: list[str] = []
    for prefix in dict.fromkeys(prefixes):
        paths += sorted(glob.glob(glob.escape(prefix) + "*"))
    return [Item(f"flightrec/{safe_name(Path(path).name)}", (CopyFile(path),))
            for path in dict.fromkeys(paths) if Path(path).is_file()][:MAX_JOB_FILES]


def children_of(pid: int) -> list[int]:
    """The direct children of pid (a launcher's ranks), from /proc/PID/task/*/children."""
    found: list[int] = []
    for children in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            found += [int(p) for p in Path(children).read_text().split()]
        except (OSError, ValueError):
            continue
    return sorted(set(found))


def py_spy_items(pids: list[int]) -> list[Item]:
    items: list[Item] = []
    for p in pids:
        items.append(Item(f"py-spy/dump_{p}.txt", (Run(("py-spy", "dump", "--pid", str(p)),
                                                        timeout_s=PY_SPY_TIMEOUT_S, merge_stderr=True),)))
        items.append(Item(f"py-spy/dump_native_{p}.txt",
                          (Run(("py-spy", "dump", "--native", "--pid", str(p)),
                               timeout_s=PY_SPY_TIMEOUT_S, merge_stderr=True),)))
    return items
