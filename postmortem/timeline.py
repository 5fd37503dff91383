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

from postmortem import job, signals
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

    events = _share_line_stamps(list(case.events))
    local_used = False
    placed: list[Event] = []
    by_artifact: dict[str, list[int]] = defaultdict(list)
    delta_base: dict[str, datetime | None] = {}
    for e in events:
        when = _when(e, zone, zone_note, year, boots, delta_base)
        if when and e.stamp and e.stamp.clock is ClockKind.WALL_LOCAL:
            local_used = True
        placed.append(_with_when(e, when))
        by_artifact[e.ref.path].append(len(placed) - 1)

    anchored_boots = _boot_from_process_deaths(placed, boots)
    if anchored_boots:
        boots.update(anchored_boots)
        delta_base.clear()
        placed = [_with_when(e, _when(e, zone, zone_note, year, boots, delta_base)) for e in events]
    skews = _host_skews(placed)
    placed = _apply_skews(placed, skews, notes)
    _place_untimed(placed, by_artifact, case)
    _pin_to_process_death(placed)
    placed = job.join_identities(placed)
    placed, copy_notes = job.merge_copies(placed)
    notes.extend(copy_notes)
    window = job.find_window(placed, list(case.facts))
    placed, context_notes = job.mark_context(placed, window)
    if window.start is not None:
        notes.append(window.describe())
    notes.extend(context_notes)
    if local_used:
        notes.append(f"times printed without a zone are read as {zone_note}")
    if any(e.stamp and not e.stamp.year_known for e in case.events):
        notes.append(f"year missing in some sources; filled with {year}" if year else
                     "year missing in some sources and no dated source to fill it")
    for host, (bt, where, _) in boots.items():
        notes.append(f"boot time of {host or 'the host'}: {bt.isoformat()} ({where})")
    hosts = tuple(sorted({e.host for e in placed if e.host}))
    facts = case.facts + tuple(job.window_facts(window))
    return Placed(dataclasses.replace(case, events=tuple(placed), facts=facts), tuple(notes), hosts)


def _with_when(e: Event, when: When | None) -> Event:
    """dataclasses.replace(e, when=when), several times faster (this runs per event)."""
    return Event(e.kind, e.text, e.ref, e.severity, e.stamp, e.host, e.pid, e.tid, e.rank, e.data, when, e.seq)


def _share_line_stamps(events: list[Event]) -> list[Event]:
    """A message matched on a line whose format parser read a time gets that time too."""
    stamps = {(e.ref.path, e.ref.line): e.stamp for e in events if e.stamp and e.ref.line is not None}
    out = []
    for e in events:
        if e.stamp is None and e.ref.line is not None and (e.ref.path, e.ref.line) in stamps:
            e = dataclasses.replace(e, stamp=stamps[(e.ref.path, e.ref.line)])
        out.append(e)
    return out


# Kernel lines that name a dying process, and launcher records of a process's death.
_KERNEL_DEATHS = ("kernel.segfault", "kernel.oom_kill")
_LAUNCHER_DEATHS = ("launcher.exit", "launcher.child_failed")


def _boot_from_process_deaths(placed: list[Event], boots: dict) -> dict:
    """Boot time of a host that has none, from one process's death seen twice: the
    kernel's `python3[1234]: segfault` or OOM kill (seconds since boot) and the
    launcher's record of pid 1234 failing (wall time).  The median over all such pairs
    is robust to a wrong pair; the launcher notices a death up to a second late."""
    deaths: dict[tuple[str | None, int], datetime] = {}
    for e in placed:
        if e.kind in _LAUNCHER_DEATHS and e.pid is not None and e.when and e.when.at:
            key = (e.host, e.pid)
            deaths[key] = min(deaths.get(key, e.when.at), e.when.at)
    found: dict[str | None, list[float]] = defaultdict(list)
    for e in placed:
        if e.kind not in _KERNEL_DEATHS or e.pid is None or not e.stamp or e.stamp.clock is not ClockKind.BOOT:
            continue
        if e.host in boots or (e.host is None and boots):
            continue
        seen = deaths.get((e.host, e.pid)) or next((t for (h, p), t in deaths.items() if p == e.pid), None)
        if seen is not None and e.stamp.seconds is not None:
            found[e.host].append(seen.timestamp() - e.stamp.seconds)
    out = {}
    for host, offsets in found.items():
        offsets.sort()
        spread = offsets[-1] - offsets[0]
        out[host] = (datetime.fromtimestamp(offsets[len(offsets) // 2], UTC),
                     f"anchored on {len(offsets)} process death(s) seen by the kernel and the launcher",
                     max(1.5, spread))
    return out


def _anchor_key(e: Event) -> tuple | None:
    """Events that several hosts log at one physical moment: the rendezvous that forms
    the group, NCCL init completing for one communicator."""
    if e.kind == "msg.rendezvous_complete":
        return ("rendezvous",)
    if e.kind == "nccl.init" and e.data.get("phase") == "COMPLETE" and e.data.get("commId"):
        return ("nccl-init", e.data["commId"])
    return None


def _host_skews(placed: list[Event]) -> dict[str, tuple[float, int, float]]:
    """host -> (seconds its clock is ahead of the reference host, anchors, spread)."""
    per_host: dict[str, dict[tuple, list[datetime]]] = defaultdict(lambda: defaultdict(list))
    for e in placed:
        key = _anchor_key(e)
        if key and e.host and e.when and e.when.at:
            per_host[e.host][key].append(e.when.at)
    if len(per_host) < 2:
        return {}
    # The reference clock is the host with the most timed events.
    counts: dict[str, int] = defaultdict(int)
    for e in placed:
        if e.host and e.when and e.when.at:
            counts[e.host] += 1
    ref = max(per_host, key=lambda h: (counts[h], h))
    skews = {}
    for host, keys in per_host.items():
        if host == ref:
            continue
        diffs = []
        for key, times in keys.items():
            for n, t in enumerate(sorted(times)):
                ref_times = sorted(per_host[ref].get(key, []))
                if n < len(ref_times):
                    diffs.append((t - ref_times[n]).total_seconds())
        if diffs:
            diffs.sort()
            skews[host] = (diffs[len(diffs) // 2], len(diffs), diffs[-1] - diffs[0])
    return {h: (*v, ref) for h, v in skews.items()}  # type: ignore[misc]


def _apply_skews(placed: list[Event], skews: dict, notes: list[str]) -> list[Event]:
    """Bring each host's wall times onto the reference host's clock when the skew is
    larger than the anchors can resolve; the corrected times say they are anchored."""
    shifts = {}
    for host, (skew, n, spread, ref) in skews.items():
        resolution = max(1.0, spread)
        notes.append(f"clock of {host} is {skew:+.3f} s relative to {ref} ({n} anchor(s), spread {spread:.3f} s)")
        if abs(skew) <= resolution:
            continue
        shifts[host] = (timedelta(seconds=skew), resolution,
                        f"shifted {-skew:+.3f} s onto {ref}'s clock (skew from {n} anchor(s))")
    if not shifts:
        return placed
    out = []  # one pass over the events, not one per skewed host
    for e in placed:
        shift = shifts.get(e.host)
        if shift is not None and e.when and e.when.at:
            delta, resolution, said = shift
            e = _with_when(e, When(e.when.at - delta, Basis.ANCHORED, (e.when.uncertainty_s or 0) + resolution,
                                   f"{e.when.note + '; ' if e.when.note else ''}{said}"))
        out.append(e)
    return out


def _pin_to_process_death(placed: list[Event]) -> None:
    """A crash report with no time (faulthandler, gdb, a UCX block) goes where the
    launcher saw that process die: by pid when the report has one, else by its signal
    when exactly one launcher record died of that signal."""
    deaths = [e for e in placed if e.kind in _LAUNCHER_DEATHS and e.when and e.when.at]
    if not deaths:
        return
    by_pid = {(e.pid): e for e in deaths if e.pid is not None}
    by_signal: dict[str, list[Event]] = defaultdict(list)
    for e in deaths:
        sig = str(e.data.get("signal") or "")
        if sig:
            by_signal[_signal_name(sig)].append(e)
    for i, e in enumerate(placed):
        if e.kind not in ("py.fatal_signal", "gdb.signal", "native.signal", "core.signal"):
            continue
        if e.when and e.when.at and e.when.basis is not Basis.ANCHORED:
            continue
        death = by_pid.get(e.pid) if e.pid is not None else None
        if death is None:
            candidates = by_signal.get(_signal_name(str(e.data.get("signal") or "")), [])
            dying = {c.pid for c in candidates}  # one process may be reported by two launcher lines
            death = min(candidates, key=lambda c: c.when.at) if len(dying) == 1 else None  # type: ignore[union-attr]
        if death is None:
            continue
        placed[i] = _with_when(e, When(
            death.when.at, Basis.ANCHORED, 2.0,  # type: ignore[union-attr]
            f"no time printed; pinned to the launcher's record of this process dying ({death.ref.describe()})"))


def _signal_name(text: str) -> str:
    return signals.name_of(text) or text.strip().upper()


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
        nxt = 0  # index into `timed` of the first timed line after the current one
        for i in idxs:
            while nxt < len(timed) and timed[nxt] <= i:
                nxt += 1
            e = placed[i]
            if e.when and (e.when.at or e.when.basis is Basis.ORDER_ONLY):
                continue
            if e.kind.startswith("core.") and mtimes.get(path):
                placed[i] = _with_when(e, When(
                    mtimes[path], Basis.MTIME, 60.0, "core file's modification time (written at the crash)"))
                continue
            before = placed[timed[nxt - 1]].when.at if nxt > 0 else None  # type: ignore[union-attr]
            after = placed[timed[nxt]].when.at if nxt < len(timed) else None  # type: ignore[union-attr]
            if before:
                gap = (after - before).total_seconds() if after and after >= before else None
                placed[i] = _with_when(e, When(
                    before, Basis.ANCHORED, gap, "no time printed; placed after the previous timed line of this file"))
            elif after:
                placed[i] = _with_when(e, When(
                    after, Basis.ANCHORED, None, "no time printed; at or before the next timed line of this file"))
            else:
                placed[i] = _with_when(e, When(None, Basis.ORDER_ONLY, None, "no time printed"))


def sort_key(e: Event) -> tuple:
    """Timeline order: absolute time where known, else reading order."""
    at = e.when.at if e.when and e.when.at else None
    return (0, at.timestamp(), e.seq) if at else (1, 0.0, e.seq)
