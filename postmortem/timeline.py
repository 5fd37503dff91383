"""One timeline: every source's clock resolved onto one absolute axis, honestly.

Each event keeps the time its source printed (`Stamp`); here it gets a `When`: an
absolute time (or None), how it was obtained (`Basis`) and an uncertainty.  Nothing
inferred is presented as measured.

Clocks (each format's, with the fixture that proves it, in docs/formats.md):
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
from postmortem.knowledge.registry import KIND, deaths, produced_by
from postmortem.model import Basis, Case, ClockKind, Event, Fact, When
from postmortem.parsers import clocks

_KERNEL_KINDS = produced_by("parser:kernel")
_CORE_KINDS = produced_by("parser:core")

UTC = timezone.utc


@dataclass(frozen=True)
class Placed:
    case: Case
    notes: tuple[str, ...]
    hosts: tuple[str, ...]


def _zone(name: str | None) -> tzinfo | None:
    return clocks.zone(name)


# Where a host's boot sits on the wall clock, best first.  printk stamps count
# local_clock(), which like CLOCK_MONOTONIC stops in suspend: boot = realtime - monotonic
# read at one instant (clock.json).  realtime - boottime (older collects' manifest) is as
# exact unless the host slept.  /proc/stat btime is whole seconds.
_DRIFT_PPM = 50e-6   # printk's raw clock vs NTP-disciplined CLOCK_MONOTONIC, worst usual case


def _triple_boot(case: Case) -> dict[str | None, tuple[datetime, str, float]]:
    """host -> boot time from collect's clock triple (clock.json) or manifest clock."""
    out: dict[str | None, tuple[datetime, str, float]] = {}
    by_name: dict[str, Fact] = {}
    for f in case.facts:
        by_name.setdefault(f.name, f)
    rt, mono = by_name.get("clock.realtime"), by_name.get("clock.monotonic")
    if rt is not None and mono is not None:
        boot = clocks.from_unix(float(rt.value) - float(mono.value))
        if boot is not None:
            out[rt.host] = (boot, f"clock triple, realtime - monotonic ({rt.ref.describe()})", 1e-3,
                            float(mono.value))
            return out
    rt, bt = by_name.get("manifest.realtime"), by_name.get("manifest.boottime")
    if rt is not None and bt is not None:
        boot = clocks.from_unix(float(rt.value) - float(bt.value))
        if boot is not None:
            out[rt.host] = (boot, f"collect's clock, realtime - boottime ({rt.ref.describe()}; "
                                  "off by any time the host slept)", 1e-2, float(bt.value))
    return out


def _boot_uncertainty(boot: tuple, seconds: float) -> float:
    """A clock read pins the offset at one instant (boot[3], seconds since boot); printk's
    clock drifts from it with distance."""
    if len(boot) > 3 and boot[3] is not None:
        return boot[2] + abs(boot[3] - seconds) * _DRIFT_PPM
    return boot[2]


def _bundle_zone(case: Case) -> tuple[tzinfo | None, str]:
    return clocks.bundle_zone(case.facts)


def _boot_times(case: Case, zone: tzinfo, absolute_only: bool = False) -> dict[str | None, tuple]:
    """host -> (boot time, where it came from, uncertainty in s[, seconds since boot when read]).
    `absolute_only`: leave out `uptime -s`, which prints local time."""
    boots: dict[str | None, tuple[datetime, str, float]] = dict(_triple_boot(case))
    for f in case.facts:
        if f.name == "host.btime" and f.host not in boots:
            try:
                t = clocks.from_unix(float(f.value))
            except (TypeError, ValueError):
                continue
            if t is not None:
                boots[f.host] = (t, f.ref.describe(), 1.0)
    for f in case.facts:
        if f.name == "host.boot_time" and f.host not in boots and not absolute_only:
            try:
                t = datetime.fromisoformat(str(f.value))
            except ValueError:
                continue
            t = clocks.plausible(t if t.tzinfo else t.replace(tzinfo=zone))
            if t is not None:
                boots[f.host] = (t, f.ref.describe(), 1.0)
    return boots


_STAMP_PREFIX = re.compile(r"^\s*\[[^\]]*\]\s*")


def _raw_and_walled(events: list[Event]):
    """(host, seconds since boot, wall stamp) for each kernel line printed both raw and
    with a wall time (dmesg and dmesg -T, or journal lines that keep the printk time)."""
    from postmortem.job import _body

    raw: dict[tuple[str | None, str], float] = {}
    for e in events:
        if e.stamp and e.stamp.clock is ClockKind.BOOT and e.kind in _KERNEL_KINDS and e.stamp.seconds is not None:
            raw.setdefault((e.host, _body(e)), e.stamp.seconds)
    for e in events:
        if e.stamp and e.stamp.clock in (ClockKind.WALL, ClockKind.WALL_LOCAL) and e.kind in _KERNEL_KINDS:
            secs = raw.get((e.host, _body(e)))
            receipt = False
            if secs is None:
                secs, receipt = _boot_s(e), e.stamp.resolution_s >= 1.0
            if secs is not None and e.stamp.wall is not None:
                yield e.host, float(secs), e.stamp, receipt


def _boot_s(e: Event) -> float | None:
    """The printk stamp a syslog or journal line keeps beside its own time."""
    v = e.data.get("boot_s")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _kernel_anchor_boot(events: list[Event], zone: tzinfo) -> dict[str | None, tuple]:
    """Boot time per host from the same kernel line printed raw and with a wall time.
    Journal entries (wall time to the microsecond, the printk stamp beside it) pin it to a
    millisecond; `dmesg -T` copies (whole seconds, truncated) to a second."""
    precise: dict[str | None, list[float]] = defaultdict(list)
    coarse: dict[str | None, list[float]] = defaultdict(list)
    received: dict[str | None, list[float]] = defaultdict(list)
    for host, secs, stamp, receipt in _raw_and_walled(events):
        wall = stamp.wall if stamp.wall.tzinfo else stamp.wall.replace(tzinfo=zone)  # type: ignore[union-attr]
        if stamp.year_known and clocks.plausible(wall):
            fine = stamp.clock is ClockKind.WALL and stamp.resolution_s <= 1e-3
            (precise if fine else received if receipt else coarse)[host].append(wall.timestamp() - secs)
    out = {}
    # A syslog daemon stamps a line when it receives it, never before the kernel printed it
    # (a daemon that starts late receives the whole boot at once): the earliest pair is the
    # truest.  dmesg -T truncates to the second: the median.  The journal keeps both exactly.
    for found, uncertainty, what, pick in (
            (received, 1.0, "stamped by a syslog daemon, earliest", lambda xs: xs[0]),
            (coarse, 1.0, "seen raw and with a wall time", lambda xs: xs[len(xs) // 2]),
            (precise, 1e-3, "of the journal (realtime and printk stamps)", lambda xs: xs[len(xs) // 2])):
        for host, offsets in found.items():
            offsets.sort()
            boot = clocks.from_unix(pick(offsets))
            if boot is not None:
                out[host] = (boot, f"{len(offsets)} kernel line(s) {what}", uncertainty)
    return out


def _zone_from_kernel_copies(events: list[Event], boots: dict) -> tuple[tzinfo | None, str]:
    """The pair of copies (raw seconds + a known boot time, and `dmesg -T`'s local time)
    reveals the offset of the zone `dmesg -T` printed in, to the quarter hour."""
    diffs: list[float] = []
    for host, secs, stamp, receipt in _raw_and_walled(events):
        if receipt:
            continue
        boot = boots.get(host) or (boots.get(None) if len(boots) == 1 else None)
        if boot is None or stamp.clock is not ClockKind.WALL_LOCAL or not stamp.year_known or boot[2] > 1.5:
            continue
        at = clocks.add_seconds(boot[0], secs)
        if at is None:
            continue
        try:
            diffs.append((stamp.wall.replace(tzinfo=UTC) - at).total_seconds())  # type: ignore[union-attr]
        except (OverflowError, ValueError):
            continue
    if len(diffs) < 1:
        return None, ""
    diffs.sort()
    median = diffs[len(diffs) // 2]
    quarter = round(median / 900) * 900
    if abs(median - quarter) > 3 or abs(quarter) > 14 * 3600:
        return None, ""
    hours = quarter / 3600
    return (timezone(timedelta(seconds=quarter)),
            f"UTC{hours:+g} h (inferred: {len(diffs)} kernel line(s) printed raw and with dmesg -T, against the boot time)")


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
        zone, zone_note = _zone_from_kernel_copies(list(case.events), _boot_times(case, UTC, absolute_only=True))
    if zone is None:
        zone, zone_note = UTC, "UTC (assumed: no --tz and no zone in the bundle)"
    year = _fill_year(case)
    boots = _boot_times(case, zone)
    for host, b in _kernel_anchor_boot(list(case.events), zone).items():
        if host not in boots or b[2] < boots[host][2]:  # the journal's anchor beats btime's second
            boots[host] = b

    events = _share_line_stamps(list(case.events))
    local_used = False
    placed: list[Event] = []
    by_artifact: dict[str, list[int]] = defaultdict(list)
    delta_base: dict[str, datetime | None] = {}
    for e in events:
        when = _when(e, zone, zone_note, year, boots, delta_base)
        if when and e.stamp and e.stamp.clock is ClockKind.WALL_LOCAL:
            local_used = True
        placed.append(e if when is None and e.when is None else _with_when(e, when))  # no copy for nothing
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
    placed = job.join_identities(placed, list(case.facts))
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
    for host, (bt, where, *_) in boots.items():
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
_KERNEL_DEATHS = deaths() & produced_by("parser:kernel")
_LAUNCHER_DEATHS = deaths("exit") & produced_by("parser:launcher")
_FATAL_SIGNALS = deaths("fatal_signal") - _KERNEL_KINDS


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
        boot = clocks.from_unix(offsets[len(offsets) // 2])
        if boot is not None:
            out[host] = (boot, f"anchored on {len(offsets)} process death(s) seen by the kernel and the launcher",
                         max(1.5, spread))
    return out


def _anchor_key(e: Event) -> tuple | None:
    """Events that several hosts log at one physical moment: the rendezvous that forms
    the group, NCCL init completing for one communicator."""
    if e.kind == KIND.msg_rendezvous_complete:
        return ("rendezvous",)
    if e.kind == KIND.nccl_init and e.data.get("phase") == "COMPLETE" and e.data.get("commId"):
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
        shifts[host] = (-skew, resolution,
                        f"shifted {-skew:+.3f} s onto {ref}'s clock (skew from {n} anchor(s))")
    if not shifts:
        return placed
    out = []  # one pass over the events, not one per skewed host
    for e in placed:
        shift = shifts.get(e.host)
        if shift is not None and e.when and e.when.at:
            seconds, resolution, said = shift
            e = _with_when(e, When(clocks.add_seconds(e.when.at, seconds), Basis.ANCHORED,
                                   (e.when.uncertainty_s or 0) + resolution,
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
        if e.kind not in _FATAL_SIGNALS:
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
        return When(at, Basis.CONVERTED, _boot_uncertainty(boot, s.seconds) + s.resolution_s,
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
    secs = _boot_s(e)
    boot = boots.get(e.host) or (next(iter(boots.values())) if len(boots) == 1 else None)
    if secs is None or boot is None or boot[2] > 1.0:
        return None
    at = clocks.add_seconds(boot[0], secs)
    if at is None or (received - at).total_seconds() <= 2.0 + boot[2]:
        return None
    return When(at, Basis.CONVERTED, _boot_uncertainty(boot, secs),
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


# One shared value for every event without a time (most lines of a big NCCL bundle).
_NO_TIME = When(None, Basis.ORDER_ONLY, None, "no time printed")


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
            if e.kind in _CORE_KINDS and mtimes.get(path):
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
                placed[i] = _with_when(e, _NO_TIME)


def sort_key(e: Event) -> tuple:
    """Timeline order: absolute time where known, else reading order."""
    at = e.when.at if e.when and e.when.at else None
    return (0, at.timestamp(), e.seq) if at else (1, 0.0, e.seq)
