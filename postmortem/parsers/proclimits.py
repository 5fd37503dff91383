"""/proc/PID/limits: the resource limits one process ran with (soft and hard).

`postmortem collect` copies the training process's file (`--pid`; its own otherwise) as
proc_limits.txt.  Unlike `ulimit -a`, whose labels and units differ between bash, dash and zsh,
the kernel prints this one file the same everywhere, in bytes.  The rows that bear on a
diagnosis become the same facts `ulimit -a` gives (`ulimit.nofile`, `ulimit.memlock`,
`ulimit.virtual`, `ulimit.core`: the soft limit, the one that fails a call) plus the hard limit
as `ulimit.<item>_hard` (how far the job could raise the soft one itself).
"""
from __future__ import annotations

import re

from lark import Token

from postmortem.parsers.base import Line, LineParser

# Row name (fs/proc/base.c lnames[]) -> fact suffix shared with `ulimit -a` (parsers/system.py).
RESOURCES = {"Max open files": "nofile", "Max locked memory": "memlock",
             "Max address space": "virtual", "Max core file size": "core"}


class ProcLimitsParser(LineParser):
    name = "proclimits"
    grammar_name = "proclimits"
    order = 110
    prefilter = re.compile(r"^(?:Limit\s+Soft Limit\s+Hard Limit\s+Units"
                           r"|Max(?: [a-z]+)+ {2,}(?:\d+|unlimited) +(?:\d+|unlimited)(?: +[a-z]+)?)\s*$")

    def feed(self, line: Line) -> bool:
        tree = self.parse_line(line.text.strip())
        if tree is None:
            return False
        if tree.data == "header":
            return True
        tokens = [t for t in tree.scan_values(lambda v: isinstance(v, Token))]
        name = str(tokens[0])
        soft, hard = (str(t) for t in tokens[1:3])
        unit = str(tokens[3]) if len(tokens) > 3 else ""
        item = RESOURCES.get(name)
        if item is None:
            return True
        text = f"{name}: soft {soft}, hard {hard}" + (f" {unit}" if unit else "")
        for suffix, value in ((item, soft), (f"{item}_hard", hard)):
            if value != "unlimited" and (len(value) > 20 or int(value) >= 1 << 64):
                continue   # rlim_t is 64 bits: a longer figure is mangled, no limit at all
            if value == "unlimited":
                self.sink.fact(line, f"ulimit.{suffix}", "unlimited", text=text)
            else:
                self.sink.fact(line, f"ulimit.{suffix}", int(value), "B" if unit == "bytes" else "", text)
        return True
