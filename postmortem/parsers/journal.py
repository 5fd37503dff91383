"""systemd journal records of the kernel: `journalctl -o json` and `-o export` (docs/formats.md, Kernel logs).

A record is a dict of journal fields (one JSON object per line, or `KEY=value` lines up to
a blank line in export format; the kernel parser collects those).  This module reads what
a kernel record says: its message (with the `comm[pid]: ` journald split off put back),
host, syslog level, the printk moment on the wall clock (realtime at receipt minus the
time it waited, from the two monotonic stamps) and the printk stamp itself (`boot_s`:
ties raw dmesg copies of the line to the wall clock to the microsecond).
"""
from __future__ import annotations

import json
from datetime import datetime, timezone

from postmortem.model import ClockKind, Stamp
from postmortem.parsers.kernel_prefix import LEVELS


def json_record(text: str) -> dict | None:
    """One `journalctl -o json` line as a dict; None when it is not one."""
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _micro(value) -> float | None:
    """Journal stamps: microseconds as a decimal string."""
    if isinstance(value, str) and value.isdigit() and len(value) <= 20:
        return int(value) / 1e6
    return None


def kernel_entry(record: dict) -> tuple[str, Stamp | None, dict] | None:
    """(message, stamp, extras {host, level, boot_s}) of a kernel record; None for any other."""
    if record.get("_TRANSPORT") != "kernel" and record.get("SYSLOG_IDENTIFIER") != "kernel":
        return None
    msg = record.get("MESSAGE")
    if not isinstance(msg, str):
        return None
    ident, pid = record.get("SYSLOG_IDENTIFIER"), record.get("SYSLOG_PID")
    if isinstance(ident, str) and ident != "kernel":  # journald split `comm[pid]: ` off the kernel's line
        msg = f"{ident}[{pid}]: {msg}" if isinstance(pid, str) and pid.isdigit() else f"{ident}: {msg}"
    extras: dict = {}
    if isinstance(record.get("_HOSTNAME"), str):
        extras["host"] = record["_HOSTNAME"]
    prio = record.get("PRIORITY")
    if isinstance(prio, str) and prio.isdigit() and int(prio) < 8:
        extras["level"] = LEVELS[int(prio)]
    realtime, mono, source = (_micro(record.get(k)) for k in
                              ("__REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP", "_SOURCE_MONOTONIC_TIMESTAMP"))
    stamp = None
    if realtime is not None:
        waited = mono - source if mono is not None and source is not None and 0 <= mono - source < 1e9 else 0.0
        try:
            wall = datetime.fromtimestamp(realtime - waited, timezone.utc)
            stamp = Stamp(ClockKind.WALL, wall=wall, resolution_s=1e-6)
        except (OverflowError, ValueError, OSError):
            stamp = None
    if source is not None:
        extras["boot_s"] = source
    return msg, stamp, extras
