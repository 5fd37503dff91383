"""What the system-state formats share (system.py reads them; one module per format beside it).

* `Block`: a table or report that starts with a header line (df, free, meminfo, the
  nvidia-smi table, `nvidia-smi -q`, `topo -m`, ibv_devinfo); the parser is busy while the
  following lines are rows of it, and the first line that is not ends it;
* `LineFormat`: a one-line format (a `/dev/shm` mount line, `btime N`, an `ulimit -a`
  line, `NCCL_X=1`), picked by a regex and parsed with that start rule of grammars/system.lark;
* reading grammars/system.lark, and the numbers and sizes these tools print.
"""
from __future__ import annotations

import re
from typing import Callable, NamedTuple

from postmortem.grammar import load
from postmortem.parsers.base import Line
from postmortem.sizes import UNITS, parse_printed_size  # noqa: F401 - the format modules read sizes through here


TYPE_CHECKING = False
if TYPE_CHECKING:
    from lark import Token, Tree


def tree_tokens(tree: Tree) -> list[Token]:
    from lark import Token  # here: lark only once a tree is read (rules import iproute's names at startup)

    return list(tree.scan_values(lambda v: isinstance(v, Token)))


def parse(start: str, text: str) -> Tree | None:
    """`text` parsed from the start rule `start` of grammars/system.lark; None when it does not parse."""
    try:
        return load("system", start=start).parse(text)
    except Exception:  # noqa: BLE001 - any lark error declines the line
        return None


def leading_number(text: str):
    """The number a value starts with: `33 C` -> 33, `21.30 W` -> 21.3, `N/A` -> None."""
    m = re.match(r"^(-?\d+(?:\.\d+)?)", text.strip())
    if not m:
        return None
    value = float(m.group(1))
    return int(value) if value.is_integer() else value


class Block:
    """A table or report being read.  `feed` returns False on a line that does not belong;
    a subclass sets `opener` (the header regex) and `ok = False` when the header is not one."""

    opener: re.Pattern[str]

    def __init__(self, parser, header: Line) -> None:
        self.parser = parser
        self.sink = parser.sink
        self.header = header

    def feed(self, line: Line) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        return None


class LineFormat(NamedTuple):
    """A one-line format: its start rule in grammars/system.lark, the regex that picks the
    line, and `read(parser, line, tree)` (returns False to decline the line)."""

    start: str
    selector: re.Pattern[str]
    read: Callable
