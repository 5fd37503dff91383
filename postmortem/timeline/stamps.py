"""One event's printed time (`Stamp`) resolved into a `When` on the absolute axis.

Owns the per-clock conversion: wall with a zone (measured), wall without one (converted
with the chosen zone), seconds since boot (converted with the host's boot time), dmesg
deltas (accumulated from the file's last absolute stamp), a syslog line received late
(placed at its printk moment), and the year filled in where a source leaves it out.
Nothing inferred is presented as measured: each `When` says its basis and note.
"""
from __future__ import annotations

from datetime import datetime, tzinfo
from operator import attrgetter

from postmortem.model import Basis, Case, ClockKind, Event, When
from postmortem.parsers import clocks
from postmortem.timeline.boot import UTC, boot_s, boot_uncertainty


_STAMP = attrgetter("stamp")


def fill_year(case: Case) -> int | None:
    years = [s.wall.year for s in map(_STAMP, case.events) if s is not None and s.wall is not None and s.year_known]
    if years:
        return sorted(years)[len(years) // 2]
    mtimes = [a.mtime.year for a in case.artifacts if a.mtime]
    return max(mtimes) if mtimes else None


def with_when(e: Event, when: When | None) -> Event:
    """dataclasses.replace(e, when=when), several times faster (this runs per event)."""
    return Event(e.kind, e.text, e.ref, e.severity, e.stamp, e.host, e.pid, e.tid, e.rank, e.data, when, e.seq)


def stamp_when(e: Event, zone: tzinfo, zone_note: str, year: int | None,
          boots: dict, delta_base: dict[str, datetime | None]) -> When | None:
    s = e.stamp
    if s is None:
        return None
    if s.clock is ClockKind.WALL and s.wall is not None:
        at = s.wall if s.wall.tzinfo else s.wall.replace(tzinfo=UTC)
        at = clocks.plausible(_with_year(at, s.year_known, year))
        if at is None:
            return When(None, Basis.ORDER_ONLY, None, "year unknown or out of range; order only")
        delta_base[e.ref.path] = at
        basis = Basis.MEASURED if s.year_known else Basis.CONVERTED
        return When(at, basis, s.resolution_s, "" if s.year_known else f"year filled in ({year})")
    if s.clock is ClockKind.WALL_LOCAL and s.wall is not None:
        at = clocks.plausible(_with_year(s.wall.replace(tzinfo=zone), s.year_known, year))
        if at is None:
            return When(None, Basis.ORDER_ONLY, None, "year unknown or out of range; order only")
        delta_base[e.ref.path] = at
        printed = _printk_time(e, boots, at)
        if printed is not None:
            return printed
        note = f"local time read as {zone_note}" + ("" if s.year_known else f"; year filled in ({year})")
        return When(at, Basis.CONVERTED, s.resolution_s, note)
    if s.clock is ClockKind.BOOT and s.seconds is not None:
        boot = boots.get(e.host) or (next(iter(boots.values())) if len(boots) == 1 and (
            e.host is None or None in boots) else None)
        if boot is None:
            return When(None, Basis.ORDER_ONLY, None, f"{s.seconds:.6f} s after boot; boot time unknown")
        at = clocks.add_seconds(boot[0], s.seconds)
        if at is None:
            return When(None, Basis.ORDER_ONLY, None, f"{s.seconds:.6f} s after boot is out of range; order only")
        delta_base[e.ref.path] = at
        return When(at, Basis.CONVERTED, boot_uncertainty(boot, s.seconds) + s.resolution_s,
                    f"boot time + {s.seconds:.6f} s ({boot[1]}); printk clock drifts and stops in suspend")
    if s.clock is ClockKind.DELTA and s.seconds is not None:
        base = delta_base.get(e.ref.path)
        if base is None:
            return When(None, Basis.ORDER_ONLY, None, f"+{s.seconds:.6f} s after the previous line")
        at = clocks.add_seconds(base, s.seconds)
        if at is None:
            return When(None, Basis.ORDER_ONLY, None, f"+{s.seconds:.6f} s is out of range; order only")
        delta_base[e.ref.path] = at
        return When(at, Basis.CONVERTED, 1.0, "accumulated from dmesg deltas")
    return None


def _printk_time(e: Event, boots: dict, received: datetime) -> When | None:
    """A syslog line that keeps the kernel's own stamp ([sec] after `kernel:`) and was
    received well after it (a daemon that started late): placed at the printk moment."""
    secs = boot_s(e)
    boot = boots.get(e.host) or (next(iter(boots.values())) if len(boots) == 1 else None)
    if secs is None or boot is None or boot[2] > 1.0:
        return None
    at = clocks.add_seconds(boot[0], secs)
    if at is None or (received - at).total_seconds() <= 2.0 + boot[2]:
        return None
    return When(at, Basis.CONVERTED, boot_uncertainty(boot, secs),
                f"boot time + {secs:.6f} s ({boot[1]}); the line's own stamp "
                f"{received.isoformat()} is when the syslog daemon received it")


def _with_year(at: datetime, year_known: bool, year: int | None) -> datetime | None:
    if year_known:
        return at
    if year is None:
        return None
    try:
        return at.replace(year=year)
    except ValueError:  # Feb 29
        return None
