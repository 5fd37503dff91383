"""Where each host's boot sits on the wall clock, and the zone `dmesg -T` printed in.

Owns the boot times that turn printk's seconds-since-boot into wall time, best source
first: collect's clock triple (realtime - monotonic), its manifest clock, /proc/stat
btime, `uptime -s`, and kernel lines printed both raw and with a wall time (journal,
syslog, a `dmesg -T` copy); each with where it came from and its uncertainty.  The same
pairs of copies reveal the zone `dmesg -T` printed in.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Sequence

from postmortem.knowledge.registry import produced_by
from postmortem.model import Case, ClockKind, Event, Fact
from postmortem.parsers import clocks

KERNEL_KINDS = produced_by("parser:kernel")
UTC = timezone.utc

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


def boot_uncertainty(boot: tuple, seconds: float) -> float:
    """A clock read pins the offset at one instant (boot[3], seconds since boot); printk's
    clock drifts from it with distance."""
    if len(boot) > 3 and boot[3] is not None:
        return boot[2] + abs(boot[3] - seconds) * _DRIFT_PPM
    return boot[2]


def boot_times(case: Case, zone: tzinfo, absolute_only: bool = False) -> dict[str | None, tuple]:
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


def _raw_and_walled(events: Sequence[Event]):
    """(host, seconds since boot, wall stamp) for each kernel line printed both raw and
    with a wall time (dmesg and dmesg -T, or journal lines that keep the printk time)."""
    from postmortem.job import _body

    from postmortem.job import of_kinds

    kernel = of_kinds(events, KERNEL_KINDS)
    raw: dict[tuple[str | None, str], float] = {}
    for e in kernel:
        if e.stamp and e.stamp.clock is ClockKind.BOOT and e.stamp.seconds is not None:
            raw.setdefault((e.host, _body(e)), e.stamp.seconds)
    for e in kernel:
        if e.stamp and e.stamp.clock in (ClockKind.WALL, ClockKind.WALL_LOCAL):
            secs = raw.get((e.host, _body(e)))
            receipt = False
            if secs is None:
                secs, receipt = boot_s(e), e.stamp.resolution_s >= 1.0
            if secs is not None and e.stamp.wall is not None:
                yield e.host, float(secs), e.stamp, receipt


def boot_s(e: Event) -> float | None:
    """The printk stamp a syslog or journal line keeps beside its own time."""
    v = e.data.get("boot_s")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def kernel_anchor_boot(events: Sequence[Event], zone: tzinfo) -> dict[str | None, tuple]:
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


def zone_from_kernel_copies(events: Sequence[Event], boots: dict) -> tuple[tzinfo | None, str]:
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
