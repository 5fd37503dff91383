"""The collector's clocks read at one instant: realtime, monotonic and boottime, with the zone.

Written to `clock.json`; the timeline uses it to place boot-relative kernel times (dmesg's
`[seconds]`, journal monotonic stamps) to the microsecond instead of btime's whole second.
The three clocks are read back to back several times and the tightest reading is kept.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

TRIES = 16


def local_zone_name() -> str | None:
    """The IANA name of this machine's zone, from TZ or /etc/localtime's link, or None."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz and not tz.startswith("/"):
        return tz
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        target = ""
    if "zoneinfo/" in target:
        return target.split("zoneinfo/", 1)[1]
    try:
        name = Path("/etc/timezone").read_text().strip()
    except OSError:
        return None
    return name or None


def clock_triple() -> dict:
    """{"realtime", "monotonic", "boottime", "tz", "utc_offset_s"}: the smallest-gap reading."""
    best = None
    for _ in range(TRIES):
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        real = time.clock_gettime_ns(time.CLOCK_REALTIME)
        boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        gap = t1 - t0
        if best is None or gap < best[0]:
            best = (gap, real, (t0 + t1) // 2, boot)
    gap, real, mono, boot = best
    offset = time.localtime(real / 1e9).tm_gmtoff
    return {"realtime": real / 1e9, "monotonic": mono / 1e9, "boottime": boot / 1e9,
            "tz": local_zone_name(), "utc_offset_s": int(offset), "read_gap_s": gap / 1e9}
