"""iproute2's `ip xfrm policy` and `ip xfrm state` (the kernel's IPsec security policy and
security association databases; docs/formats.md, system).

A policy becomes a Fact `net.xfrm_policy`: src and dst (its selector, with prefix lengths), dir
(in / out / fwd), action ('allow' unless iproute2 printed `action block`) and templates (a list
of dicts: src, dst, proto, mode, optional -- `level use` makes a template optional).  A state (an
SA) becomes a Fact `net.xfrm_state`: src, dst, proto, spi, mode.  The command line a capture
echoed before the state listing (`$ ip xfrm state`) becomes a Fact `net.xfrm_state_listing`, so
an empty listing (no SA at all) is told apart from a listing that was never taken.

The shapes (iproute2 6.1 ip/ipxfrm.c xfrm_selector_print, xfrm_policy_info_print, xfrm_tmpl_print,
xfrm_xfrma_print):

    src 10.98.0.2/32 dst 10.98.0.1/32
    	dir out priority 0 ptype main
    	tmpl src 10.98.0.2 dst 10.98.0.1
    		proto esp reqid 0 mode transport

    src 10.98.0.2 dst 10.98.0.1
    	proto esp spi 0x00001000 reqid 1 mode transport
    	replay-window 0
    	sel src 10.98.0.2/32 dst 10.98.0.1/32
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import Block, LineFormat, tree_tokens
from postmortem.parsers.system_base import parse as parse_system

POLICY_FACT = "net.xfrm_policy"
STATE_FACT = "net.xfrm_state"
LISTING_FACT = "net.xfrm_state_listing"


def _pairs(words: list[str]) -> dict[str, str]:
    return {words[i]: words[i + 1] for i in range(0, len(words) - 1, 2)}


class XfrmBlock(Block):
    """One policy or one state: the `src A dst B` line and the indented lines under it; the
    first indented line says which (`dir ...` a policy, `proto ... spi` a state)."""

    opener = re.compile(r"^src [0-9a-fA-F.:]+(?:/\d{1,3})? dst [0-9a-fA-F.:]+(?:/\d{1,3})?(?:\s|$)")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse_system("xfrm_head", header.text.strip())
        self.ok = tree is not None
        if not self.ok:
            return
        addrs = [str(t) for t in tree_tokens(tree) if t.type == "XFRM_ADDR"]
        self.src, self.dst = addrs[0], addrs[1]
        self.kind: str | None = None        # "policy" or "state", from the first indented line
        self.info: dict = {}
        self.templates: list[dict] = []

    def feed(self, line: Line) -> bool:
        text = line.text
        if not text[:1].isspace() or not text.strip():
            return False
        words = text.split()
        pairs = _pairs(words)
        if self.kind is None:
            if words[0] == "dir":
                self.kind = "policy"
                self.info = {"src": self.src, "dst": self.dst, "dir": pairs.get("dir", ""),
                             "action": pairs.get("action", "allow"), "templates": self.templates}
            elif words[0] == "proto" and "spi" in pairs:
                self.kind = "state"
                self.info = {"src": self.src, "dst": self.dst, "proto": pairs.get("proto", ""),
                             "spi": pairs.get("spi", ""), "mode": pairs.get("mode", "")}
            return True
        if self.kind == "policy":
            if words[0] == "action" and len(words) > 1:
                self.info["action"] = words[1]
            elif words[0] == "tmpl":
                pairs = _pairs(words[1:])
                self.templates.append({"src": pairs.get("src", ""), "dst": pairs.get("dst", ""),
                                       "proto": "", "mode": "", "optional": False})
            elif words[0] == "proto" and self.templates:
                self.templates[-1].update(proto=pairs.get("proto", ""), mode=pairs.get("mode", ""))
            elif words[0] == "level" and self.templates:
                self.templates[-1]["optional"] = pairs.get("level") == "use"
        return True

    def close(self) -> None:
        if self.ok and self.kind == "policy":
            self.sink.fact(self.header, POLICY_FACT, self.info, text=self.header.text.strip())
        elif self.ok and self.kind == "state":
            self.sink.fact(self.header, STATE_FACT, self.info, text=self.header.text.strip())


def listing(parser, line: Line, tree) -> bool:
    parser.sink.fact(line, LISTING_FACT, {"command": line.text.strip()}, text=line.text.strip())
    return True


BLOCKS = (XfrmBlock,)
LINE_FORMATS = (
    LineFormat("xfrm_listing", re.compile(r"^[$#] ip (?:-\S+ )*xfrm state(?: (?:list|show))?\s*$"), listing),
)
