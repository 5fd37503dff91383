"""`ulimit -a` of bash, zsh, dash/busybox and tcsh (docs/formats.md, system): the
limits a job meets first (open files, locked memory, core size, virtual memory).
Facts: `ulimit.nofile`, `ulimit.memlock` (bytes), `ulimit.core`, `ulimit.virtual`.
"""
from __future__ import annotations

import re

from lark import Tree

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import LineFormat, tree_tokens

# `ulimit -a` item -> fact suffix, by flag (bash, zsh, busybox) or by name (every shell).
ULIMIT_FLAGS = {"-n": "nofile", "-l": "memlock", "-c": "core", "-v": "virtual"}
ULIMIT_NAMES = {
    "open files": "nofile", "file descriptors": "nofile", "nofiles": "nofile",
    "max locked memory": "memlock", "locked memory": "memlock", "locked-in-memory size": "memlock",
    "core file size": "core", "coredump": "core",
    "virtual memory": "virtual", "vmemory": "virtual", "address space": "virtual",
}
_KIB_UNITS = ("kbytes", "kb")
_DASH_ULIMIT = ("time", "file", "data", "stack", "coredump", "memory", "locked memory", "process",
                "nofiles", "vmemory", "locks", "rtprio", "nice", "sbsize", "pipe")


def ulimit(parser, line: Line, tree: Tree) -> None:
    tokens = tree_tokens(tree)
    words = " ".join(str(t) for t in tokens if t.type == "LIMIT_WORD")
    flag = next((str(t) for t in tokens if t.type == "ULIMIT_FLAG"), None)
    unit = next((str(t) for t in tokens if t.type == "LIMIT_UNIT"), None)
    limit = str(tokens[-1])
    item = ULIMIT_FLAGS.get(flag) or ULIMIT_NAMES.get(words)
    if item is None:
        return
    if limit == "unlimited":
        parser.sink.fact(line, f"ulimit.{item}", "unlimited", text=limit)
    elif item == "memlock" and (unit in _KIB_UNITS or unit is None):
        parser.sink.fact(line, "ulimit.memlock", int(limit) * 1024, "B", f"{limit} KiB")
    else:
        parser.sink.fact(line, f"ulimit.{item}", int(limit), unit or "", limit)


LINE_FORMATS = (
    LineFormat("ulimit_line", re.compile(
        r"\((?:\w+, )?-[A-Za-z]\) +(?:\d+|unlimited)\s*$|^-[A-Za-z]: .+ (?:\d+|unlimited)\s*$"
        rf"|^(?:{'|'.join(re.escape(n) for n in _DASH_ULIMIT)})(?:\(\w+\))? +(?:\d+|unlimited)\s*$"),
        ulimit),
)
