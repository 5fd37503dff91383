"""`ibv_devinfo` (docs/formats.md, system): per InfiniBand/RoCE HCA port, its state,
link layer and firmware.  Facts: `ib.<hca>.<port>.state`, `.link_layer`, `.fw_ver`.
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import Block, parse, tree_tokens


class IbvBlock(Block):
    """`ibv_devinfo`: per HCA port, its state and link layer."""

    opener = re.compile(r"^hca_id:\s*\S+")
    WANTED = {"state": "state", "link_layer": "link_layer", "fw_ver": "fw_ver"}

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.hca = ""
        self.port = ""
        self.ok = self.feed(header)

    def feed(self, line: Line) -> bool:
        if not line.text.strip():
            return True
        tree = parse("ibv_line", line.text)
        if tree is None:
            return False
        key, *value = [str(t) for t in tree_tokens(tree)]
        value_text = value[0] if value else ""
        if key == "hca_id":
            self.hca, self.port = value_text, ""
        elif key == "port":
            self.port = f"port{value_text}"
        elif key in self.WANTED and self.hca:
            scope = f"ib.{self.hca}.{self.port}." if self.port else f"ib.{self.hca}."
            self.sink.fact(line, scope + self.WANTED[key], value_text.split(" (")[0], text=value_text)
        return True


BLOCKS = (IbvBlock,)
