"""One timeline: every source's clock resolved onto one absolute axis, honestly.

Each event keeps the time its source printed (`Stamp`); here it gets a `When`: an
absolute time (or None), how it was obtained (`Basis`) and an uncertainty.  Nothing
inferred is presented as measured.

Clocks, per formats.md §0:
* wall with a zone (journal iso, CI wrappers, dmesg --time-format iso)  -> measured
* wall without a zone (dmesg -T, NCCL 2.26+, torch logs)                -> converted with
  --tz, a zone found in the bundle, or UTC — and the note says which
* seconds since boot (raw dmesg)                                        -> converted with the
  host's boot time (/proc/stat btime, `uptime -s`), or anchored on a `dmesg -T` copy of the
  same line; otherwise order only
* deltas (dmesg -d / -H)                                                -> accumulated from the
  file's last absolute stamp
* nothing (faulthandler, gdb, most NCCL INFO)                           -> placed between timed
  neighbours of the same file (anchored, with the gap as uncertainty), a core by its mtime,
  otherwise order only.

Process identity is joined here too: an event that knows host+pid but not its rank
gets the rank that NCCL init lines or the launcher table give for that pid.
"""
from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from postmortem.model import Basis, Case, ClockKind, Event, When

UTC = timezone.utc


@dataclass(frozen=True)
class Placed:
    case: Case
    notes: tuple[str, ...]
    hosts: tuple[str, ...]


def _zone(name: str | None) -> tzinfo | None:
    if not name:
        return None
    from dateutil import tz as dtz

    if re.fullmatch(r"[+-]\d\d:?\d\d", name):
        sign = 1 if name[0] == "+" else -1
        hh, mm = int(name[1:3]), int(name[-2:])
        return timezone(sign * timedelta(hours=hh, minutes=mm))
    return dtz.gettz(name)


def _bundle_zone(case: Case) -> tuple[tzinfo | None, str]:
    for f in case.facts:
        if f.name == "host.tz" and f.value:
            z = _zone(str(f.value))
            if z is not None:
                return z, f"{f.value} (from {f.ref.describe()})"
    return None, ""


def _boot_times(case: Case, zone: tzinfo) -> dict[str | None, tuple[datetime, str, float]]:
    """host -> (boot time, where it came from, uncertainty in s)."""
    boots: dict[str | None, tuple[datetime, str, float]] = {}
    for f in case.facts:
        if f.name == "host.btime":
            try:
                boots[f.host] = (datetime.fromtimestamp(float(f.value), UTC), f.ref.describe(), 1.0)
            except (TypeError, ValueError, OverflowError, OSError):
                continue
    for f in case.facts:
        if f.name == "host.boot_time" and f.host not in boots:
            try:
                t = datetime.fromisoformat(str(f.value))
            except ValueError:
                continue
            boots[f.host] = (t if t.tzinfo else t.replace(tzinfo=zone), f.ref.describe(), 1.0)
    return boots


_STAMP_PREFIX = re.compile(r"^\s*\[[^\]]*\]\s*")


def _kernel_anchor_boot(events: list[Event], zone: tzinfo) -> dict[str | None, tuple[datetime, str, float]]:
    """Boot time per host from the same kernel line printed raw and with -T."""
    raw: dict[tuple[str | None, str], float] = {}
    for e in events:
        if e.stamp and e.stamp.clock is ClockKind.BOOT and e.kind.startswith("kernel"):
            raw.setdefault((e.host, e.text), e.stamp.seconds or 0.0)
    found: dict[str | None, list[float]] = defaultdict(list)
    for e in events:
        if e.stamp and e.stamp.clock in (ClockKind.WALL, ClockKind.WALL_LOCAL) and e.kind.startswith("kernel"):
            secs = raw.get((e.host, e.text))
            if secs is None or e.stamp.wall is None:
                continue
            wall = e.stamp.wall if e.stamp.wall.tzinfo else e.stamp.wall.replace(tzinfo=zone)
            found[e.host].append(wall.timestamp() - secs)
    out = {}
    for host, offsets in found.items():
        offsets.sort()
        median = offsets[len(offsets) // 2]
        out[host] = (datetime.fromtimestamp(median, UTC), f"{len(offsets)} kernel line(s) seen raw and with -T", 1.0)
    return out


def _fill_year(case: Case) -> int | None:
    years = [e.stamp.wall.year for e in case.events
             if e.stamp and e.stamp.wall is not None and e.stamp.year_known]
    if years:
        return sorted(years)[len(years) // 2]
    mtimes = [a.mtime.year for a in case.artifacts if a.mtime]
    return max(mtimes) if mtimes else None


def place(case: Case, tz: str | None = None) -> Placed:
    notes: list[str] = []
    zone = _zone(tz)
    if tz and zone is None:
        notes.append(f"--tz {tz!r} is not a known zone; local times read as UTC")
    zone_note = f"--tz {tz}" if zone else ""
    if zone is None:
        zone, zone_note = _bundle_zone(case)
    if zone is None:
        zone, zone_note = UTC, "UTC (assumed: no --tz and no zone in the bundle)"
    year = _fill_year(case)
    boots = _boot_times(case, zone)
    for host, b in _kernel_anchor_boot(list(case.events), zone).items():
        boots.setdefault(host, b)

    local_used = False
    placed: list[Event] = []
    by_artifact: dict[str, list[int]] = defaultdict(list)
    delta_base: dict[str, datetime | None] = {}
    for e in case.events:
        when = _when(e, zone, zone_note, year, boots, delta_base)
        if when and e.stamp and e.stamp.clock is ClockKind.WALL_LOCAL:
            local_used = True
        placed.append(dataclasses.replace(e, when=when))
        by_artifact[e.ref.path].append(len(placed) - 1)

    _place_untimed(placed, by_artifact, case)
    placed = _join_ranks(placed, case)
    if local_used:
        notes.append(f"times printed without a zone are read as {zone_note}")
    if any(e.stamp and not e.stamp.year_known for e in case.events):
        notes.append(f"year missing in some sources; filled with {year}" if year else
                     "year missing in some sources and no dated source to fill it")
    for host, (bt, where, _) in boots.items():
        notes.append(f"boot time of {host or 'the host'}: {bt.isoformat()} ({where})")
    hosts = tuple(sorted({e.host for e in placed if e.host}))
    return Placed(dataclasses.replace(case, events=tuple(placed)), tuple(notes), hosts)


def _when(e: Event, zone: tzinfo, zone_note: str, year: int | None,
          boots: dict, delta_base: dict[str, datetime | None]) -> When | None:
    s = e.stamp
    if s is None:
        return None
    if s.clock is ClockKind.WALL and s.wall is not None:
        at = s.wall if s.wall.tzinfo else s.wall.replace(tzinfo=UTC)
        at = _with_year(at, s.year_known, year)
        if at is None:
            return When(None, Basis.ORDER_ONLY, None, "year unknown")
        delta_base[e.ref.path] = at
        basis = Basis.MEASURED if s.year_known else Basis.CONVERTED
        return When(at, basis, s.resolution_s, "" if s.year_known else f"year filled in ({year})")
    if s.clock is ClockKind.WALL_LOCAL and s.wall is not None:
        at = _with_year(s.wall.replace(tzinfo=zone), s.year_known, year)
        if at is None:
            return When(None, Basis.ORDER_ONLY, None, "year unknown")
        delta_base[e.ref.path] = at
        note = f"local time read as {zone_note}" + ("" if s.year_known else f"; year filled in ({year})")
        return When(at, Basis.CONVERTED, s.resolution_s, note)
    if s.clock is ClockKind.BOOT and s.seconds is not None:
        boot = boots.get(e.host) or (boots.get(None) if len(boots) <= 1 else None)
        if boot is None:
            return When(None, Basis.ORDER_ONLY, None, f"{s.seconds:.6f} s after boot; boot time unknown")
        at = boot[0] + timedelta(seconds=s.seconds)
        delta_base[e.ref.path] = at
        return When(at, Basis.CONVERTED, boot[2] + s.resolution_s,
                    f"boot time + {s.seconds:.6f} s ({boot[1]}); printk clock drifts and stops in suspend")
    if s.clock is ClockKind.DELTA and s.seconds is not None:
        base = delta_base.get(e.ref.path)
        if base is None:
            return When(None, Basis.ORDER_ONLY, None, f"+{s.seconds:.6f} s after the previous line")
        at = base + timedelta(seconds=s.seconds)
        delta_base[e.ref.path] = at
        return When(at, Basis.CONVERTED, 1.0, "accumulated from dmesg deltas")
    return None


def _with_year(at: datetime, year_known: bool, year: int | None) -> datetime | None:
    if year_known:
        return at
    if year is None:
        return None
    try:
        return at.replace(year=year)
    except ValueError:  # Feb 29
        return None


def _place_untimed(placed: list[Event], by_artifact: dict[str, list[int]], case: Case) -> None:
    """Untimed lines sit between the timed lines of the same file; a core by its mtime."""
    mtimes = {a.path: a.mtime for a in case.artifacts}
    for path, idxs in by_artifact.items():
        timed = [i for i in idxs if placed[i].when and placed[i].when.at]
        for pos, i in enumerate(idxs):
            e = placed[i]
            if e.when and (e.when.at or e.when.basis is Basis.ORDER_ONLY):
                continue
            if e.kind.startswith("core.") and mtimes.get(path):
                placed[i] = dataclasses.replace(e, when=When(
                    mtimes[path], Basis.MTIME, 60.0, "core file's modification time (written at the crash)"))
                continue
            before = [j for j in timed if j < i]
            after = [j for j in timed if j > i]
            if before:
                t0 = placed[before[-1]].when.at  # type: ignore[union-attr]
                t1 = placed[after[0]].when.at if after else None  # type: ignore[union-attr]
                gap = (t1 - t0).total_seconds() if t1 and t1 >= t0 else None
                placed[i] = dataclasses.replace(e, when=When(
                    t0, Basis.ANCHORED, gap, "no time printed; placed after the previous timed line of this file"))
            elif after:
                t1 = placed[after[0]].when.at  # type: ignore[union-attr]
                placed[i] = dataclasses.replace(e, when=When(
                    t1, Basis.ANCHORED, None, "no time printed; at or before the next timed line of this file"))
            else:
                placed[i] = dataclasses.replace(e, when=When(None, Basis.ORDER_ONLY, None, "no time printed"))


def _join_ranks(events: list[Event], case: Case) -> list[Event]:
    """host+pid -> rank from NCCL init lines and launcher failure records."""
    rank_of: dict[tuple[str | None, int], int] = {}
    for e in events:
        if e.pid is None:
            continue
        r = e.data.get("rank") if e.kind in ("nccl.init", "launcher.child_failed") else None
        if isinstance(r, int):
            rank_of.setdefault((e.host, e.pid), r)
    if not rank_of:
        return events
    out = []
    for e in events:
        if e.rank is None and e.pid is not None and (e.host, e.pid) in rank_of:
            e = dataclasses.replace(e, rank=rank_of[(e.host, e.pid)])
        out.append(e)
    return out


def sort_key(e: Event) -> tuple:
    """Timeline order: absolute time where known, else reading order."""
    at = e.when.at if e.when and e.when.at else None
    return (0, at.timestamp(), e.seq) if at else (1, 0.0, e.seq)
