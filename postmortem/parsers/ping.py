"""iputils `ping` (docs/formats.md, system): what one run of ping reached.  One Fact `net.ping`
per run whose statistics are printed, its value a dict: name (the host as given), addr (the
address ping sent to), transmitted, received, errors, loss_pct, unreachable_from (the hosts that
answered with an ICMP error: 'From A icmp_seq=N Destination Host Unreachable', a redirect ...).

The shapes (iputils ping/ping.c, ping6_common.c and ping/ping_common.c finish()):

    PING 10.122.0.1 (10.122.0.1) 56(84) bytes of data.
    64 bytes from 10.132.0.1: icmp_seq=1 ttl=64 time=0.108 ms
    From 10.122.0.2 icmp_seq=1 Destination Host Unreachable

    --- 10.122.0.1 ping statistics ---
    3 packets transmitted, 0 received, +3 errors, 100% packet loss, time 2015ms
    rtt min/avg/max/mdev = 0.041/0.074/0.108/0.033 ms
    pipe 2

BusyBox (networking/ping.c print_stats_and_exit) and older iputils say `N packets received` and
print duplicates without a `+`.

Real outputs: fixtures/validation30/lab-b/lab12-node1-arp-hardening-arptables-default-drop-neigh-flush-midrun
(node1_net.txt), fixtures/validation31/lab-b/lab13-switch-port-profile-isolated-on-node1-node2-ports-midrun-3-node-partial-partition
(node1_ping.txt: one probe answered, one not), fixtures/validation28/lab-c/lab10-rack-router-static-route-typo-nexthop-node0-midrun
(node0_checks.txt: a redirect, then silence).
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import Block, parse, tree_tokens

FACT = "net.ping"
# the rows ping prints between its header and its statistics (ping_common.c, ping.c pr_icmph)
_ROW = re.compile(r"^(?:\d+ bytes from |From |Request timeout|no answer yet|ping: |\s*$|pipe \d+$|rtt |round[- ]trip )")
_FROM = re.compile(r"^From (?:\S+ \()?(?P<addr>[0-9a-fA-F.:]+?)\)?:? icmp_seq=")


class PingBlock(Block):
    """One run of ping: its header, the replies and errors, and its statistics."""

    opener = re.compile(r"^PING \S+ ?\(")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse("ping_header", header.text.strip())
        self.ok = tree is not None
        if not self.ok:
            return
        tokens = {t.type: str(t) for t in tree_tokens(tree)}
        self.info = {"name": tokens["PING_NAME"], "addr": tokens["PING_ADDR"].strip("()"), "transmitted": None,
                     "received": None, "errors": 0, "loss_pct": None, "unreachable_from": []}
        self.summary: Line | None = None
        self.done = False

    def feed(self, line: Line) -> bool:
        text = line.text.rstrip()
        if self.done:
            return bool(re.match(r"^(?:rtt |round[- ]trip |pipe \d+$)", text))
        if text.startswith("--- ") and text.endswith(" ping statistics ---"):
            return True
        tree = parse("ping_summary", text.strip()) if "packets transmitted" in text else None
        if tree is not None:
            counts = {t.type: str(t) for t in tree_tokens(tree)}
            self.info.update(transmitted=int(counts["PING_SENT"].split()[0]), received=int(counts["PING_RECEIVED"].split()[0]),
                             loss_pct=float(counts["PING_LOSS"].split("%")[0]))
            errors = re.search(r"\+(\d+) errors", text)
            self.info["errors"] = int(errors.group(1)) if errors else 0
            self.summary, self.done = line, True
            return True
        if not _ROW.match(text):
            return False
        m = _FROM.match(text)
        if m and m.group("addr") not in self.info["unreachable_from"]:
            self.info["unreachable_from"].append(m.group("addr"))
        return True

    def close(self) -> None:
        # a run cut before its statistics (interrupted, a truncated paste) says nothing of its loss
        if self.ok and self.summary is not None:
            self.sink.fact(self.header, FACT, self.info, text=self.summary.text.strip())


BLOCKS = (PingBlock,)
