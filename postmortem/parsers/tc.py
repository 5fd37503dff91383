"""iproute2's `tc -s qdisc show` (docs/formats.md, system): per queueing discipline, its kind,
the device it sits on (when printed), its parameters (`rate 512Kbit`, `loss 30%` ...) and the
packets it sent and dropped.  One Fact `net.qdisc` per qdisc printed, its value a dict: kind,
handle, dev ('' when the output was made for one device and does not repeat it), params (the
rest of the header line), sent_packets, dropped, overlimits.

The shapes (iproute2 tc/tc_qdisc.c print_qdisc, tc/tc_util.c print_tcstats_attr):

    qdisc tbf 8003: root refcnt 3 rate 512Kbit burst 16Kb lat 200ms
     Sent 1261244 bytes 1130 pkt (dropped 1222, overlimits 1410 requeues 0)
     backlog 0b 0p requeues 0
    qdisc netem 8001: dev eth0 root refcnt 2 limit 1000 loss 30%
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import Block, LineFormat, parse, tree_tokens

FACT = "net.qdisc"
_SENT = re.compile(r"Sent (?P<bytes>\d+) bytes (?P<pkt>\d+) pkts? \(dropped (?P<dropped>\d+), overlimits (?P<over>\d+)")


class QdiscBlock(Block):
    """One qdisc: its header line and the indented statistics under it."""

    opener = re.compile(r"^qdisc [a-z_]+ [0-9a-f]*: ")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse("qdisc_header", header.text.strip())
        self.ok = tree is not None
        if not self.ok:
            return
        tokens = {t.type: str(t) for t in tree_tokens(tree)}
        _, kind, handle = tokens["QDISC_HEAD"].split()
        rest = tokens.get("QDISC_REST", "")
        words = rest.split()
        # `tc -s qdisc show dev X` prints no `dev` in its headers: the command line before them named it
        dev = words[words.index("dev") + 1] if "dev" in words[:-1] else getattr(parser, "tc_dev", "")
        self.info = {"kind": kind, "handle": handle, "dev": dev, "params": rest, "sent_packets": None,
                     "dropped": None, "overlimits": None}

    def feed(self, line: Line) -> bool:
        text = line.text
        if not text[:1].isspace() or not text.strip():
            return False
        if parse("qdisc_sent", text.strip()) is not None:
            m = _SENT.search(text)
            self.info.update(sent_packets=int(m.group("pkt")), dropped=int(m.group("dropped")),
                             overlimits=int(m.group("over")))
        return True   # backlog, per-kind statistics: part of the block

    def close(self) -> None:
        if self.ok:
            self.sink.fact(self.header, FACT, self.info, text=self.header.text.strip())
            if self.info["sent_packets"] is None:
                # `tc qdisc show` without -s, or an output cut short: no drop count to read (audit 8 L7)
                self.sink.problems.append(f"{self.header.ref().describe()}: qdisc {self.info['kind']} without its "
                                          "statistics (run `tc -s qdisc show`; the output may be cut): drops not read")


def tc_show(parser, line: Line, tree) -> None:
    """The command line of a `tc -s qdisc show [dev X]` output: the device its headers leave out
    ('' when the command names none: then each header names its own)."""
    dev = next((str(t) for t in tree_tokens(tree) if t.type == "TC_DEV"), "")
    parser.tc_dev = dev.split(None, 1)[1] if dev else ""


BLOCKS = (QdiscBlock,)
LINE_FORMATS = (
    LineFormat("tc_show", re.compile(r"^(?:[$#] ?)?(?:sudo )?tc (?:-\S+ )*qdisc (?:show|ls|list)\b"), tc_show),
)
