"""`ls -l /dev/shm` (coreutils ls, long format; docs/formats.md, system): the files a tmpfs held
when it was listed.  One Fact `shm.listing` per listing, its value a dict: entries (a list of
[name, size as printed]) and total (the `total` line as printed, '' when absent).

Read only after the command line that lists /dev/shm itself (a shell prompt or '#', `ls` with
options, the path): a long listing does not say which directory it is of.  Rows are ls's long
format (coreutils src/ls.c print_long_format: mode, links, owner, group, size -- with -h
human-readable --, the modification time, the name):

    # ls -alht /dev/shm
    total 1.3G
    -rw-------  1 root root 101M Oct 11 04:32 psm_04a1e52f
    -rw-------  1 root root  32M Oct 11 04:23 nccl-9cfUN2

Real output: fixtures/validation21/llm-d-dp16-vllm-dev-shm-filled-stale-nccl-segments-crashloop-11
(dev_shm_listing.txt).
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import Block

FACT = "shm.listing"
_ROW = re.compile(r"^[-dlcbps][rwxsStT-]{9}[.+@]?\s+\d{1,9}\s+\S{1,64}\s+\S{1,64}\s+(?P<size>\d[\d.,]{0,20}[KMGTPE]?)\s+"
                  r"(?:\w{3}\s+\d{1,2}|\d{4}-\d{2}-\d{2})\s+(?:\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s[+-]\d{4})?|\d{4})\s+"
                  r"(?P<name>\S.{0,254})$")
_TOTAL = re.compile(r"^total \d[\d.,]{0,20}[KMGTPE]?$")


class ShmListingBlock(Block):
    """One long listing of /dev/shm, after the command that made it."""

    opener = re.compile(r"^(?:\S{0,64}[#$] ?)?ls(?: -[A-Za-z]{1,12})+ /dev/shm/?\s*$")

    def __init__(self, parser, header: Line) -> None:
        super().__init__(parser, header)
        self.entries: list[list[str]] = []
        self.total = ""
        self.first: Line | None = None

    def feed(self, line: Line) -> bool:
        text = line.text.strip()
        if not self.entries and not self.total and _TOTAL.match(text):
            self.total, self.first = text, line
            return True
        m = _ROW.match(text)
        if m is None:
            return False
        self.first = self.first or line
        if m.group("name") not in (".", ".."):
            self.entries.append([m.group("name"), m.group("size")])
        return True

    def close(self) -> None:
        if self.first is not None:
            self.sink.fact(self.header, FACT, {"entries": self.entries, "total": self.total},
                           text=self.header.text.strip())


BLOCKS = (ShmListingBlock,)
