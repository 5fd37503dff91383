"""Leading timestamps of application log lines that no format parser claims.

Known messages often sit in lines of a logger nobody parses in full (torch's glog
style, Python `logging`'s asctime, ISO stamps).  Their time still belongs on the
timeline, so the message matcher asks here for the line's leading stamp.
"""
from __future__ import annotations

import re
from datetime import datetime

from postmortem.model import ClockKind, Stamp

# (pattern, strptime format of the joined groups, year known?, resolution)
_FORMATS: tuple[tuple[re.Pattern[str], str, bool, float], ...] = (
    # torch glog style (2.4+): I1129 08:49:35.163000 956 torch/...   and c10: [E1003 18:37:01.832146912 ...
    (re.compile(r"^\[?[IWEFCV](\d{4}) (\d\d:\d\d:\d\d)\.(\d{6})\d*\s"), "%m%d %H:%M:%S.%f", False, 1e-6),
    # Python logging default asctime: 2026-11-29 08:49:41,186
    (re.compile(r"^\[?(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d),(\d{3})\b"), "%Y-%m-%d %H:%M:%S.%f", True, 1e-3),
    # ISO without zone: 2026-11-29 08:49:41.186 / 2026-11-29T08:49:41
    (re.compile(r"^\[?(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(?![\d+:Z-])"), "%Y-%m-%d %H:%M:%S.%f", True, 1e-3),
)


def leading_stamp(text: str) -> Stamp | None:
    for pattern, fmt, year_known, resolution in _FORMATS:
        m = pattern.match(text)
        if not m:
            continue
        parts = [g for g in m.groups()]
        frac = (parts[-1] or "0").ljust(6, "0")[:6]
        joined = " ".join(parts[:-1]) + "." + frac
        if not year_known:
            joined = "2000" + joined  # a leap year, so Feb 29 parses; the timeline fills the real year
            fmt = "%Y" + fmt
        try:
            wall = datetime.strptime(joined, fmt)
        except ValueError:
            return None
        return Stamp(ClockKind.WALL_LOCAL, wall=wall, year_known=year_known, resolution_s=resolution)
    return None
