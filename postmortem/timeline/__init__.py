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

The package, one module per concern:
* `boot.py`    - each host's boot time on the wall clock, the zone `dmesg -T` printed in;
* `stamps.py`  - one event's printed time resolved into a `When`;
* `anchors.py` - events placed by other events (process deaths, host skews, untimed lines).
This module runs them in order (`place`) and hands the placed events to `postmortem.job`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from itertools import compress
from operator import attrgetter

from postmortem import job
from postmortem.model import Case, ClockKind, Event
from postmortem.parsers import clocks
from postmortem.timeline.anchors import (apply_skews, boot_from_process_deaths, host_skews, pin_to_process_death,
                                         place_untimed)
from postmortem.timeline.boot import UTC, boot_times, kernel_anchor_boot, zone_from_kernel_copies
from postmortem.timeline.stamps import fill_year, stamp_when, with_when


_STAMP, _HOST = attrgetter("stamp"), attrgetter("host")
# Said in the note of every local time read in a zone nothing in the bundle gave (classify
# orders such times against the kernel's clock only with that caveat).
ZONE_ASSUMED = "assumed: no --tz and no zone in the bundle"


@dataclass(frozen=True)
class Placed:
    """What `place` returns: the case with every event's `when` filled in (and the job
    window's facts added), notes on how the times were obtained, and the hosts seen."""

    case: Case
    notes: tuple[str, ...]
    hosts: tuple[str, ...]


def place(case: Case, tz: str | None = None) -> Placed:
    notes: list[str] = []
    zone = clocks.zone(tz)
    if tz and zone is None:
        notes.append(f"--tz {tz!r} is not a known zone; local times read as UTC")
    zone_note = f"--tz {tz}" if zone else ""
    if zone is None:
        zone, zone_note = clocks.bundle_zone(case.facts)
    if zone is None:
        zone, zone_note = zone_from_kernel_copies(case.events, boot_times(case, UTC, absolute_only=True))
    if zone is None:
        zone, zone_note = UTC, f"UTC ({ZONE_ASSUMED})"
    year = fill_year(case)
    boots = boot_times(case, zone)
    for host, b in kernel_anchor_boot(case.events, zone).items():
        if host not in boots or b[2] < boots[host][2]:  # the journal's anchor beats btime's second
            boots[host] = b

    year_missing = any(s is not None and not s.year_known for s in map(_STAMP, case.events))
    events = share_line_stamps(list(case.events))
    # From here the case's events are only in `events`: a caller that keeps no reference to
    # the case it passes (run.analyze) lets each replaced event go as its successor is made
    # (issue 17: the dense bundle's events are not held twice).
    case = dataclasses.replace(case, events=())
    local_used = False
    placed: list[Event] = []
    delta_base: dict[str, datetime | None] = {}
    for e in events:
        if e.stamp is None:  # most lines of a big bundle: nothing to resolve, no copy
            placed.append(e if e.when is None else with_when(e, None))
            continue
        when = stamp_when(e, zone, zone_note, year, boots, delta_base)
        if when and e.stamp.clock is ClockKind.WALL_LOCAL:
            local_used = True
        placed.append(e if when is None and e.when is None else with_when(e, when))

    anchored_boots = boot_from_process_deaths(placed, boots)
    if anchored_boots:
        boots.update(anchored_boots)
        delta_base.clear()
        placed = [with_when(e, stamp_when(e, zone, zone_note, year, boots, delta_base)) for e in events]
    del events
    skews = host_skews(placed)
    placed = apply_skews(placed, skews, notes)
    place_untimed(placed, case)
    pin_to_process_death(placed)
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
    if year_missing:
        notes.append(f"year missing in some sources; filled with {year}" if year else
                     "year missing in some sources and no dated source to fill it")
    for host, (bt, where, *_) in boots.items():
        notes.append(f"boot time of {host or 'the host'}: {bt.isoformat()} ({where})")
    hosts = tuple(sorted(h for h in set(map(_HOST, placed)) if h))
    facts = case.facts + tuple(job.window_facts(window))
    stacks = job.join_stack_ranks(case.stacks, placed)
    return Placed(dataclasses.replace(case, events=tuple(placed), stacks=stacks, facts=facts), tuple(notes), hosts)


def share_line_stamps(events: list[Event]) -> list[Event]:
    """A message matched on a line whose format parser read a time gets that time too."""
    stamps = {(e.ref.path, e.ref.line): e.stamp for e in compress(events, map(_STAMP, events)) if e.ref.line is not None}
    if not stamps:
        return events
    paths = {path for path, _ in stamps}
    out = []
    for e in events:
        if e.stamp is None and e.ref.line is not None and e.ref.path in paths and (e.ref.path, e.ref.line) in stamps:
            e = dataclasses.replace(e, stamp=stamps[(e.ref.path, e.ref.line)])
        out.append(e)
    return out


def sort_key(e: Event) -> tuple:
    """Timeline order: absolute time where known, else reading order."""
    at = e.when.at if e.when and e.when.at else None
    return (0, at.timestamp(), e.seq) if at else (1, 0.0, e.seq)
