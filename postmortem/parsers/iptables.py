"""iptables' `iptables -L -v -n` (docs/formats.md, system): per chain, its policy and the
packets it counted, and per rule its target, interfaces, addresses and the packets it matched.
One Fact `net.firewall_chain` per chain printed, its value a dict: chain, policy ('' for a user
chain), policy_packets (packets that fell through to the policy), and rules (a list of dicts:
target, packets, prot, in, out, source, destination, match).

The shapes (iptables/iptables.c print_header, print_firewall; -v adds the counters, which
are scaled with K/M/G/T unless -x):

    Chain FORWARD (policy DROP 10 packets, 600 bytes)
     pkts bytes target     prot opt in     out     source               destination
       10   600 DOCKER-USER  0    --  *      *       0.0.0.0/0            0.0.0.0/0
       13   780 REJECT     6    --  *      *       0.0.0.0/0            0.0.0.0/0            tcp flags:0x17/0x02 reject-with tcp-reset

`--line-numbers` adds a `num` column before pkts (its rows start with the rule number).
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import Block, parse, tree_tokens

FACT = "net.firewall_chain"
_SCALE = {"": 1, "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3, "T": 1000 ** 4}   # iptables.c print_num: units of 1000
_POLICY = re.compile(r"^policy (?P<policy>[A-Z]+)(?: (?P<packets>\d+[KMGT]?) packets)?")
# `--line-numbers` (the usual way to list rules for deletion) adds a leading "num" column (audit 8 M6)
_COLUMNS = re.compile(r"^\s*(?P<num>num\s+)?pkts\s+bytes\s+target\s+prot\s+opt\s+in\s+out\s+source\s+destination\s*$")
_RULE_NUMBER = re.compile(r"^\s*\d+\s+(?=\d)")


def count(text: str) -> int:
    """`1503K` -> 1503000 (iptables scales by 1000)."""
    m = re.fullmatch(r"(\d+)([KMGT]?)", text)
    return int(m.group(1)) * _SCALE[m.group(2)] if m else 0


class IptablesChainBlock(Block):
    """One chain: its `Chain` line, the column header, and the rule rows under it."""

    opener = re.compile(r"^Chain [^\s(]+ \((?:policy [A-Z]+|\d+ references)")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse("ipt_chain", header.text.strip())
        self.ok = tree is not None
        if not self.ok:
            return
        tokens = {t.type: str(t) for t in tree_tokens(tree)}
        m = _POLICY.match(tokens.get("IPT_CHAIN_INFO", "").strip())
        self.info = {"chain": tokens["IPT_CHAIN_HEAD"].split()[1], "policy": m.group("policy") if m else "",
                     "policy_packets": count(m.group("packets") or "") if m else 0, "rules": []}
        self.numbered = False   # the column header had `num`: each row starts with its rule number

    def feed(self, line: Line) -> bool:
        text = line.text
        if m := _COLUMNS.match(text):
            self.numbered = m.group("num") is not None
            return True
        if self.numbered:
            text = _RULE_NUMBER.sub("", text, count=1)
        tree = parse("ipt_rule", text.strip()) if text.strip()[:1].isdigit() else None
        if tree is None:
            return False
        tokens = tree_tokens(tree)
        rest = str(tokens[2]).split()
        # target prot opt in out source destination [match ...]; a rule without a target prints none
        if len(rest) >= 7:
            target, prot, _opt, in_, out, source, destination = rest[:7]
            match = " ".join(rest[7:])
        elif len(rest) == 6:
            target, (prot, _opt, in_, out, source, destination), match = "", rest, ""
        else:
            return False
        self.info["rules"].append({"target": target, "packets": count(str(tokens[0])), "prot": prot, "in": in_,
                                   "out": out, "source": source, "destination": destination, "match": match})
        return True

    def close(self) -> None:
        if self.ok:
            self.sink.fact(self.header, FACT, self.info, text=self.header.text.strip())


BLOCKS = (IptablesChainBlock,)
