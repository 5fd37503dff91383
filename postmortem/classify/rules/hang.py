"""Hangs read from PyTorch Flight Recorder dumps and all-rank stacks: which rank held the job up.

Per process group (postmortem/collectives.py):

* ranks called different operations, sizes or dtypes at the same sequence number: the ranks
  ran different code (collective_desync) -- the strongest sign a dump can give;
* some ranks wait inside collective N while others never entered it: the ones behind held the
  job up.  If such a rank died (the launcher's exit record, a traceback), its death is the
  root (app_error); if it is alive, it was busy elsewhere (straggler_timeout), and its stack
  (py-spy, faulthandler) says doing what;
* every rank entered collective N and none completed it: nothing in the application is
  behind, the collective itself did not progress (comms: nccl_network with network signs,
  else nccl_timeout, weakly).
"""
from __future__ import annotations

import dataclasses
import re

from postmortem import stacks as stacklib
from postmortem.classify.rules.base import Rule, died_of, events_of, sign_finding
from postmortem.classify.rules.config import TIMEOUT_KINDS
from postmortem.knowledge.registry import KIND, LIMIT, SIGN, deaths, registry
from postmortem.model import Case, Event, Ref, Severity

# What a rank's innermost frames say it was doing: (activity, pattern on normalized frames).
ACTIVITIES = (
    ("checkpointing", re.compile(r"checkpoint|save_state|torch\.save|serialization\.|_save\b|\.save$", re.I)),
    ("data loading", re.compile(r"load_batch|dataloader|_next_data|__next__|_get_data|collate|fetch|read_shard|"
                                r"decode|tokeniz|preprocess|dataset", re.I)),
    ("a collective", re.compile(r"all_reduce|allreduce|all_gather|allgather|reduce_scatter|broadcast|barrier|"
                                r"all_to_all|alltoall|distributed_c10d\.|ProcessGroup|gloo::|nccl", re.I)),
)

# A rank's death: the signals that end a process from outside or by a fault (SIGTERM is the
# launcher tearing the job down after the fact, not a cause).
DEATH_SIGNALS = ("SIGKILL", "SIGSEGV", "SIGBUS", "SIGABRT", "SIGILL", "SIGFPE")


def activity(frames: tuple[str, ...]) -> str:
    """The first activity the innermost frames match, or the user code it is in."""
    for text in frames:
        for name, pattern in ACTIVITIES:
            if pattern.search(text):
                return name
    return "user code"


class FlightRecorderHang(Rule):
    id = "flightrec-hang"

    def findings(self, case, k, trace):
        if not any(f.name == "flightrec.dump" for f in case.facts):
            return []   # (before importing collectives and the Flight Recorder parser: startup time)
        from postmortem import collectives

        traces = collectives.traces_of(case.facts)
        if not traces:
            return []
        m = collectives.match(traces)
        for note in m.notes:
            trace.append(f"{self.id}: {note}")
        by_ref = {(e.ref.path, e.ref.record): e for e in events_of(case, KIND.fr_created)}
        groups = stacklib.group_by_stack(case.stacks)
        out = []
        hung = _hang_signs(case)
        failed = bool(hung) or any(_death(e) for e in events_of(case, deaths("fatal_signal", "exit")))
        for g in m.groups:
            trace.append(f"{self.id}: {g.summary()}")
            if g.desyncs and failed:
                out.append(self._desync(g, k, by_ref))
            elif g.desyncs:
                # Dumps of a job that shows no timeout, hang dump or death: ranks that differ at
                # one collective are a lean until something failed (audit 6 H11).
                trace.append(f"{self.id}: ranks differ at a collective, but nothing in the bundle failed: a lean")
                out.append(self._desync(g, k, by_ref, SIGN.flightrec_desync_snapshot))
            elif not failed:
                # A dump taken on demand always shows some collective in flight and some rank a
                # step ahead: without a timeout, a watchdog dump or a death, that is no hang --
                # only a lean to the rank behind, and a second dump decides.
                trace.append(f"{self.id}: no timeout, hang dump or death in the bundle: a snapshot, not a hang")
                if g.behind and g.waiting:
                    out.append(self._snapshot(g, k, by_ref))
            elif (g.behind or g.missing_dumps) and g.waiting:
                out.append(self._behind(g, case, k, by_ref, groups, trace))
            elif g.stuck_all and g.frontier is not None and len(g.dumped) >= 2:
                out.append(self._stuck(g, case, k, by_ref))
        return out

    @staticmethod
    def _events(refs, by_ref) -> list[Event]:
        return [by_ref[(r.path, r.record)] for r in refs if r is not None and (r.path, r.record) in by_ref]

    def _desync(self, g, k, by_ref, sign=SIGN.flightrec_desync):
        d = g.desyncs[0]
        refs = (d.ref,) + d.others
        summary = (f"process group {g.pg}: at collective #{d.seq} rank {d.rank} called {d.got} while "
                   f"rank(s) {_ranks([c for c in g.dumped if c != d.rank])} called {d.expected} "
                   f"({d.ref.describe()}){_frames_of(d.ref, g)}")
        events = self._events(refs, by_ref)
        return sign_finding(k, sign, self.id, summary, events, "desync",
                            extra_refs=tuple(r for r in refs if (r.path, r.record) not in by_ref), culprits=(d.rank,))

    def _behind(self, g, case: Case, k, by_ref, groups, trace):
        # Only a rank whose own dump shows it behind is behind; a rank with no dump is unknown
        # (not collected, or frozen inside the collective and unable to dump): never a culprit
        # on absence (audit 6 M8).  A dead rank explains its missing dump, so deaths are looked
        # for among both.
        behind = [b.rank for b in g.behind]
        missing = list(g.missing_dumps)
        frontier_op = next((r.op for r in g.rows if r.seq == g.frontier), "?")
        waiting = (f"rank(s) {_ranks(g.waiting)} waited in collective #{g.frontier} {frontier_op}"
                   f" ({g.waiting_refs[0].describe()})" if g.waiting_refs else "")
        death_kinds = deaths("fatal_signal", "exit", "kernel_kill")
        died = [e for e in events_of(case, death_kinds) if e.rank in behind + missing and _death(e)]
        refs = tuple(b.ref for b in g.behind if b.ref) + g.waiting_refs
        events = self._events(refs, by_ref)
        extra = tuple(r for r in refs if (r.path, r.record) not in by_ref)
        lasts = "; ".join(([f"rank(s) {_ranks(missing)} left no dump (collect it)"] if missing else [])
                          + [(f"rank {b.rank} last entered #{b.last_seq}" if b.last_seq is not None
                              else f"rank {b.rank}'s dump holds no collective at all")
                             + (f" from {_caller(b.frames)}" if b.frames else "")
                             + (f" ({b.ref.describe()})" if b.ref else "") for b in g.behind[:3]])
        if died:
            d = died[0]
            trace.append(f"{self.id}: rank {d.rank} behind and dead ({d.ref.describe()})")
            return sign_finding(k, SIGN.flightrec_behind_rank_died, self.id,
                                f"rank {d.rank} died ({_death(d)}, {d.ref.describe()}) after its last collective: "
                                f"{waiting} and it never arrived; {lasts}", [d] + events, "rank-died",
                                extra_refs=extra, culprits=(d.rank,))
        if not behind:
            trace.append(f"{self.id}: every dumped rank waited in #{g.frontier}; rank(s) {missing} left no dump")
            return sign_finding(k, SIGN.flightrec_dump_missing, self.id,
                                f"{waiting}; rank(s) {_ranks(missing)} left no Flight Recorder dump: collect "
                                f"rank(s) {_ranks(missing)}'s dump (or stack) to see whether they were behind",
                                events, "behind", extra_refs=extra)
        doing, stack_refs = self._doing(behind, groups)
        w = (SIGN.flightrec_rank_behind.weight + (SIGN.flightrec_behind_stack_elsewhere.weight if doing else 0)
             + (SIGN.flightrec_several_waiting.weight if len(g.waiting) >= 2 else 0))
        trace.append(f"{self.id}: rank(s) {behind} behind, alive{'; ' + doing if doing else ''}")
        summary = (f"rank(s) {_ranks(behind)} never entered collective #{g.frontier} while {waiting}; {lasts}"
                   + (f"; {doing}" if doing else ""))
        return sign_finding(k, SIGN.flightrec_rank_behind, self.id, summary, events, "behind",
                            extra_refs=extra + stack_refs, weight=w, culprits=tuple(behind))

    @staticmethod
    def _doing(behind: list[int], groups) -> tuple[str, tuple[Ref, ...]]:
        """What the ranks behind were doing by their own stacks, and what the others were doing."""
        mine = [gr for gr in groups if set(gr.ranks) & set(behind)]
        if not mine:
            return "", ()
        parts, refs = [], []
        for gr in groups[:4]:
            ranks = list(gr.ranks)
            verb = "is" if len(ranks) == 1 else "are"
            parts.append(f"rank{'s' if len(ranks) > 1 else ''} {_ranks(ranks)} {verb} in {gr.where} "
                         f"({activity(gr.frames)}; {gr.stacks[0].origin} {gr.stacks[0].ref.describe()})")
            refs.append(gr.stacks[0].ref)
        return "stacks: " + ", ".join(parts), tuple(refs)

    def _snapshot(self, g, k, by_ref):
        behind = [b.rank for b in g.behind]
        frontier_op = next((r.op for r in g.rows if r.seq == g.frontier), "?")
        refs = tuple(b.ref for b in g.behind if b.ref) + g.waiting_refs
        summary = (f"rank(s) {_ranks(behind)} had not entered collective #{g.frontier} {frontier_op} that rank(s) "
                   f"{_ranks(g.waiting)} waited in; no timeout, hang dump or death says the job hung: take a second "
                   "Flight Recorder dump (or py-spy dump) of every rank a minute later -- the same entries again make it a hang")
        events = self._events(refs, by_ref)
        return sign_finding(k, SIGN.flightrec_rank_behind_snapshot, self.id, summary, events, "behind",
                            extra_refs=tuple(r for r in refs if (r.path, r.record) not in by_ref), culprits=tuple(behind))

    def _stuck(self, g, case: Case, k, by_ref):
        network = [e for e in events_of(case, KIND.nccl_warn) if e.severity in (Severity.WARNING, Severity.ERROR)]
        frontier_op = next((r.op for r in g.rows if r.seq == g.frontier), "?")
        events = self._events(g.waiting_refs, by_ref)
        summary = (f"every rank of process group {g.pg} ({_ranks(g.dumped)}) entered collective #{g.frontier} "
                   f"{frontier_op} and none completed it: no rank was behind, the collective did not progress")
        if network:
            return sign_finding(k, SIGN.flightrec_all_stuck_network, self.id,
                                summary + f"; network errors: {network[0].ref.describe()}", events + network[:2], "stuck")
        return sign_finding(k, SIGN.flightrec_all_stuck, self.id, summary, events, "stuck")


class CgroupHeldBack(Rule):
    """A collective timed out while a cgroup of the job could not run its tasks: the kernel's
    freezer held them (strong), or CFS bandwidth control throttled the group in most of its
    periods (weak).  Its ranks arrived late or never; the others' timeouts are the fallout.
    Read only beside a hang sign: a frozen or throttled group alone is no failure."""

    id = "cgroup-held-back"

    def findings(self, case, k, trace):
        facts = [f for f in case.facts if f.name.startswith("cgroup.")]
        if not facts:
            return []
        hang = _hang_signs(case)
        if not hang:
            return []
        out = []
        frozen = _job_frozen(case, facts, self.id, trace)
        if frozen is not None:
            trace.append(f"{self.id}: a cgroup of the job was frozen ({frozen.ref.describe()}) beside {hang[0].ref.describe()}")
            out.append(sign_finding(k, SIGN.cgroup_frozen_during_hang, self.id,
                                    f"the job's cgroup was frozen ({frozen.text or frozen.value}, {frozen.ref.describe()}): "
                                    "its tasks were stopped by the kernel's freezer (docker pause, a checkpoint tool) "
                                    f"while its peers waited in a collective until the timeout ({hang[0].ref.describe()})",
                                    hang[:2], "frozen", extra_refs=(frozen.ref,)))
        starved = _job_under_oom(case, facts, self.id, trace)
        if starved is not None:
            trace.append(f"{self.id}: the job's memory cgroup was under OOM ({starved.ref.describe()}) beside {hang[0].ref.describe()}")
            out.append(sign_finding(k, SIGN.cgroup_under_oom_during_hang, self.id,
                                    f"the job's memory cgroup was under OOM ({starved.text or starved.value}, "
                                    f"{starved.ref.describe()}): its tasks that asked for memory were stopped at the "
                                    f"group's limit while its peers waited in a collective until the timeout "
                                    f"({hang[0].ref.describe()})", hang[:2], "under-oom", extra_refs=(starved.ref,)))
        held = _throttled_in_hang(facts, self.id, trace)
        if held is not None:
            throttled, periods, ref, how = held
            quota, period = _fact_number(facts, "cgroup.cpu_quota_us"), _fact_number(facts, "cgroup.cpu_period_us")
            limit = (f"; its quota is {quota[1] / period[1]:.2f} CPU ({quota[0].ref.describe()})"
                     if quota and period and period[1] > 0 else "")
            trace.append(f"{self.id}: cpu.stat throttled {throttled} of {periods} periods {how} ({ref.describe()})")
            out.append(sign_finding(k, SIGN.cgroup_cpu_throttled_during_hang, self.id,
                                    f"the job's cgroup was throttled by its CPU limit in {throttled} of {periods} "
                                    f"periods {how} ({ref.describe()}){limit}: its ranks ran slowly while "
                                    f"others waited in a collective until the timeout ({hang[0].ref.describe()})",
                                    hang[:2], "throttled", extra_refs=(ref,)))
        return out


def _job_under_oom(case, facts, rule: str, trace: list[str]):
    """The job's memory cgroup reading under_oom 1, or None.  As for the freezer (audit 8 H4): a
    listing may show any group of the host, so a group under OOM is the job's when the job's own
    lines name it, or when no group of the bundle reads 0."""
    readings = [f for f in facts if f.name == "cgroup.under_oom" and isinstance(f.value, int)]
    under = [f for f in readings if f.value > 0]
    if not under:
        return None
    files = {f.ref.path for f in readings}
    named = {g for g in {_group(f) for f in readings} if g and _named_by_job(case, g.rsplit("/", 1)[-1], files)}
    if named:
        mine = [f for f in readings if _group(f) in named]
        if any(f.value == 0 for f in mine):
            trace.append(f"{rule}: the job's memory cgroup reads under_oom 0 ({next(f for f in mine if f.value == 0).ref.describe()}): "
                         "its state during the hang is not known")
            return None
        return next((f for f in mine if f.value > 0), None)
    if len(under) < len(readings):
        trace.append(f"{rule}: a memory cgroup reads under_oom 1 ({under[0].ref.describe()}) beside one that reads 0, "
                     "and the job's lines name neither: which is the job's is not known")
        return None
    return under[0]


def _throttled_in_hang(facts, rule: str, trace: list[str]):
    """(throttled, periods, ref, how) when cpu.stat shows the group throttled while the job hung,
    else None (audit 8 H7).  nr_periods / nr_throttled count for the group's whole life (periods
    elapse only while it has work: kernel/sched/fair.c do_sched_cfs_period_timer), so one reading's
    share cannot say WHEN it ran out of quota -- a burst at start gives the same share.  Two readings
    of one group: the periods between them.  One reading: only when it was throttled in all but
    fewer than threshold.cpu_periods_min of its periods -- then every time it had work, the hang's
    included, it was held back."""
    readings: dict[str, list] = {}
    periods = None
    for f in facts:   # cpu.stat prints nr_periods, then nr_throttled
        if f.name == "cgroup.cpu_periods" and isinstance(f.value, int):
            periods = f
        elif f.name == "cgroup.cpu_throttled_periods" and isinstance(f.value, int) and periods is not None:
            readings.setdefault(_group(periods), []).append((periods.value, f.value, f.ref))
            periods = None
    for group, seen in readings.items():
        if len(seen) >= 2:
            (p0, t0, _), (p1, t1, ref) = seen[0], seen[-1]
            dp, dt = p1 - p0, t1 - t0
            if dp >= LIMIT.cpu_periods_min and dt / dp >= LIMIT.cpu_throttled_share:
                return dt, dp, ref, "between its first and last reading"
            trace.append(f"{rule}: cpu.stat read {len(seen)} times ({ref.describe()}): throttled in {dt} of the "
                         f"{dp} periods between the readings -- not held back then")
            continue
        ((p, t, ref),) = seen
        if p >= LIMIT.cpu_periods_min and p - t < LIMIT.cpu_periods_min:
            return t, p, ref, "(every period it had work in, so in the hang too)"
        if p and t / p >= LIMIT.cpu_throttled_share:
            trace.append(f"{rule}: cpu.stat throttled {t} of {p} periods ({ref.describe()}) counts the group's whole "
                         f"life, {p - t} periods unthrottled: when it ran out of quota is not known -- read cpu.stat "
                         "twice (before the timeout and after) to date the throttling")
    return None


def _job_frozen(case, facts, rule: str, trace: list[str]):
    """The frozen reading of the JOB's group, or None (audit 8 H4).  A freezer listing can show
    any group of the host: a frozen one is the job's only when the job's own lines name it, or
    when no group of the listing is thawed (one group `cat`, or a ps row of a frozen task); a
    group the job's lines name that is THAWED, or a thawed group beside the frozen one with
    neither named, leaves the job's state unknown."""
    states = [f for f in facts if f.name == "cgroup.frozen"]
    frozen = [f for f in states if f.value is True]
    if not frozen:
        return None
    groups = {f: _group(f) for f in states}
    files = {f.ref.path for f in states}
    named = {g for g in set(groups.values()) if g and _named_by_job(case, g.rsplit("/", 1)[-1], files)}
    if named:
        mine = [f for f in states if groups[f] in named]
        hit = next((f for f in mine if f.value is True), None)
        if hit is None:
            trace.append(f"{rule}: the job's group ({', '.join(sorted(named))}) is not frozen; another group's "
                         f"state ({frozen[0].ref.describe()}) is not the job's")
        # The same group read thawed in another file (a later `cat`, a second collection): the
        # readings disagree and nothing dates them, so its state at the hang is not known (audit 8
        # L9, REAL cgroup v2 files: 'frozen 1', then 'frozen 0').  cgroup.freeze 1 beside 'frozen 0'
        # in one file is a freeze in progress (v1 FREEZING), not a disagreement.
        thawed = next((f for f in mine if hit is not None and f.value is False and groups[f] == groups[hit]
                       and f.ref.path != hit.ref.path), None)
        if thawed is not None:
            trace.append(f"{rule}: the job's group {groups[hit]} reads frozen ({hit.ref.describe()}) and thawed "
                         f"({thawed.ref.describe()}): which state held during the hang is not known -- keep one "
                         "reading taken while the job hung")
            return None
        return hit
    thawed = [f for f in states if f.value is False]
    if thawed:
        trace.append(f"{rule}: the listing shows a thawed group ({thawed[0].ref.describe()}) beside the frozen one "
                     f"({frozen[0].ref.describe()}) and no line of the job names either: which is the job's is not known")
        return None
    return frozen[0]


# parsers/cgroup_state.py names a freezer state's group in its text: "FROZEN in /sys/fs/cgroup/freezer/job"
_GROUP_TEXT = re.compile(r" in (?P<group>/\S+)$")


def _group(f) -> str:
    m = _GROUP_TEXT.search(f.text or "")
    return m.group("group") if m else ""


def _named_by_job(case, name: str, skip: set[str]) -> bool:
    """A group's folder name (a container id, a job's slice) on a line of the bundle outside the
    cgroup listings themselves."""
    if len(name) < 4:
        return False
    return any(name in (e.text or "") for e in case.events if e.ref.path not in skip)


def _fact_number(facts, name: str):
    """(fact, value) of the first fact of this name holding a number, or None."""
    return next(((f, f.value) for f in facts if f.name == name and isinstance(f.value, int)
                 and not isinstance(f.value, bool)), None)


def _hang_signs(case: Case) -> list[Event]:
    """Signs that the job hung: a collective timeout message, a faulthandler timeout dump, or
    -- when neither is there -- a measured stall (the job's progress lines stopped and the job
    was then stopped from outside while its workers were still alive: _stall)."""
    signs = [e for e in events_of(case, {*TIMEOUT_KINDS, KIND.py_dump}) if e.kind in TIMEOUT_KINDS
             or (e.kind == KIND.py_dump and str(e.data.get("reason", "")).startswith("Timeout"))]
    return signs or _stall(case)


def waits(case: Case) -> list[Event]:
    """What a fault of the job's path would explain: its collective timeouts, else -- a job that
    hung without one -- the launcher's stop that ended a measured stall (_stall)."""
    return events_of(case, TIMEOUT_KINDS) or _stall(case)[:1]


def waits_text(found: list[Event]) -> str:
    """'N collective timeout(s) waited on the traffic (first X)' or, for a stall, how it ended."""
    if found and found[0].kind == KIND.launcher_signal_received:
        return (f"the job made no progress until it was stopped from outside ({found[0].ref.describe()}): its "
                "collectives waited on the traffic")
    return f"{len(found)} collective timeout(s) waited on the traffic (first {found[0].ref.describe()})"


def _at(e: Event):
    return e.when.at if e.when is not None else None


def _stall(case: Case) -> list[Event]:
    """[the launcher's stop, the job's last progress line] when the job hung without a timeout
    (signals.toml threshold.stall_factor, stall_lines_min, stall_cadence_floor_s, stall_floor_s),
    else [].

    The torchrun agent prints 'Received N death signal, shutting down workers' only when the
    agent ITSELF got a signal (torch/distributed/elastic/agent/server/api.py, the SignalException
    handler of run()): somebody stopped the job from outside (scancel, kill, Ctrl-C) -- it never
    prints it when a worker failed.  With no worker death recorded before that stop, the workers
    were alive.  A silence after the job's last progress line (messages.toml rank_step,
    progress_bar) says the job was slow or stuck, and one stack dump cannot tell which: phases
    that print no line (an evaluation, a checkpoint save or upload, DataLoader workers respawned
    at an epoch boundary, a recompile) run for minutes (audit 11 H4).  So the silence makes a hang
    only when it is longer than stall_factor times the longest interval between progress lines,
    than the longest gap between ANY two lines of the job before it (a previous evaluation or
    save), and than threshold.stall_floor_s -- or when a second dump of a worker, taken later,
    shows the same frames as the first (_dumps_unmoved): the rank did not move."""
    quiet = _silence(case)
    if not quiet:
        return []
    stop, last, silence, longest_any = quiet
    if silence >= max(longest_any, LIMIT.stall_floor_s) or _dumps_unmoved(case):
        return [stop, last]
    return []


def _silence(case: Case):
    """(stop, last progress line, silence s, longest gap s between any two lines before it) when
    the job's progress lines stopped and it was then stopped from outside with its workers
    alive, the silence stall_factor times its step cadence; else None."""
    stops = [e for e in events_of(case, (KIND.launcher_signal_received,)) if _at(e) is not None]
    if not stops:
        return None
    stop = min(stops, key=_at)
    t_stop = _at(stop)
    died = [e for e in events_of(case, deaths("fatal_signal", "exit", "kernel_kill", "exception"))
            if _at(e) is not None and _at(e) < t_stop]
    if died:
        return None
    lines = sorted((e for e in events_of(case, (KIND.msg_rank_step, KIND.msg_progress_bar))
                    if _at(e) is not None and _at(e) <= t_stop), key=_at)
    if len(lines) < LIMIT.stall_lines_min:
        return None
    longest = max((_at(b) - _at(a)).total_seconds() for a, b in zip(lines, lines[1:]))
    silence = (t_stop - _at(lines[-1])).total_seconds()
    if silence <= 0 or silence < LIMIT.stall_factor * max(longest, LIMIT.stall_cadence_floor_s):
        return None
    # the job's own logs (the files of its progress lines): a kernel log or journal beside them
    # reaches back hours, its gaps are not the job's phases
    t_last, files = _at(lines[-1]), {e.ref.path for e in lines}
    times = sorted(_at(e) for e in case.events if e.ref.path in files and _at(e) is not None and _at(e) <= t_last)
    longest_any = max(((b - a).total_seconds() for a, b in zip(times, times[1:])), default=0.0)
    return stop, lines[-1], silence, longest_any


def _dumps_unmoved(case: Case) -> bool:
    """Two or more dumps of one worker's main thread (py-spy, faulthandler, gdb; a dump is taken
    at one moment, so two dumps of one process are two moments) exist, and every worker dumped
    more than once shows the same frames in each: nothing moved between them."""
    by_pid: dict[int, list] = {}
    for s in case.stacks:
        if s.pid is None or s.origin not in stacklib.HANG_ORIGINS or not stacklib._is_main_thread(s):
            continue
        by_pid.setdefault(s.pid, []).append(tuple((f.function, f.file, f.line) for f in s.frames))
    again = [frames for frames in by_pid.values() if len(frames) >= 2]
    return bool(again) and all(len(set(frames)) == 1 for frames in again)


def stall_unconfirmed(case: Case) -> str:
    """How a silence reads that is too short to say the job hung (no second dump), or ""."""
    quiet = _silence(case)
    if not quiet or _stall(case):
        return ""
    stop, last, silence, longest_any = quiet
    return (f"the job's progress lines stopped at {last.ref.describe()} and it was stopped from outside "
            f"{silence:.0f} s later ({stop.ref.describe()}); a phase that prints no line (evaluation, a save) "
            f"takes that long too, so the silence alone is no hang (needs more than "
            f"{max(longest_any, LIMIT.stall_floor_s):.0f} s, or a second dump with the same frames)")


def _death(e: Event) -> str:
    """The fatal signal an event says a process died of, or "" (an exit code 1 after the
    rank's own timeout, or the launcher's SIGTERM, is no cause by itself)."""
    return next((s for s in DEATH_SIGNALS if died_of(e, s)), "")


def _caller(frames) -> str:
    """The first frame outside torch.distributed: where the program called the collective."""
    for f in frames:
        if f.file and "torch/distributed" not in f.file:
            return f"{f.function} ({f.file.rsplit('/', 1)[-1]}:{f.line})"
    return f"{frames[0].function}" if frames else "?"


def _frames_of(ref: Ref, g) -> str:
    for row in g.rows:
        for c in row.cells:
            if c.entry is not None and c.entry.ref(ref.path) == ref and c.entry.frames:
                return f", called from {_caller(c.entry.frames)}"
    return ""


def _ranks(ranks) -> str:
    from postmortem import collectives

    return collectives._span(ranks)


class StacksAtTimeout(Rule):
    """Where each rank stood when the job hung, read off its own stacks: the traceback a
    collective timeout raised (gloo raises in the rank's `work.wait()`, so the traceback is the
    call that waited) and all-rank dumps (py-spy, faulthandler, gdb main threads).

    * ranks waiting in *different* collective calls (a barrier on one rank, the gradient
      all-reduce of backward on another): collectives pair by their order in the process
      group, so neither can complete -- the ranks ran different code (collective_desync);
    * one rank in ordinary code (tokenizing, saving, evaluating) while the others wait in a
      collective: that rank held them up (straggler_timeout); strong when the dump says the
      busy rank was running (py-spy `active`), weak otherwise.

    A rank with no place of its own is placed, beside a hang sign, by the peer-gone error (gloo's
    "Connection closed by peer") its wait raised in the call it was in when the rank that timed out
    went away.

    Decided with a hang sign (a collective timeout or a timeout dump).  Without one, dumps of
    every rank (py-spy, faulthandler, gdb: tools people run on a job that stopped moving) only
    lean the same way: one dump is a snapshot, and a healthy job is also caught mid-collective;
    the verdict then says to take a second dump of every rank to see whether anything moved."""

    id = "stacks-at-timeout"

    def findings(self, case, k, trace):
        hang = _hang_signs(case)
        params = registry().signals[SIGN.stacks_different_collectives.id].params
        where = _positions(case, hang, params)
        if hang:
            # a rank with no place of its own is placed by the peer-gone error its wait raised when the
            # rank that timed out went away (gloo raises in the work.wait() of the call it was in)
            for r, pos in _peer_gone_positions(case, params).items():
                where.setdefault(r, pos)
        waiting = {r: p for r, p in where.items() if p.collective}
        busy = {r: p for r, p in where.items() if not p.collective}
        if not waiting or (not hang and (len(where) < 2 or _a_rank_died(case))):
            return []   # (a snapshot beside a death: the death is the story, the dumps its aftermath)
        p2p = self._one_direction(case, hang, params, where, trace)
        if p2p is not None:
            return [p2p(k)]
        local = _local_ranks(case) if _stall_text(hang) else {}
        listing = "; ".join(f"{_who([r], local)} {p.describe()}" for r, p in sorted(where.items())[:6])
        trace.append(f"{self.id}: {listing}")
        if not hang:
            trace.append(f"{self.id}: no timeout or hang dump in the bundle: the dumps are a snapshot, they only lean")
            quiet = stall_unconfirmed(case)
            if quiet:
                trace.append(f"{self.id}: {quiet}")
        snapshot = ("" if hang else "; no timeout or hang dump says the job hung: take a second dump of every rank "
                    "a minute later (py-spy dump --pid) -- the same frames again make it a hang")
        stalled = _stall_text(hang)
        if stalled:
            trace.append(f"{self.id}: no timeout; {stalled}")
        calls = sorted({p.collective for p in waiting.values()})
        if len(calls) >= 2 and not busy:
            summary = (f"the ranks waited in different collectives when the job hung ({listing}): collectives "
                       "pair by their order, so none of them could complete -- the ranks ran different code" + snapshot)
            # gloo raises the timeout in the call that waited; NCCL's calls return at once and
            # its ranks block wherever they next synchronise, so their frames only lean.
            decided = all(p.origin == "traceback" for p in waiting.values()) or not _nccl_in(case)
            sign = SIGN.stacks_different_collectives if decided else SIGN.stacks_different_collectives_async
            if not hang:
                sign = SIGN.stacks_different_collectives_snapshot
            return [sign_finding(k, sign, self.id, summary, [], "desync",
                                 extra_refs=tuple(p.ref for p in where.values())[:6])]
        if busy:
            running = {r: p for r, p in busy.items() if p.running}
            if running and _nccl_in(case):
                held = {r: p for r, p in running.items() if not _cpu_work(p)}
                for r, p in sorted(held.items()):
                    trace.append(f"{self.id}: rank {r} was on-CPU in {p.frame}, but under NCCL a rank that synchronises"
                                 " with the GPU behind a hung collective spins too: its frames "
                                 + ("show a CUDA sync" if _sync_frame(p.frames) else "show no CPU-side work")
                                 + " -- it only leans")
                running = {r: p for r, p in running.items() if r not in held}
            sign = SIGN.stacks_rank_running_elsewhere if running else SIGN.stacks_rank_elsewhere
            blocked = {} if running or not hang else \
                {r: w for r, w in ((r, _own_wait(p)) for r, p in busy.items()) if w}
            trouble = _network_trouble(case) if any(w.network for w in blocked.values()) else ""
            if trouble:
                # a socket read that never returns while the bundle shows the network failing: the
                # same fault may hold the read and the collective -- the rank only leans
                trace.append(f"{self.id}: a rank waits for a network reply, and {trouble}: not read as its own wait")
                blocked = {r: w for r, w in blocked.items() if not w.network}
            healthy = _path_healthy(case) if blocked else ""
            if blocked and not healthy:
                # a socket read without a timeout, or a child doing one (an upload, rsync, a fetch), is
                # held by the very faults that hold the collectives (a DROP on the path, a dead port);
                # no network evidence in a bundle is no evidence of a healthy network (audit 11 H2)
                trace.append(f"{self.id}: {_who(sorted(blocked), local)} waited in work of its own, but nothing in the "
                             "bundle shows the job's path healthy (`ss -tin` of the connections between its hosts): "
                             "the fault that held the wait may hold the collectives too -- it only leans")
                blocked = {}
            elif healthy:
                trace.append(f"{self.id}: the job's path was healthy: {healthy}")
            if blocked:
                sign = SIGN.stacks_rank_blocked_in_own_wait
            if not hang:
                sign = SIGN.stacks_rank_elsewhere_snapshot
            late = running or busy
            if blocked:
                summary = ("; ".join(f"{_who([r], local)} was blocked {w}" for r, w in sorted(blocked.items()))
                           + f", outside any collective, while {_who(sorted(waiting), local)} waited in {', '.join(calls)}"
                           f" ({'; '.join(p.ref.describe() for p in waiting.values())})")
            else:
                summary = (f"{_who(sorted(late), local)} {'were running' if running else 'were'} outside any "
                           f"collective while {_who(sorted(waiting), local)} waited in {', '.join(calls)}: {listing}")
            summary += (f"; {stalled}" if stalled else "") + snapshot
            # a stall's last progress line is named in the summary, not cited: the report takes a cited
            # line's rank for the failing rank, and that line's rank is whoever logged last
            cited = hang[:1] if stalled else hang[:2]
            found = sign_finding(k, sign, self.id, summary, cited, "straggler",
                                 extra_refs=tuple(p.ref for p in list(late.values())[:2] + list(waiting.values())[:2]),
                                 culprits=tuple(sorted(r for r in late if r >= 0)))
            advice = next((w.advice for w in blocked.values() if w.advice), "")
            return [dataclasses.replace(found, advice=advice) if advice else found]
        if stalled and len(calls) == 1 and _whole_job(case, where):
            setup = registry().signals[SIGN.stacks_all_in_one_collective.id].params["setup_calls"]
            if calls[0] in setup:
                trace.append(f"{self.id}: every rank waits in {calls[0]} (setting a group up, not moving data): "
                             "a transport stall or ranks that disagree on the groups alike -- no reading")
                return []
            summary = (f"every rank of the job waited in {calls[0]} when it hung ({listing}): no rank was behind "
                       f"in the job's own code, the collective itself did not complete; {stalled}")
            return [sign_finding(k, SIGN.stacks_all_in_one_collective, self.id, summary, hang[:1], "stuck",
                                 extra_refs=tuple(p.ref for p in where.values())[:6])]
        return []


    def _one_direction(self, case: Case, hang: list[Event], params, where: dict, trace: list[str]):
        """Every rank of the job waits in send() (or every one in recv()): no transfer can pair.
        A rank's place may also come from the gloo error its wait raised when the peer went away
        (a "Connection closed by peer" traceback ending in the same c10d call)."""
        if not hang:
            return None
        p2p = registry().signals[SIGN.stacks_p2p_one_direction.id].params
        places = dict(where)
        for r, pos in _peer_gone_positions(case, params).items():
            places.setdefault(r, pos)
        ranks = {e.rank for e in case.events if e.rank is not None} | set(places)
        world = max(ranks) + 1 if ranks else 0
        if world < 2 or set(places) != set(range(world)):
            return None
        calls = {p.collective for p in places.values()}
        for direction in ("send_calls", "recv_calls"):
            if calls and calls <= set(p2p[direction]):
                break
        else:
            return None
        call = next(iter(calls))
        listing = "; ".join(f"rank {r} {p.describe()}" for r, p in sorted(places.items())[:6])
        trace.append(f"{self.id}: every rank of the job (0..{world - 1}) waited in {call}(): {listing}")
        decided = all(p.origin == "traceback" or p.origin in stacklib.HANG_ORIGINS for p in places.values()) \
            and not _nccl_in(case)
        sign = SIGN.stacks_p2p_one_direction if decided else SIGN.stacks_different_collectives_async
        summary = (f"every rank of the job waited in {call}() ({listing}): a point-to-point transfer completes only "
                   f"against the peer's opposite call, and no rank was in it -- the ranks' send/recv sequences do not "
                   "match (their pipeline or exchange configuration differs)")
        return lambda k: sign_finding(k, sign, self.id, summary, hang[:2], "desync",
                                      extra_refs=tuple(p.ref for p in places.values())[:6])


def _peer_gone_positions(case: Case, params) -> dict[int, "_Position"]:
    """Ranks placed by the traceback of a peer-gone error (gloo "Connection closed by peer"):
    gloo raises it in the work.wait() of the call the rank was in."""
    gone = {(e.ref.path, (e.text or "").strip()) for e in events_of(case, (KIND.msg_peer_closed_connection,))}
    out: dict[int, _Position] = {}
    for s in case.stacks:
        if s.origin != "traceback" or (s.ref.path, s.title.strip()) not in gone:
            continue
        rank = stacklib.rank_of(s)
        call = _collective_of(s.frames, params, True) if rank is not None else None
        if rank is None or not call:
            continue
        out.setdefault(rank, _Position(call, "", "", False, s.ref, s.origin, tuple(s.frames)))
    return out


def _a_rank_died(case: Case) -> bool:
    return any(_death(e) for e in events_of(case, deaths("fatal_signal", "exit", "kernel_kill")))


def _sync_frame(frames) -> str:
    """The innermost frame (up to the job's own first Python frame) that is a CUDA sync, or ""."""
    params = registry().signals[SIGN.stacks_rank_running_elsewhere.id].params
    for f in frames:
        name = f.function or ""
        if f.language == "python":
            if name.rsplit(".", 1)[-1] in params["cuda_sync_python"]:
                return name
            if not _torch_file(f.file or ""):
                return ""   # the job's own frame: what it called is above
        elif any(n in name for n in params["cuda_sync_native"]):
            return name
    return ""


def _cpu_work(p: "_Position") -> bool:
    """Was this on-CPU rank doing CPU work, not spinning in a CUDA sync?  Its innermost frames
    show no sync, and either the dump shows native frames (a sync would be among them) or the
    rank was in CPU-side input work (a Python-only dump cannot show .item() or .cpu())."""
    if _sync_frame(p.frames):
        return False
    params = registry().signals[SIGN.stacks_rank_running_elsewhere.id].params
    return any(f.language == "native" for f in p.frames) or p.activity in params["cpu_work_activities"]


def _torch_file(path: str) -> bool:
    return "/torch/" in "/" + path.replace("\\", "/")


# a line of a CPU job: gloo named as the backend or in its own messages, a +cpu torch build
_CPU_JOB = re.compile(r"\bgloo\b|ProcessGroupGloo|torch[-=_ ]\S*\+cpu\b", re.I)
# a line of a GPU job: NCCL, CUDA, a device
_GPU_JOB = re.compile(r"nccl|cuda|cudnn|\bgpu\b|nvidia", re.I)


def _cpu_only(case: Case) -> bool:
    """The job ran on CPU, by positive evidence: a line (or a dumped frame) names gloo or a +cpu
    torch build, and none names NCCL, CUDA or a GPU (a CUDA job with a gloo group for its CPU
    tensors names both: 'cpu:gloo,cuda:nccl')."""
    texts = [e.text or "" for e in case.events]
    texts += [f.function or "" for s in case.stacks for f in s.frames]
    if _nccl_in(case) or any(_GPU_JOB.search(t) for t in texts):
        return False
    return any(_CPU_JOB.search(t) for t in texts)


def _nccl_in(case: Case) -> bool:
    """The job ran NCCL: its own lines or PyTorch's NCCL process group are in the bundle."""
    return any((e.kind or "").startswith("nccl") or "NCCL" in (e.text or "") for e in case.events)


class _Position:
    """Where one rank's main thread stood: in a collective call (its name), or elsewhere."""

    __slots__ = ("collective", "activity", "frame", "running", "ref", "origin", "frames", "pid")

    def __init__(self, collective: str, activity: str, frame: str, running: bool, ref: Ref, origin: str,
                 frames: tuple = ()) -> None:
        self.collective, self.activity, self.frame, self.running, self.ref, self.origin = (
            collective, activity, frame, running, ref, origin)
        self.frames = frames   # the stack's frames, innermost first
        self.pid = None        # the dumped process (set by _positions)

    def describe(self) -> str:
        if self.collective:
            return f"waited in {self.collective} ({self.origin} {self.ref.describe()})"
        return (f"{'was running' if self.running else 'was'} in {self.frame} ({self.activity}; "
                f"{self.origin} {self.ref.describe()})")


def _positions(case: Case, hang: list[Event], params) -> dict[int, _Position]:
    """Per rank: the collective its timeout traceback or its dump waits in, else where it was.
    A dump whose rank the bundle does not say, of a process the launcher names as its worker
    (torchrun's 'Sending process N closing signal', an exit record), is keyed by -pid: it is
    one of the job's ranks, which one is not known (_who)."""
    pid_rank = {e.pid: e.rank for e in case.events if e.pid is not None and e.rank is not None}
    workers = {e.pid for e in events_of(case, (KIND.launcher_sigterm, KIND.launcher_exit)) if e.pid is not None}
    timeout_lines = {(e.ref.path, (e.text or "").strip()) for e in hang}
    # a dump of a job that hung (a timeout, a timeout dump, a measured stall) shows where it stood
    at_hang = bool(hang)
    cpu_only = at_hang and _cpu_only(case)
    out: dict[int, _Position] = {}
    for s in case.stacks:
        at_timeout = s.origin == "traceback" and (s.ref.path, s.title.strip()) in timeout_lines
        if not at_timeout and (s.origin not in stacklib.HANG_ORIGINS or not stacklib._is_main_thread(s)):
            continue
        rank = stacklib.rank_of(s)
        if rank is None:
            rank = pid_rank.get(s.pid)
        if rank is None and s.pid is not None and s.pid in workers and s.origin in stacklib.HANG_ORIGINS:
            rank = -s.pid
        if rank is None:
            continue
        running = "active" in str((s.data or {}).get("status", ""))
        # A main thread idle in autograd's backward of a CPU job that hung: CPU backward runs on the
        # calling thread (torch/csrc/autograd/engine.cpp: the caller executes the CPU ready queue),
        # so idle there is a wait -- DDP's reducer waiting for its bucket all-reduces (reducer.cpp
        # finalize_backward).  Under CUDA the caller also idles while device threads compute, so it
        # cannot tell -- and a CUDA job without NCCL_DEBUG prints no NCCL line: CPU-only is read
        # from positive evidence (_cpu_only), never from an absence (audit 11 L1).
        idle_backward = at_hang and s.origin == "py-spy" and not running and cpu_only \
            and "idle" in str((s.data or {}).get("status", ""))
        call = _collective_of(s.frames, params, at_timeout or idle_backward)
        if call is None or (at_timeout and not call):
            continue  # cannot tell (backward without its native frames; a timeout raised elsewhere)
        first = next((f for f in s.frames if f.language == "python" and f.function), None)
        frame = f"{first.function} ({(first.file or '?').rsplit('/', 1)[-1]}:{first.line})" if first else "?"
        pos = _Position(call, "" if call else activity(tuple(f.function or "" for f in s.frames)), frame,
                        running, s.ref, s.origin, tuple(s.frames))
        pos.pid = s.pid
        # a rank's decided wait (a timeout traceback, a native frame) outranks a plain dump
        if rank not in out or (call and not out[rank].collective):
            out[rank] = pos
    return out


def _whole_job(case: Case, where: dict) -> bool:
    """Do the positions cover every rank of a job whose collectives cross hosts?  The job's size
    comes from the bundle: the workers its launchers tore down (torchrun 'Sending process N
    closing signal': the workers alive at the stop), at least two launchers (one per node: one
    launcher's lines are one host -- a standalone job, whose collectives cross no network -- or
    one node's view of a bigger job, its own workers only: audit 11 M3, H3), as many workers as
    the highest global rank the lines name says the job has; every one of them dumped, nothing else."""
    if len(where) < 2:
        return False
    torn = [e for e in events_of(case, (KIND.launcher_sigterm,)) if e.pid is not None]
    workers = {e.pid for e in torn}
    launchers = {(e.ref.path, e.data.get("agent_pid")) for e in torn}
    if not workers or len(launchers) < 2:
        return False
    named = {e.rank for e in case.events if e.rank is not None and e.rank >= 0}
    if not named or max(named) + 1 != len(workers):
        return False
    return {p.pid for p in where.values()} == workers


def _stall_text(hang: list[Event]) -> str:
    """How a measured stall reads (hang = [the launcher's stop, the last progress line]), or ""."""
    if len(hang) != 2 or hang[0].kind != KIND.launcher_signal_received:
        return ""
    stop, last = hang
    quiet = (_at(stop) - _at(last)).total_seconds()
    return (f"the job's progress lines stopped at {last.ref.describe()} and nothing moved for {quiet:.0f} s until it "
            f"was stopped from outside ({stop.ref.describe()}): it hung")


class _Wait(str):
    """How an own wait reads ("in F (file:line): what, called from ..."); `network` when it waits
    for a network reply."""
    network = False
    advice = ""


def _own_wait(p: "_Position") -> str:
    """What an idle rank outside any collective waited for, when its innermost Python frames are
    a blocking wait of the job's own (stacks.rank_blocked_in_own_wait params), else ""."""
    if p.running:
        return ""
    return _wait_in(p.frames)


def _wait_in(frames) -> str:
    """What a stack's innermost Python frames wait for, by the wait table
    (stacks.rank_blocked_in_own_wait params waits), else ""."""
    params = registry().signals[SIGN.stacks_rank_blocked_in_own_wait.id].params
    frames = [f for f in frames if f.language == "python" and f.file]
    while frames and _file_in(frames[0].file, params["plumbing_files"]):
        frames = frames[1:]
    if not frames:
        return ""
    every = [f for files in params["waits"].values() for f in files] + list(params["plumbing_files"])
    for what, files in params["waits"].items():
        if _file_in(frames[0].file, files):
            caller = next((f for f in frames if not _file_in(f.file, every)), None)
            out = _Wait(f"in {frames[0].function} ({frames[0].file.rsplit('/', 1)[-1]}:{frames[0].line}): {what}"
                        + (f", called from {caller.function} ({caller.file.rsplit('/', 1)[-1]}:{caller.line})"
                           if caller else ""))
            out.network = what in params["network_waits"]
            out.advice = params["advice"].get(what, "")
            return out
    return ""


def _network_trouble(case: Case) -> str:
    """What in the bundle says the network was failing (an interface without link, a TCP
    connection losing segments, NCCL network warnings), else ""."""
    from postmortem.classify.rules import interfaces

    for f in case.facts:
        if f.name == interfaces.FACT and isinstance(f.value, dict) and interfaces._down(f.value) \
                and not interfaces._host_local(str(f.value.get("name", ""))):
            return f"interface {f.value.get('name')} had no link ({f.ref.describe()})"
        if f.name == interfaces.TCP_FACT and isinstance(f.value, dict) and interfaces._losing(f.value):
            return f"a TCP connection was losing segments ({f.ref.describe()})"
    warn = next((e for e in events_of(case, (KIND.nccl_network,)) if e.severity in (Severity.WARNING, Severity.ERROR)),
                None)
    return f"NCCL warned about the network ({warn.ref.describe()})" if warn is not None else ""


def _path_healthy(case: Case) -> str:
    from postmortem.classify.rules import interfaces

    return interfaces.path_healthy(case)


def _file_in(path: str, files) -> bool:
    """A frame's file is one of `files` ('subprocess.py', 'http/client.py'), or inside one of
    the packages among them ('urllib3/')."""
    path = "/" + (path or "").replace("\\", "/")
    return any(("/" + f) in path if f.endswith("/") else path.endswith("/" + f) for f in files)


def _who(keys, local: dict[int, int] | None = None) -> str:
    """'rank(s) 0-2' for ranks, 'pid 123' for a worker whose rank is not known (key -pid), with
    its local rank when torchrun's teardown order says it (_local_ranks)."""
    ranks = [k for k in keys if k >= 0]
    pids = sorted(-k for k in keys if k < 0)
    named = [f"pid {p} (local rank {local[p]} by torchrun's teardown order)" if local and p in local
             else f"pid {p} (rank not in the bundle)" for p in pids]
    parts = ([f"rank{'s' if len(ranks) > 1 else ''} {_ranks(ranks)}"] if ranks else []) + \
        [", ".join(named)] * bool(pids)
    return " and ".join(parts) or "?"


def _local_ranks(case: Case) -> dict[int, int]:
    """pid -> local rank from torchrun's teardown, when every worker was alive at the stop.
    torch/distributed/elastic/multiprocessing/api.py _close walks subprocess_handlers -- built
    as {local_rank: handler} for local_rank in range(nprocs) -- and prints 'Sending process N
    closing signal' for each still running: with no worker dead before the stop (a measured
    stall, _stall), the i-th such line of one agent is local rank i."""
    by_agent: dict[object, list[Event]] = {}
    for e in events_of(case, (KIND.launcher_sigterm,)):
        if e.pid is not None and e.data.get("launcher") == "torchrun":
            by_agent.setdefault((e.ref.path, e.data.get("agent_pid")), []).append(e)
    out: dict[int, int] = {}
    for lines in by_agent.values():
        lines.sort(key=lambda e: (e.ref.line or 0))
        for i, e in enumerate(lines):
            out.setdefault(e.pid, i)
    return out


def _collective_of(frames, params, at_timeout: bool) -> str | None:
    """The collective the innermost frames wait in: a c10d API call, DDP's reducer (native
    frames), or -- for a timeout raised there -- backward, whose only waits are the gradient
    hooks' collectives.  "" when the stack is in ordinary code; None when it cannot tell."""
    for f in frames:
        path = (f.file or "").replace("\\", "/")
        name = f.function or ""
        if any(path.endswith(c) for c in params["c10d_files"]):
            return name.rsplit(".", 1)[-1]
        if any(path.endswith(where) and name.rsplit(".", 1)[-1] == fn
               for where, _, fn in (c.rpartition(":") for c in params.get("c10d_functions", ()))):
            return name.rsplit(".", 1)[-1]
        if f.language == "native" and any(name.startswith(n) for n in params["reducer_native"]):
            return params["gradient_collective"]
        if any(m in path for m in params["backward_files"]):
            return params["gradient_collective"] if at_timeout else None
    return ""


class OwnWatchdogDump(Rule):
    """The job's own step watchdog fired on a rank that was in the job's own work.

    faulthandler.dump_traceback_later(T, exit=...) -- armed by the job, often re-armed every step --
    prints 'Timeout (H:MM:SS)!' and every thread's stack when T passes without the job cancelling or
    re-arming it (CPython Modules/faulthandler.c faulthandler_thread; with exit=True it then calls
    _exit(1)).  So the dump is the job's own measure of its rhythm: the rank spent longer than the
    job allows in one stretch, and its main thread stood where the dump shows.  Outside any
    collective, in ordinary code, while a peer waited in a collective (its timeout or the error its
    wait raised when the rank went away): that rank held the others (straggler_timeout)."""

    id = "own-watchdog"

    def findings(self, case, k, trace):
        dumps = [s for s in case.stacks if s.origin == "faulthandler" and _watchdog_dump(s) and _job_main_thread(s)]
        if not dumps:
            return []
        from postmortem.classify.rules import app
        params = registry().signals[SIGN.stacks_different_collectives.id].params
        hang = _hang_signs(case)
        waiting = {r: p for r, p in _positions(case, hang, params).items() if p.collective}
        for r, p in _peer_gone_positions(case, params).items():
            waiting.setdefault(r, p)
        for s in dumps:
            call = _collective_of(s.frames, params, False)
            rank = stacklib.rank_of(s)
            if rank is None:
                # a dump whose rank the bundle does not say may be the waiting rank's own, earlier
                trace.append(f"{self.id}: the job's watchdog dumped {s.ref.describe()}, of a rank the bundle does not name")
                continue
            if not _watchdog_exit(case, rank):
                # a dump that did not end the process: a periodic stack logger (repeat=True) or a
                # watchdog that only reports -- the rank went on, and where it stood then is a snapshot
                trace.append(f"{self.id}: the job's watchdog dumped rank {rank} ({s.ref.describe()}), but no record "
                             "shows that rank ending with exit code 1 right after (faulthandler's exit=True): a report, "
                             "not the end of the rank")
                continue
            if call or call is None:
                trace.append(f"{self.id}: the job's watchdog dumped {s.ref.describe()} "
                             + (f"waiting in {call}: a rank that waits is not the one behind" if call
                                else "in backward: whether it waited is not known"))
                continue
            peers = {q: p for q, p in waiting.items() if q != rank}
            if not peers:
                trace.append(f"{self.id}: the job's watchdog dumped {s.ref.describe()} in its own work, but no other "
                             "rank is seen waiting in a collective: no rank to have held up")
                continue
            # the watchdog measures how long the rank did not come back, not that it computed: a main thread
            # parked in a wait of the wait table (a socket, a child) or on another thread or process waits for
            # something else -- stacks-at-timeout reads such waits, with their guards (audit 12 H2)
            wait = _wait_in(s.frames) or _other_wait(s.frames)
            if wait:
                trace.append(f"{self.id}: the job's watchdog dumped rank {rank} ({s.ref.describe()}) {wait}: a rank "
                             "that waits for something else, not one in its own work")
                continue
            first = next(f for f in s.frames if f.language == "python" and app._own_frame(f))
            where = f"{first.function} ({(first.file or '?').rsplit('/', 1)[-1]}:{first.line})"
            q, p = sorted(peers.items())[0]
            summary = (f"the job's own watchdog ({s.title.strip()}, faulthandler.dump_traceback_later) fired on "
                       f"rank {rank} in {where} ({s.ref.describe()}): "
                       f"a stretch of its work outlasted the limit the job set itself, outside any collective, while "
                       f"rank {q} {p.describe()}: it held the others up")
            trace.append(f"{self.id}: {summary}")
            return [sign_finding(k, SIGN.stacks_own_watchdog_in_own_work, self.id, summary, [], "straggler",
                                 extra_refs=(s.ref, p.ref), culprits=(rank,) if rank >= 0 else ())]
        return []


def _other_wait(frames) -> str:
    """What the innermost Python frame waits for when it is the standard library waiting for another
    thread or process (stacks.own_watchdog_in_own_work params other_waits: a condition, a queue, a
    join, a future), else ""."""
    waits = registry().signals[SIGN.stacks_own_watchdog_in_own_work.id].params["other_waits"]
    first = next((f for f in frames if f.language == "python" and f.file), None)
    if first is None:
        return ""
    for what, files in waits.items():
        if _file_in(first.file, files):
            return f"in {first.function} ({first.file.rsplit('/', 1)[-1]}:{first.line}): {what}"
    return ""


def _watchdog_exit(case: Case, rank: int) -> bool:
    """The rank's process ended with exit code 1 (the launcher's record of it) and raised no uncaught
    exception of its own: faulthandler's exit=True, which calls _exit(1) after the dump."""
    exits = [e for e in events_of(case, (KIND.launcher_child_failed, KIND.launcher_exit))
             if e.rank == rank and str((e.data or {}).get("exitcode")) == "1"]
    raised = [e for e in events_of(case, (KIND.py_exception,)) if e.rank == rank]
    return bool(exits) and not raised


def _job_main_thread(s) -> bool:
    """A dumped thread that is the job's main thread: its outermost frame is the job's own script's
    <module> (a worker thread's is threading's bootstrap; a stack faulthandler cut at its 100-frame
    limit ends wherever it was cut), and the job's own code is among its frames."""
    from postmortem.classify.rules import app

    py = [f for f in s.frames if f.language == "python"]
    return bool(py) and py[-1].function == "<module>" and app._own_frame(py[-1])


def _watchdog_dump(s) -> bool:
    """A faulthandler dump_traceback_later dump (its 'Timeout (H:MM:SS)!' header) with Python frames."""
    return str((s.data or {}).get("dump", "")).startswith("Timeout (") and any(f.language == "python" for f in s.frames)
