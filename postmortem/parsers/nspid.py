"""The pid namespaces of the job's processes (collect's pid_ns.txt: `/proc/P/status: NSpid: ...`).

Each line says one process's pid in every pid namespace it lives in, outermost first: the
host's pid (what the host kernel log and the collector's py-spy print) and the container's
(what the job's own logs print).  Becomes the fact `process.nspid` = [outer, ..., inner];
postmortem/job.py merges the aliases into one identity.
"""
from __future__ import annotations

import re

from lark import Token

from postmortem.parsers.base import Line, LineParser

MAX_PID = 1 << 22   # Linux PID_MAX_LIMIT: anything larger is not a pid


class NsPidParser(LineParser):
    name = "nspid"
    grammar_name = "nspid"
    order = 130
    prefilter = re.compile(r"^/proc/\d+/status: NSpid:(?:\s+\d+)+\s*$")

    def feed(self, line: Line) -> bool:
        tree = self.parse_line(line.text.strip())
        if tree is None:
            return False
        pids = [t for t in tree.scan_values(lambda v: isinstance(v, Token) and v.type == "PID")]
        if any(len(p) > 7 or int(p) > MAX_PID or int(p) <= 0 for p in pids):
            return True
        self.sink.fact(line, "process.nspid", [int(p) for p in pids], text=line.text.strip())
        return True
