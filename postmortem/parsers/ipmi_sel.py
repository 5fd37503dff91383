"""`ipmitool sel` output: the BMC's hardware event log (docs/formats.md, Kernel logs).

Reads `ipmitool sel elist` / `sel list` rows (`  1a | 03/02/2021 | 10:15:06 | Memory #0x01 |
Uncorrectable ECC | Asserted`) and the BMC's event texts as web consoles paste them
(`Correctable ECC ... @P2-DIMMF1 - Assertion`).  They report the same memory errors as
the kernel's machine-check lines, so the kernel parser emits them as `kernel.mce` with
`source = "ipmi"`; this module owns the format: which lines are rows, and what a row says.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from postmortem.model import ClockKind, Severity, Stamp

ROW = re.compile(
    r"^\s*[0-9a-fA-F]+ \| (?P<date>[\d/]+) \| (?P<time>[\d:]+(?: [AP]M)?) \| (?P<sensor>[^|]+?) \| "
    r"(?P<event>[^|]+?) \| (?P<state>Asserted|Deasserted)"
    r"|^(?P<text>.*?(?:ECC|[Mm]emory error|[Mm]achine [Cc]heck).*?)(?: @(?P<where>\S+))? - (?P<assert>Assertion|Deassertion)\s*$")
# Words one of which every row holds (the kernel parser's prefilter offers it lines with these).
WORDS = ("ECC", " | Asserted", " | Deasserted", "- Assertion", "- Deassertion")
DIMM = re.compile(r"\b(\S*DIMM\S*?)(?=[\s,)]|$)")


@dataclass(frozen=True, slots=True)
class SelRow:
    severity: Severity
    stamp: Stamp | None
    data: dict   # the `kernel.mce` fields: source, corrected, dimm, sensor, asserted, msg


def read(text: str) -> SelRow | None:
    """One `ipmitool sel` row or BMC event text; None when the line is not one."""
    m = ROW.search(text)
    if m is None:
        return None
    event = (m["event"] or m["text"]).strip()
    where = m["where"] or (m["sensor"].strip() if m["sensor"] else None)
    asserted = (m["state"] or m["assert"]) in ("Asserted", "Assertion")
    corrected = False if re.search(r"[Uu]ncorrect", event) else True if re.search(r"[Cc]orrect", event) else None
    in_text = DIMM.search(event)
    dimm = where if where and "DIMM" in where.upper() else (in_text.group(1) if in_text else None)
    stamp = None
    if m["date"]:
        try:
            stamp = Stamp(ClockKind.WALL_LOCAL, wall=datetime.strptime(f"{m['date']} {m['time']}", "%m/%d/%Y %H:%M:%S"))
        except ValueError:
            stamp = None
    return SelRow(Severity.ERROR if corrected is False else Severity.WARNING, stamp,
                  {"source": "ipmi", "corrected": corrected, "dimm": dimm, "sensor": where, "asserted": asserted,
                   "msg": event})
