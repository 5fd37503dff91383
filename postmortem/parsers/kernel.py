"""Parser for kernel logs (dmesg, journal, syslog).  (placeholder: being written)"""
from __future__ import annotations

from postmortem.parsers.base import Line, LineParser


class KernelParser(LineParser):
    name = "kernel"
    prefilter = None

    def feed(self, line: Line) -> bool:
        return False
