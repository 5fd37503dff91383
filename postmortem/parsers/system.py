"""Parser for system state (df, free, meminfo, env, nvidia-smi ...).  (placeholder: being written)"""
from __future__ import annotations

from postmortem.parsers.base import Line, LineParser


class SystemParser(LineParser):
    name = "system"
    prefilter = None

    def feed(self, line: Line) -> bool:
        return False
