"""iproute2's `ss -t -i` (docs/formats.md, system): per TCP connection, its state, queues,
endpoints and the kernel's `struct tcp_info` as ss prints it on the indented line below.
One Fact `net.tcp_connection` per connection, its value a dict: state ('' when a state filter
left the column out), recv_q, send_q, local, peer, and `info` (the key:value words of the
detail line; counters as ints: lost, unacked, backoff, bytes_retrans ...; `retrans` a:b as
`retrans` = segments retransmitted and not yet acknowledged, `retrans_total`).

The shapes (iproute2 6.1.0 misc/ss.c tcp_show_info):

    ESTAB 0      1382796          10.97.2.10:59386          10.97.1.10:33501
    	 bbr wscale:10,10 rto:5200 backoff:2 ... unacked:179 retrans:1/587 lost:85 sacked:94 ...
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import Block, parse, tree_tokens

FACT = "net.tcp_connection"
_STATES = "ESTAB|SYN-SENT|SYN-RECV|FIN-WAIT-1|FIN-WAIT-2|TIME-WAIT|CLOSE-WAIT|LAST-ACK|CLOSING|LISTEN|UNCONN"


def _details(text: str) -> dict:
    """`rto:204 retrans:1/184 lost:1 bbr:(bw:0bps,...)` -> {rto: '204', retrans: 1, retrans_total: 184, lost: 1, ...}:
    the counters ss prints as plain integers become ints, the rest stay text."""
    out: dict = {}
    for word in text.split():
        key, sep, value = word.partition(":")
        if not sep or not key.replace("_", "").isalpha():
            continue
        if key == "retrans" and "/" in value:
            now, _, total = value.partition("/")
            if now.isdecimal() and total.isdecimal():
                out["retrans"], out["retrans_total"] = int(now), int(total)
            continue
        out[key] = int(value) if value.isdecimal() else value
    return out


class SsSocketBlock(Block):
    """One connection of `ss -t[i]`: its line and, with -i, the indented detail line under it."""

    opener = re.compile(rf"^(?:(?:{_STATES})\s+)?\d+\s+\d+\s+\S*:(?:\d+|\*)\s+\S*:(?:\d+|\*)(?:\s|$)")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse("ss_socket", header.text.strip())
        self.ok = tree is not None
        if not self.ok:
            return
        tokens = tree_tokens(tree)
        state = next((str(t) for t in tokens if t.type == "SS_STATE"), "")
        numbers = [int(str(t)) for t in tokens if t.type == "INT"]
        endpoints = [str(t) for t in tokens if t.type == "SS_ENDPOINT"]
        self.info = {"state": state, "recv_q": numbers[0], "send_q": numbers[1], "local": endpoints[0],
                     "peer": endpoints[1], "info": {}}

    def feed(self, line: Line) -> bool:
        text = line.text
        if not text[:1].isspace() or not text.strip() or self.info["info"]:
            return False
        self.info["info"] = _details(text)
        return True

    def close(self) -> None:
        if self.ok:
            self.sink.fact(self.header, FACT, self.info, text=self.header.text.strip())


BLOCKS = (SsSocketBlock,)
