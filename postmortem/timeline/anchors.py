"""Events placed by other events: process deaths, multi-host anchors, untimed neighbours.

Owns the placements that borrow another event's time: a host's boot time from one
process's death seen by both the kernel and the launcher; a crash report with no time
pinned to the launcher's record of that process dying; each host's clock skew measured on
events several hosts log at one moment (rendezvous, NCCL init) and corrected when larger
than the anchors resolve; untimed lines placed between the timed lines of their file, a
core by its mtime.  Every such time is `anchored` and says what it was anchored on.
"""
from __future__ import annotations

from collections import defaultdict, deque
from datetime import datetime
from itertools import compress, repeat
from operator import attrgetter, is_

from postmortem import signals
from postmortem.job import of_kinds
from postmortem.knowledge.registry import KIND, deaths, produced_by
from postmortem.model import Basis, Case, ClockKind, Event, When
from postmortem.parsers import clocks
from postmortem.timeline.boot import KERNEL_KINDS
from postmortem.timeline.stamps import with_when

_CORE_KINDS = produced_by("parser:core")
# Kernel lines that name a dying process, and launcher records of a process's death.
_KERNEL_DEATHS = deaths() & produced_by("parser:kernel")
_LAUNCHER_DEATHS = deaths("exit") & produced_by("parser:launcher")
_FATAL_SIGNALS = deaths("fatal_signal") - KERNEL_KINDS


def boot_from_process_deaths(placed: list[Event], boots: dict) -> dict:
    """Boot time of a host that has none, from one process's death seen twice: the
    kernel's `python3[1234]: segfault` or OOM kill (seconds since boot) and the
    launcher's record of pid 1234 failing (wall time).  The median over all such pairs
    is robust to a wrong pair; the launcher notices a death up to a second late."""
    deaths: dict[tuple[str | None, int], datetime] = {}
    how: dict[tuple[str | None, int], str | None] = {}
    for e in of_kinds(placed, _LAUNCHER_DEATHS):
        if e.pid is not None and e.when and e.when.at:
            key = (e.host, e.pid)
            deaths[key] = min(deaths.get(key, e.when.at), e.when.at)
            how[key] = signals.name_of(e.data.get("signal")) or signals.of_exitcode(e.data.get("exitcode")) or how.get(key)
    found: dict[str | None, list[float]] = defaultdict(list)
    for e in of_kinds(placed, _KERNEL_DEATHS) if deaths else ():
        if e.pid is None or not e.stamp or e.stamp.clock is not ClockKind.BOOT:
            continue
        if e.host in boots or (e.host is None and boots):
            continue
        # A pid alone (another host's name, or none) pairs the two only when they tell the same death:
        # inside a container the launcher's pids are the namespace's small numbers, and the kernel
        # log's own early-boot deaths reuse them (audit 7 L8).
        killed = _kernel_death_signal(e)
        seen = deaths.get((e.host, e.pid)) or next((t for (h, p), t in deaths.items()
                                                    if p == e.pid and killed and how.get((h, p)) == killed), None)
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


def _kernel_death_signal(e: Event) -> str | None:
    """The signal a kernel death line says killed the process: its own (a segfault's SIGSEGV,
    SIGBUS ...) or the OOM killer's SIGKILL."""
    own = signals.name_of(e.data.get("signal"))
    if own:
        return own
    return "SIGKILL" if e.kind in _OOM_KILL_KINDS else None


_OOM_KILL_KINDS = deaths("kernel_kill")


def pin_to_process_death(placed: list[Event]) -> None:
    """A crash report with no time (faulthandler, gdb, a UCX block) goes where the
    launcher saw that process die: by pid when the report has one, else by its signal
    when exactly one launcher record died of that signal."""
    deaths = [e for e in of_kinds(placed, _LAUNCHER_DEATHS) if e.when and e.when.at]
    if not deaths or not of_kinds(placed, _FATAL_SIGNALS):
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
        placed[i] = with_when(e, When(
            death.when.at, Basis.ANCHORED, 2.0,  # type: ignore[union-attr]
            f"no time printed; pinned to the launcher's record of this process dying ({death.ref.describe()})"))


def _signal_name(text: str) -> str:
    return signals.name_of(text) or text.strip().upper()


_ANCHOR_KINDS = frozenset({KIND.msg_rendezvous_complete, KIND.nccl_init})


def _anchor_key(e: Event) -> tuple | None:
    """Events that several hosts log at one physical moment: the rendezvous that forms
    the group, NCCL init completing for one communicator."""
    if e.kind == KIND.msg_rendezvous_complete:
        return ("rendezvous",)
    if e.kind == KIND.nccl_init and e.data.get("phase") == "COMPLETE" and e.data.get("commId"):
        return ("nccl-init", e.data["commId"])
    return None


def host_skews(placed: list[Event]) -> dict[str, tuple[float, int, float]]:
    """host -> (seconds its clock is ahead of the reference host, anchors, spread)."""
    per_host: dict[str, dict[tuple, list[datetime]]] = defaultdict(lambda: defaultdict(list))
    for e in of_kinds(placed, _ANCHOR_KINDS):
        if not (e.host and e.when and e.when.at):
            continue
        key = _anchor_key(e)
        if key:
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


def apply_skews(placed: list[Event], skews: dict, notes: list[str]) -> list[Event]:
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
            e = with_when(e, When(clocks.add_seconds(e.when.at, seconds), Basis.ANCHORED,
                                   (e.when.uncertainty_s or 0) + resolution,
                                   f"{e.when.note + '; ' if e.when.note else ''}{said}"))
        out.append(e)
    return out


# The notes of untimed lines placed by their file's timed neighbours: the time is a lower bound
# (up to the gap to the next timed line later), or an upper bound (classify reads them so).
AFTER_PREVIOUS = "no time printed; placed after the previous timed line of this file"
BEFORE_NEXT = "no time printed; at or before the next timed line of this file"
# One shared value for every event without a time (most lines of a big NCCL bundle).
_NO_TIME = When(None, Basis.ORDER_ONLY, None, "no time printed")
# An event that no stage has placed yet (`when` None) is the pipeline's own, made by a parser
# for this case and not yet seen by anything after the timeline: its empty `when` is filled in
# where it is rather than by a copy (at 8,192 ranks, 400,000 copies cost half a second and
# ~60 MB while both sets were alive).  Events that already carry a When are still copied.
_set_when = Event.when.__set__  # type: ignore[attr-defined]
_WHEN = attrgetter("when")


def place_untimed(placed: list[Event], case: Case) -> None:
    """Untimed lines sit between the timed lines of the same file; a core by its mtime."""
    mtimes = {a.path: a.mtime for a in case.artifacts}
    # Files with a timed line or a core are walked line by line; in the others (most files of
    # a big NCCL bundle) every untimed line simply has no time.
    whens = list(map(_WHEN, placed))
    walked = {e.ref.path for e in compress(placed, [w.at if w is not None else None for w in whens])}
    walked.update(e.ref.path for e in of_kinds(placed, _CORE_KINDS) if mtimes.get(e.ref.path))
    if not walked:   # no file has a time: every line without one simply has none
        deque(map(_set_when, compress(placed, map(is_, whens, repeat(None))), repeat(_NO_TIME)), maxlen=0)
        for i in [i for i, w in enumerate(whens) if w is not None and w.at is None and w.basis is not Basis.ORDER_ONLY]:
            placed[i] = with_when(placed[i], _NO_TIME)
        return
    by_artifact: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(placed):
        if e.ref.path in walked:
            by_artifact[e.ref.path].append(i)
        elif e.when is None:
            _set_when(e, _NO_TIME)
        elif e.when.at is None and e.when.basis is not Basis.ORDER_ONLY:
            placed[i] = with_when(e, _NO_TIME)
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
                placed[i] = with_when(e, When(
                    mtimes[path], Basis.MTIME, 60.0, "core file's modification time (written at the crash)"))
                continue
            before = placed[timed[nxt - 1]].when.at if nxt > 0 else None  # type: ignore[union-attr]
            after = placed[timed[nxt]].when.at if nxt < len(timed) else None  # type: ignore[union-attr]
            if before:
                gap = (after - before).total_seconds() if after and after >= before else None
                placed[i] = with_when(e, When(
                    before, Basis.ANCHORED, gap, AFTER_PREVIOUS))
            elif after:
                placed[i] = with_when(e, When(
                    after, Basis.ANCHORED, None, BEFORE_NEXT))
            else:
                placed[i] = with_when(e, _NO_TIME)
