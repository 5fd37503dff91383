"""When the host booted (docs/formats.md, system): `btime N` from /proc/stat, and
`uptime -s` (a bare `YYYY-MM-DD HH:MM:SS` line, read only in a file named for uptime).
Facts: `host.btime`, `host.boot_time`.
"""
from __future__ import annotations

import re
from datetime import datetime

from lark import Tree

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import LineFormat, tree_tokens


def btime(parser, line: Line, tree: Tree) -> None:
    parser.sink.fact(line, "host.btime", int(tree_tokens(tree)[0]), "s")


def boot_time(parser, line: Line, tree: Tree):
    # A bare `YYYY-MM-DD HH:MM:SS` line is `uptime -s` only in a file named for it.
    if "uptime" not in parser.path.lower():
        return False
    wall = datetime.strptime(str(tree_tokens(tree)[0]), "%Y-%m-%d %H:%M:%S")
    parser.sink.fact(line, "host.boot_time", wall.isoformat(), text=line.text.strip())
    return None


LINE_FORMATS = (
    LineFormat("btime_line", re.compile(r"^btime \d+\s*$"), btime),
    LineFormat("boot_time_line", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$"), boot_time),
)
