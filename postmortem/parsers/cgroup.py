"""The memory cgroup the job ran in, as `postmortem collect` writes it (cgroup_memory.txt).

Which group: the header lines name it and whose /proc/PID/cgroup it came from (`self` when
collect had no `--pid`: then it is the collector's group, the job's only when collect ran in
it).  What it says, as facts:

* `cgroup.memory_max_bytes` — memory.max (v2) / memory.limit_in_bytes (v1); `unlimited` for
  `max` and for v1's "no limit" figure (PAGE_COUNTER_MAX pages, just under 2**63);
* `cgroup.memory_peak_bytes`, `cgroup.memory_current_bytes` — memory.peak / max_usage_in_bytes,
  memory.current / usage_in_bytes;
* `cgroup.oom_kill` — processes of the group killed by any OOM killer, the cgroup's own or the
  global one (v2 memory.events `oom_kill`, hierarchical; v1 memory.oom_control `oom_kill`);
  `cgroup.oom` — times the limit was hit and the cgroup's OOM killer ran (v2 `oom`);
  `cgroup.max_hits` — times usage reached the limit (v2 `max`; v1 `memory.failcnt`);
* `cgroup.reader` — `self` or the pid whose group this is.

The counters count since the group was made: a long-lived container's group remembers earlier
jobs, so a count is a sign, not a time (the rules say so).
"""
from __future__ import annotations

import re

from lark import Token

from postmortem.parsers.base import Line, LineParser

# v1 prints "no limit" as PAGE_COUNTER_MAX pages (LONG_MAX rounded down to a page): any figure
# this large is no limit (mm/page_counter.c, Documentation/admin-guide/cgroup-v1/memory.rst).
NO_LIMIT_BYTES = 1 << 62

# file name -> fact, for files holding one number (or `max`)
SINGLE_VALUE = {
    "memory.max": "cgroup.memory_max_bytes", "memory.limit_in_bytes": "cgroup.memory_max_bytes",
    "memory.peak": "cgroup.memory_peak_bytes", "memory.max_usage_in_bytes": "cgroup.memory_peak_bytes",
    "memory.current": "cgroup.memory_current_bytes", "memory.usage_in_bytes": "cgroup.memory_current_bytes",
    "memory.failcnt": "cgroup.max_hits",
}
# (file name, key) -> fact, for `KEY N` files
KEYED = {
    ("memory.events", "oom_kill"): "cgroup.oom_kill", ("memory.oom_control", "oom_kill"): "cgroup.oom_kill",
    ("memory.events", "oom"): "cgroup.oom", ("memory.events", "max"): "cgroup.max_hits",
    ("memory.events.local", "oom_kill"): "cgroup.oom_kill_local",
    ("memory.oom_control", "under_oom"): "cgroup.under_oom",
}
_BYTES = {"cgroup.memory_max_bytes", "cgroup.memory_peak_bytes", "cgroup.memory_current_bytes"}


class CgroupParser(LineParser):
    name = "cgroup"
    grammar_name = "cgroup"
    order = 120
    prefilter = re.compile(r"^(?:# /proc/(?:\d+|self)/cgroup (?:memory \(v1\)|v2): "
                           r"|/[^\s:]*/memory\.[a-z_.]+: (?:\d+|max|[a-z_]+ \d+)\s*$)")

    def feed(self, line: Line) -> bool:
        tree = self.parse_line(line.text.strip())
        if tree is None:
            return False
        tokens = {t.type: str(t) for t in tree.scan_values(lambda v: isinstance(v, Token))}
        if tree.data == "group_line":
            reader = tokens["PROC_CGROUP"].split("/")[2]
            group = tokens["GROUP_PATH"].strip()
            if group != "None":
                self.sink.fact(line, "cgroup.reader", int(reader) if reader.isdigit() else reader,
                               text=line.text.strip())
                self.sink.fact(line, f"cgroup.path_{'v1' if 'v1' in tokens['HIERARCHY'] else 'v2'}", group)
            return True
        file = tokens["CGROUP_FILE"].rsplit("/", 1)[1]
        key = tokens.get("KEY") or (tokens.get("MAX") if "NUMBER" in tokens else None)
        fact = KEYED.get((file, key)) if key else SINGLE_VALUE.get(file)
        if fact is None:
            return True
        text = line.text.strip()
        if "NUMBER" not in tokens:
            self.sink.fact(line, fact, "unlimited", text=text)
            return True
        value = int(tokens["NUMBER"][:20])
        if len(tokens["NUMBER"]) > 19 or value >= 1 << 63:
            return True   # no counter or size reaches 2**63: a mangled figure is no figure
        if fact == "cgroup.memory_max_bytes" and value >= NO_LIMIT_BYTES:
            self.sink.fact(line, fact, "unlimited", text=text)
        else:
            self.sink.fact(line, fact, value, "B" if fact in _BYTES else "", text)
        return True
