"""Host-name records: `getent hosts NAME` / `getent ahosts` answers and /etc/hosts lines (glibc
nss/getent.c print_hosts: the address, then the canonical name and the aliases; hosts(5): the
same order): one Fact `net.name_address` per line, its value a dict of `addr` and `names`.

    10.108.0.1      trainer-0.prod.internal
    10.111.0.1 trainer-0 trainer-0.cluster

Which host a record was taken on is its file (each node's own `getent`, each node's /etc/hosts).
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import LineFormat, tree_tokens

FACT = "net.name_address"
# words of other listings that share the shape (`ip route get`: `10.0.0.1 dev eth0 src ...`)
_NOT_NAMES = frozenset({"dev", "via", "src", "lladdr", "proto", "scope", "metric", "uid", "cache", "STREAM", "DGRAM", "RAW"})


def record(parser, line: Line, tree) -> bool:
    words = [str(t) for t in tree_tokens(tree)]
    if len(words) < 2 or _NOT_NAMES & set(words[1:]):
        return False
    parser.sink.fact(line, FACT, {"addr": words[0], "names": tuple(w.lower() for w in words[1:])}, text=line.text.strip())
    return True


LINE_FORMATS = (
    LineFormat("hosts_entry", re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7})[ \t]+"
                                         r"[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*(?:[ \t]+[A-Za-z][A-Za-z0-9.-]*)*[ \t]*$"),
               record),
)
