"""Rules whose causes are mostly the job's own setup: /dev/shm, timeouts, memory, kills."""
from __future__ import annotations

from itertools import islice

import re

from postmortem import signals
from postmortem import stacks as stacklib
from postmortem.classify.counter_evidence import (_NETWORK_TEXT, _TEARDOWN, carries_another, chained_onto_communication,
                                                  effective_shm_size, enomem_events, memory_plentiful)
from postmortem.classify.rules.app import _traceback_of
from postmortem.classify.rules.base import (Rule, _first_bounds, _num, _stack_mentions, chain_links, died_of, events_of,
                                            saying_a_signal, sign_finding)
from postmortem.knowledge.registry import KIND, LIMIT, SIGN, deaths, produced_by, registry
from postmortem.model import Basis, Case, Event, Finding, Ref, Stack
from postmortem.parsers import clocks
from postmortem.parsers.shm_listing import FACT as SHM_LISTING_FACT

# NCCL's own code: its exported/internal functions (ncclGroupEnd, ncclShmOpen, ncclProxyService)
# or the library they are in -- not c10d's ProcessGroupNCCL, which only calls it.
NCCL_FRAME = re.compile(r"^_*nccl[A-Z]|libnccl")

SHM_FRAME = re.compile(r"shared_memory|/dev/shm|\bpsm_|_share_(?:fd|filename)_|shm_open|posix_fallocate|MapAllocator|libshm")
# Python-level calls that create files in /dev/shm: glibc's sem_open (multiprocessing's SemLock,
# so every mp.Queue/Lock) and PyTorch's storage sharing (torch/multiprocessing/reductions.py).
SHM_PY_FRAME = re.compile(r"multiprocessing/synchronize\.py|\bSemLock\b|_share_(?:fd|filename)_cpu_|reduce_storage")

def _is_sigbus(e: Event) -> bool:
    return died_of(e, "SIGBUS")

class ShmFullInPython(Rule):
    """An OSError raised by a call that creates a file in /dev/shm (a semaphore, a shared
    tensor, a file under /dev/shm), read by its errno: ENOSPC says the tmpfs is full, whatever
    the disks say; EROFS/EACCES/EPERM say the job may not create files there (a read-only or
    foreign-owned /dev/shm: a container setting).  A mount table showing /dev/shm mounted
    read-only is a second, independent sign of the latter."""

    id = "shm-enospc"

    def findings(self, case, k, trace):
        read_only = _shm_mounted_read_only(case)
        for e in events_of(case, KIND.py_exception):
            errno = next((sign for pattern, sign in _SHM_ERRNO_SIGNS if pattern.search(e.text or "")), None)
            if errno is None:
                continue
            stack = _traceback_of(case, e)
            frame = next((f for f in (stack.frames if stack else ())
                          if SHM_PY_FRAME.search(f"{f.file or ''} {f.function or ''}") or SHM_FRAME.search(f.function or "")), None)
            if "/dev/shm/" not in (e.text or "") and frame is None:
                continue
            if errno is SIGN.shm_missing_in_shared_memory and not _creating_semaphore(stack):
                continue
            where = f"in {frame.function} ({(frame.file or '').rsplit('/', 1)[-1]})" if frame else "on a /dev/shm path"
            extra = (stack.ref,) if stack else ()
            if errno is SIGN.shm_enospc_in_shared_memory:
                trace.append(f"{self.id}: ENOSPC {where} at {e.ref.describe()}")
                return [sign_finding(k, errno, self.id, f"No space left on device {where}: /dev/shm is full", [e], "ENOSPC",
                                     extra_refs=extra)]
            if errno is SIGN.shm_missing_in_shared_memory:
                trace.append(f"{self.id}: ENOENT {where} at {e.ref.describe()}")
                return [sign_finding(k, errno, self.id, f"No such file or directory {where}, creating a semaphore: "
                                     "the container has no /dev/shm", [e], "shm-missing", extra_refs=extra)]
            trace.append(f"{self.id}: {e.text.strip()[:80]!r} {where} at {e.ref.describe()}")
            combined = (SIGN.shm_mounted_read_only,) if read_only else ()
            return [sign_finding(k, errno, self.id, f"{where}: the job may not create files in /dev/shm"
                                 + (f"; /dev/shm is mounted read-only ({read_only.ref.describe()})" if read_only else ""),
                                 [e], "shm-denied", extra_refs=extra + ((read_only.ref,) if read_only else ()),
                                 combined=combined)]
        return []


# errno texts (strerror, or Python's "[Errno N]") of a failed create in /dev/shm -> the sign.
_SHM_ERRNO_SIGNS = (
    (re.compile(r"\[Errno 28\]|No space left on device"), SIGN.shm_enospc_in_shared_memory),
    (re.compile(r"\[Errno (?:30|13|1)\]|Read-only file system|Permission denied|Operation not permitted"),
     SIGN.shm_denied_in_shared_memory),
    # ENOENT only as CPython prints it ("[Errno 2]"): torch's 'No such file or directory (2)' when
    # a receiver opens a shared tensor is a segment its sender already unlinked
    (re.compile(r"\[Errno 2\]"), SIGN.shm_missing_in_shared_memory),
)


def _creating_semaphore(stack: Stack | None) -> bool:
    """The innermost Python frame is multiprocessing creating a semaphore (signals.toml
    shm.missing_in_shared_memory create_frames), not rebuilding one another process made."""
    inner = next((f for f in (stack.frames if stack else ()) if f.language == "python"), None)
    return inner is not None and any((inner.file or "").replace("\\", "/").endswith(path) and inner.function == fn
                                     for path, _, fn in (w.rpartition(":") for w in
                                                         SIGN.shm_missing_in_shared_memory.params["create_frames"]))


def _shm_mounted_read_only(case: Case):
    """The /dev/shm mount in effect (the last one of each mount table) when its options say `ro`."""
    last: dict[str, object] = {}
    for f in case.facts:
        if f.name == "shm.mount" and (f.ref.path not in last or (f.ref.line or 0) > (last[f.ref.path].ref.line or 0)):
            last[f.ref.path] = f
    return next((f for f in last.values() if "ro" in str(f.value).split(",")), None)


class SigbusContext(Rule):
    """A SIGBUS, read by where it happened.

    * the core's fault address inside a /dev/shm file: shared memory exhausted, proven;
    * BUS_MCEERR_*: a hardware memory error;
    * inside NCCL code (NCCL maps its intra-node buffers from /dev/shm; 2.12-2.18 size them
      sparse, so a full tmpfs surfaces as SIGBUS on first touch): shm exhausted, leaning only --
      NCCL also touches GPU memory mapped through the BAR (GDRCopy), which faults the same way;
    * otherwise the commonest cause in training jobs is still /dev/shm, but weakly."""

    id = "sigbus-context"

    def findings(self, case, k, trace):
        buses = [e for e in saying_a_signal(case.events) if _is_sigbus(e)]
        if not buses:
            return []
        core_hits = [e for e in events_of(case, KIND.core_signal) if _is_sigbus(e)]
        for e in core_hits:
            code = str(e.data.get("si_code_name", ""))
            mapping = str(e.data.get("mapping", ""))
            if code.startswith("BUS_MCEERR"):
                trace.append(f"{self.id}: core SIGBUS {code}: hardware memory error")
                return [sign_finding(k, SIGN.sigbus_core_mceerr, self.id, f"SIGBUS {code} in the core: the kernel reports poisoned memory", [e], "SIGBUS")]
            if mapping.startswith("/dev/shm/"):
                trace.append(f"{self.id}: core SIGBUS inside {mapping}: shm exhausted")
                return [sign_finding(k, SIGN.sigbus_core_in_shm, self.id,
                                     f"SIGBUS at an address inside {mapping} (offset {e.data.get('mapping_offset')}): the tmpfs had no page to give",
                                     [e], "SIGBUS")]
        # Softer signs, each with its own strength; the strongest one sets the support.
        signs: list[tuple[object, str, tuple[Ref, ...]]] = []
        # Only the stack that died: a peer's watchdog backtrace (ProcessGroupNCCL) printed after
        # the death is not where the SIGBUS hit (audit 6 M1).
        crashed = stacklib.crashing(case.stacks, case.events)
        own = (crashed,) if crashed is not None else ()
        nccl_stacks = _stack_mentions(own, NCCL_FRAME)
        segment = _fault_in_nccl_shm_segment(case)
        if segment:  # the same stack read more precisely: instead of "somewhere in NCCL"
            name, stack = segment
            signs.append((SIGN.sigbus_at_nccl_shm_segment, f"it hit in NCCL's {name}, which touches only the /dev/shm "
                                "segment it has just mapped: the tmpfs had no page to give", (stack.ref,)))
        elif nccl_stacks:
            signs.append((SIGN.sigbus_in_nccl_code, "it hit inside NCCL code: NCCL's shared-memory segments live in /dev/shm, "
                                "and an undersized /dev/shm surfaces as SIGBUS on first touch", (nccl_stacks[0].ref,)))
        shm_stacks = _stack_mentions(own, SHM_FRAME)
        if shm_stacks:
            signs.append((SIGN.sigbus_writing_shm, "the crashing stack is writing shared memory", (shm_stacks[0].ref,)))
        small = [(f, v) for f, v in effective_shm_size(case) if v is not None and v <= LIMIT.small_shm_bytes]
        if small:
            f, v = small[0]
            signs.append((SIGN.sigbus_small_shm, f"/dev/shm is only {v / (1 << 20):.0f} MiB ({f.ref.describe()}), "
                                "the container default that DataLoader workers and NCCL overflow", (f.ref,)))
        left = next(iter(events_of(case, KIND.msg_shm_segments_leaked)), None)
        if left is not None:
            signs.append((SIGN.sigbus_shm_segments_left, "multiprocessing's resource tracker found shared-memory "
                                f"segments (/dev/shm) of a process that died ({left.ref.describe()})", (left.ref,)))
        if not signs:
            trace.append(f"{self.id}: SIGBUS without location; weak shm suspicion")
            return [sign_finding(k, SIGN.sigbus_unlocated, self.id,
                                 "a process died of SIGBUS; in training jobs that is most often an exhausted /dev/shm "
                                 "(no location known to confirm it)", buses, "SIGBUS")]
        signs.sort(key=lambda s: -s[0].weight)
        w = 1 - (1 - signs[0][0].weight) * (LIMIT.second_sign_factor if len(signs) > 1 else 1.0)
        refs = tuple(r for _, _, rs in signs for r in rs)
        trace.append(f"{self.id}: SIGBUS with {len(signs)} shm sign(s): " + "; ".join(t for _, t, _ in signs))
        # The death and the stack it died in are one event (signals.toml [failure."sigbus.one_death"]):
        # only a measurement of the machine (the /dev/shm size) is a second observation.
        return [sign_finding(k, signs[0][0], self.id, "a process died of SIGBUS; " + "; ".join(t for _, t, _ in signs),
                             buses, "SIGBUS", extra_refs=refs, weight=w,
                             combined=tuple(s for s, _, _ in signs[1:]))]

def _fault_in_nccl_shm_segment(case: Case):
    """(function, stack) when the crashing stack's own frame -- the first the signature walk
    keeps past signal delivery and memset/memcpy -- is NCCL's /dev/shm segment setup."""
    crashed = stacklib.crashing(case.stacks, case.events)
    kept = stacklib.walk(crashed).frames if crashed else ()
    names = SIGN.sigbus_at_nccl_shm_segment.params["functions"]
    if kept and kept[-1] in names:
        return kept[-1], crashed
    return None


class ShmSmallBesideFailure(Rule):
    """/dev/shm measured at a container default beside a failure whose commonest cause is a
    full /dev/shm but whose message does not say so (NCCL's bare system error, a DataLoader
    worker's death): the measurement is a second, independent sign of shm_exhausted.  Which
    messages: the sign's params."""

    id = "shm-small-beside-failure"

    def findings(self, case, k, trace):
        small = [(f, v) for f, v in effective_shm_size(case) if v is not None and v <= LIMIT.small_shm_bytes]
        if not small:
            return []
        beside = registry().signals[SIGN.shm_small_beside_failure.id].params["beside"]
        failures = events_of(case, tuple(beside))
        if not failures:
            return []
        f, v = small[0]
        why_not = _shm_not_telling(case)
        if why_not:
            trace.append(f"{self.id}: /dev/shm {v / (1 << 20):.0f} MiB ({f.ref.describe()}) beside "
                         f"{failures[0].ref.describe()}, not counted: {why_not}")
            return []
        trace.append(f"{self.id}: /dev/shm {v / (1 << 20):.0f} MiB ({f.ref.describe()}) beside {failures[0].ref.describe()}")
        return [sign_finding(k, SIGN.shm_small_beside_failure, self.id,
                             f"/dev/shm is only {v / (1 << 20):.0f} MiB ({f.ref.describe()}), a container default, "
                             f"and the job failed the way a full /dev/shm makes it fail ({failures[0].ref.describe()})",
                             [], "shm", extra_refs=(f.ref,))]

class ShmNcclSegmentsLeft(Rule):
    """`ls -l /dev/shm` lists NCCL segments (nccl-XXXXXX) beside a failure that a full /dev/shm
    produces without naming it: segments no process will unlink, holding the tmpfs's pages
    (signals.toml shm.nccl_segments_left)."""

    id = "shm-nccl-segments-left"

    def findings(self, case, k, trace):
        params = SIGN.shm_nccl_segments_left.params
        segment = re.compile(params["segment"])
        listed = [(f, [e for e in f.value.get("entries") or () if segment.match(str(e[0]))])
                  for f in case.facts if f.name == SHM_LISTING_FACT and isinstance(f.value, dict)]
        listed = [(f, left) for f, left in listed if left]
        if not listed:
            return []
        failures = events_of(case, tuple(params["beside"]))
        if not failures:
            return []
        f, left = listed[0]
        spans = _spans_hosts(case)
        if spans:
            trace.append(f"{self.id}: {len(left)} NCCL segment(s) in /dev/shm ({f.ref.describe()}), not counted: {spans}")
            return []
        sizes = ", ".join(size for _, size in left[:4]) + (" ..." if len(left) > 4 else "")
        what = (f"/dev/shm still holds {len(left)} NCCL segment(s) ({sizes}; {f.ref.describe()}): NCCL unlinks each "
                "once its peers attach, so these belong to processes that died during setup and keep their pages")
        trace.append(f"{self.id}: {what}")
        return [sign_finding(k, SIGN.shm_nccl_segments_left, self.id,
                             what + f"; the job failed the way a full /dev/shm makes it fail ({failures[0].ref.describe()})",
                             failures[:1], "shm", extra_refs=(f.ref,))]


def _spans_hosts(case: Case) -> str:
    """Why the job's bare failure may be its network ('' when not): it spans hosts, or NCCL
    connects across nodes."""
    hosts = {e.host for e in case.events if e.host}
    remote = next((e for e in events_of(case, KIND.nccl_transport) if str(e.data.get("via", "")).startswith("NET")), None)
    if len(hosts) >= 2 or remote is not None:
        return (f"the job spans {len(hosts)} hosts" if len(hosts) >= 2 else
                f"NCCL connects across nodes ({remote.ref.describe()})") + ": the network is as likely"
    return ""


def _shm_not_telling(case: Case) -> str:
    """Why a small /dev/shm says nothing about this failure ('' when it may): 64 MiB is every
    default container's, and the bare error of a container is as often its bridge network, so
    the size counts only when the bundle shows /dev/shm in play -- its use (df Use% at least
    threshold.shm_low_use_pct) or NCCL's SHM transport / its /dev/shm/nccl-* segments -- and
    never when the job spans hosts (an inter-node path is the other suspect) or when an NCCL
    WARN names the call that failed (audit 5 H2)."""
    spans = _spans_hosts(case)
    if spans:
        return spans
    warn = next(iter(events_of(case, KIND.nccl_warn)), None)
    if warn is not None:
        return f"an NCCL WARN names the failing call ({warn.ref.describe()})"
    used = [f for f in case.facts if f.name == "shm.use_pct" and isinstance(f.value, (int, float))
            and f.value >= LIMIT.shm_low_use_pct]
    shm_transport = [e for e in events_of(case, KIND.nccl_transport) if str(e.data.get("via", "")).startswith("SHM")]
    segment = [e for e in case.events if "/dev/shm/nccl-" in (e.text or "")]
    if not (used or shm_transport or segment):
        return "neither its use (df Use%) nor NCCL's SHM transport shows /dev/shm in play"
    return ""


COLLECTIVE_FRAME = re.compile(r"barrier|all_?reduce|all_?gather|broadcast|reduce_scatter|all_to_all|alltoall|"
                              r"\bwait\b|monitored_barrier|synchronize", re.I)

# Context managers in which every rank but the main one waits at a barrier (transformers
# TrainingArguments.main_process_first, accelerate's Accelerator.main_process_first and friends).
_MAIN_FIRST = frozenset(registry().signals["timeout.waiting_for_main_process"].params["functions"])

TIMEOUT_KINDS = (KIND.msg_watchdog_timeout, KIND.msg_gloo_timeout, KIND.msg_nccl_uniqueid_store_timeout)

class CollectiveTimeout(Rule):
    """Collective timeouts (NCCL watchdog, gloo): whose were they?

    When some ranks time out and others of the job never report one, the silent ranks
    were busy elsewhere (a straggler: preprocessing, a long save).  Stronger when the
    timeout hit the first collectives of the job (a low SeqNum), when a progress bar
    shows work still running, or when stack dumps show one rank waiting in a collective
    while another is in ordinary code.  When every rank we know of timed out, the
    collective itself was stuck."""

    id = "collective-timeout"

    def findings(self, case, k, trace):
        timeouts = events_of(case, TIMEOUT_KINDS)
        if not timeouts:
            return []
        timed_out = {e.rank for e in timeouts if e.rank is not None}
        timed_out |= _reset_at_peers_timeout(case, k, timed_out)
        # A rank that others waited for by name (the one to publish the ncclUniqueId) is silent too.
        awaited = {int(e.data["awaited"]) for e in timeouts if str(e.data.get("awaited", "")).isdecimal()} - timed_out
        world = self._world(case, timed_out)
        heard = timed_out | _failed_on_transport_first(case, k, timed_out)
        silent = silent_ranks(world, heard, awaited) if timed_out else []
        some_rank_silent = world > sum(1 for r in heard if 0 <= r < world)
        world_known_apart = bool(awaited) or (some_rank_silent and (
            len(timed_out) >= 2 or self._world_size(case) or self._launcher_ranks(case)))
        seqs = [int(e.data["seq"]) for e in timeouts if str(e.data.get("seq", "")).isdecimal()]
        progress = events_of(case, KIND.msg_progress_bar)
        # "still running" needs a bar that moved (a rising percentage, or printed after the
        # timeout), and not one of a rank that itself timed out (audit 6 H1): a training
        # loop's bar printed before the hang is in almost every log.
        advancing = [p for p in self._advancing(progress, timeouts) if p.rank is None or p.rank not in timed_out]
        busy, waiting = self._dumps(case)
        behind_main = self._waiting_for_main_process(case)
        if behind_main is not None:
            # The timed-out rank waited in a barrier that lets the main process work first
            # (dataset preprocessing, tokenization): the main process was late.
            frame = next(f for f in behind_main.frames if f.function in _MAIN_FIRST)
            summary = (f"rank(s) {sorted(timed_out) or '?'} timed out in a barrier inside {frame.function}() "
                       f"({behind_main.ref.describe()}): the main process was still doing the work the others "
                       "wait for (dataset preprocessing, tokenization) when the timeout expired")
            trace.append(f"{self.id}: straggler: the timed-out rank waited in {frame.function}()")
            seen = ((SIGN.timeout_progress_advancing, bool(advancing)),)
            return [sign_finding(k, SIGN.timeout_waiting_for_main_process, self.id, summary, timeouts + advancing[:1],
                                 "timeout", extra_refs=(behind_main.ref,),
                                 combined=tuple(s for s, present in seen if present))]
        if silent and world_known_apart:
            worked = _worked_on_after_wait(case, timeouts, silent)
            if worked and worked[1].kind == KIND.msg_progress_bar:
                # a stamped bar line of the silent rank after the wait began is the bar advancing,
                # read with its time: one observation, one sign (audit 9 M1)
                advancing = []
            # One fact -- the awaited rank was elsewhere -- seen in up to three artifacts: the
            # rank's own log (its bar, its step lines), its launcher's record, a stack dump.  Each
            # artifact counts once (its strongest view), and the artifacts join the missing
            # timeout line as a noisy-OR, not as a sum (audit 10 M2).
            views = {"absent timeout": SIGN.timeout_silent_ranks}
            own = "launcher record" if worked and worked[1].kind == KIND.launcher_child_failed else "own log"
            behind = _behind_steps(case, timed_out, silent)
            for artifact, sign, present in (("own log", SIGN.timeout_progress_advancing, bool(advancing)),
                                            ("own log", SIGN.timeout_awaited_rank_behind, bool(behind)),
                                            ("stack dump", SIGN.timeout_rank_busy_elsewhere, bool(busy and waiting)),
                                            (own, SIGN.timeout_awaited_rank_worked_on, bool(worked))):
                if present and (artifact not in views or sign.weight > views[artifact].weight):
                    views[artifact] = sign
            miss = 1.0
            for sign in views.values():
                miss *= 1 - sign.weight
            w = 1 - miss
            why = []
            if worked:
                rank, line, timeout, late_s = worked
                if line.kind == KIND.launcher_child_failed:
                    why.append(f"rank {rank} failed of its own error ({line.ref.describe()}) {late_s:.0f} s after rank "
                               f"{timeout.rank} had timed out ({timeout.ref.describe()}) and failed: it had not been "
                               "waiting in the same collective, it got there late")
                else:
                    why.append(f"rank {rank} logged its own work ({line.ref.describe()}) {late_s:.0f} s after rank "
                               f"{timeout.rank} had begun the wait that timed out ({timeout.ref.describe()}): it was "
                               "alive and busy elsewhere, not waiting in the collective")
            if advancing:
                why.append(f"the log shows '{advancing[0].data.get('task', '').strip()}' still running")
            if behind and views.get("own log") is SIGN.timeout_awaited_rank_behind:
                (late, late_step, late_line), (waiter, step, line) = behind
                why.append(f"rank {late} had logged step {late_step} at most ({late_line.ref.describe()}) while rank "
                           f"{waiter} had logged step {step} ({line.ref.describe()}) before its wait: it was behind")
            if busy and waiting:
                why.append(f"a stack dump shows a rank in {busy[0].frames[0].function}() while another waits in "
                           f"{waiting[0].frames[0].function}()")
            op = timeouts[0].data.get("op", "a collective")
            summary = (f"rank(s) {sorted(timed_out)} timed out in {op}"
                       f"{f' (SeqNum {min(seqs)})' if seqs else ''} while rank(s) {silent} never reported a timeout"
                       + (f"; {'; '.join(why)}" if why else ""))
            trace.append(f"{self.id}: straggler: silent {silent}, progress={bool(advancing)}, dumps={bool(busy and waiting)}, "
                         f"worked-on={bool(worked)}, behind={bool(behind)}")
            extra = (tuple(s.ref for s in busy[:1] + waiting[:1]) + ((worked[1].ref,) if worked else ())
                     + (tuple(x[2].ref for x in behind) if behind else ()))
            combined = tuple(sign for artifact, sign in views.items() if artifact != "absent timeout")
            return [sign_finding(k, SIGN.timeout_silent_ranks, self.id, summary, timeouts + advancing[:1], "timeout",
                                 extra_refs=extra, weight=w, combined=combined,
                                 culprits=tuple(silent))]
        return self._no_rank_missing(case, k, timeouts, timed_out, world, progress, trace)

    def _no_rank_missing(self, case, k, timeouts, timed_out, world, progress, trace):
        """No rank is known to be silent.  A timeout alone is a symptom: the collective was
        stuck only when every rank of a known world waited in the same one; ranks waiting
        in different collectives (SeqNum), or work still advancing while they waited, say
        one rank was behind; a timeout with no transport error, no dead process and
        nothing else leans that way too, but never claims alone."""
        # SeqNums count per process group: compare them only within one group the line names
        # (a line without its PG -- torch < 2.2 -- cannot be placed in one; audit 6 M6)
        by_group: dict[str, dict[int, set[int]]] = {}
        for e in timeouts:
            pg = str(e.data.get("pg") or e.data.get("pg_outer") or "")
            if e.rank is not None and str(e.data.get("seq", "")).isdecimal() and pg.isdecimal():
                by_group.setdefault(pg, {}).setdefault(e.rank, set()).add(int(e.data["seq"]))
        group = next((g for g in sorted(by_group) if len({min(s) for s in by_group[g].values()}) > 1), None)
        firsts = {r: min(s) for r, s in by_group[group].items()} if group is not None else {}
        apart = bool(firsts)
        advancing = self._advancing(progress, timeouts)
        network = _network_signs(case, k)
        dead = _deaths_not_by_timeout(case, timeouts)
        every_rank_timed_out = bool(world) and sum(1 for r in timed_out if 0 <= r < world) == world
        if not apart and not advancing and every_rank_timed_out and len(timed_out) >= 2:
            trace.append(f"{self.id}: every rank of the world (0..{world - 1}) timed out in the same collective")
            level = _level_steps(case, timeouts, timed_out)
            if level is not None and _timeouts_apart(case, timeouts, timed_out):
                trace.append(f"{self.id}: every rank last logged step {level[0]}, but their timeouts expired far apart:"
                             " a rank entered the collective late, so the level steps say nothing")
                level = None
            summary = (f"{len(timeouts)} collective timeout(s) across all ranks {sorted(timed_out)}; "
                       "no other fault found")
            if level is not None:
                step, refs = level
                trace.append(f"{self.id}: every rank last logged step {step} before the timeouts: none was behind")
                summary += (f"; every rank had logged step {step} ({', '.join(r.describe() for r in refs[:3])}): "
                            "none was behind when the collective stopped moving")
                return [sign_finding(k, SIGN.timeout_all_ranks, self.id, summary, timeouts, "timeout",
                                     extra_refs=refs[:4], combined=(SIGN.timeout_ranks_level,))]
            return [sign_finding(k, SIGN.timeout_all_ranks, self.id, summary, timeouts, "timeout")]
        signs = []
        why = []
        if apart:
            behind = sorted(r for r, s in firsts.items() if s == min(firsts.values()))
            signs.append(SIGN.timeout_seq_apart)
            why.append("ranks timed out in different collectives (" +
                       ", ".join(f"rank {r} at SeqNum {s}" for r, s in sorted(firsts.items())) +
                       f"): they were not all in one stuck collective; rank(s) {behind} were behind")
        if advancing:
            signs.append(SIGN.timeout_progress_while_waiting)
            why.append(f"the log shows '{advancing[0].data.get('task', '').strip()}' still advancing while ranks waited")
        if not network and not dead and _transport_errors_visible(case, timeouts):
            # An absence qualifies the straggler signs present; it is no independent observation of its
            # own: a silent network stall (a pause storm, a port that stops forwarding) prints nothing
            # either (audit 7 M12).  Alone it is the weak lean it always was.
            if not signs:
                signs.append(SIGN.timeout_no_transport_error)
            why.append("no transport error and no dead process in the bundle")
        if not signs:
            trace.append(f"{self.id}: timeouts with a transport error or a dead process beside them (the timeouts are"
                         " their fallout), or no NCCL debug output that could show one")
            return []
        trace.append(f"{self.id}: no rank known to be missing; straggler signs: {', '.join(s.id for s in signs)}")
        summary = (f"{len(timeouts)} collective timeout(s) on rank(s) {sorted(timed_out) or '?'}: " + "; ".join(why))
        refs = tuple(e.ref for e in advancing[:1])
        return [sign_finding(k, signs[0], self.id, summary, timeouts, "timeout", extra_refs=refs,
                             combined=tuple(signs[1:]))]

    @staticmethod
    def _advancing(progress: list[Event], timeouts: list[Event]) -> list[Event]:
        """Progress lines showing work still moving: one task's percentage rising, or a
        progress line printed after a timeout in the same file."""
        first = {}
        for t in timeouts:
            first[t.ref.path] = min(first.get(t.ref.path, t.ref.line or 0), t.ref.line or 0)
        # a later LINE: a bar glued to the front of the timeout's own line was printed before it
        after = [p for p in progress if p.ref.path in first and (p.ref.line or 0) > first[p.ref.path]]
        by_task: dict[str, list[float]] = {}
        for p in sorted(progress, key=lambda e: e.seq):
            by_task.setdefault(str(p.data.get("task", "")).strip(), []).append(_num(p.data.get("pct")))
        rising = [task for task, pcts in by_task.items() if len(pcts) >= 2 and pcts[-1] > pcts[0]]
        return after + [p for p in progress if str(p.data.get("task", "")).strip() in rising and p not in after]

    @staticmethod
    def _waiting_for_main_process(case: Case) -> Stack | None:
        return next((s for s in case.stacks if any(f.function in _MAIN_FIRST for f in s.frames)), None)

    @staticmethod
    def _world_size(case: Case) -> int | None:
        sizes = [int(e.data["nranks"]) for e in events_of(case, KIND.nccl_init)
                 if str(e.data.get("nranks", "")).isdecimal()]
        return max(sizes) if sizes else None

    @staticmethod
    def _launcher_ranks(case: Case) -> set[int]:
        return {e.rank for e in events_of(case, KIND.launcher_child_failed) if e.rank is not None}

    def _world(self, case: Case, timed_out: set[int]) -> int:
        """How many ranks the job had: NCCL's nranks, else one past the highest rank seen.
        A count, never the ranks themselves: the number is bundle text (a line may claim
        nranks 4000000000)."""
        size = self._world_size(case)
        if size:
            return size
        ranks = self._launcher_ranks(case) | timed_out
        return max(ranks) + 1 if ranks else 0

    @staticmethod
    def _dumps(case: Case) -> tuple[list[Stack], list[Stack]]:
        """Thread dumps (faulthandler) split into ranks busy in ordinary code and ranks
        waiting in a collective."""
        dumps = [s for s in case.stacks if s.origin == "faulthandler" and s.frames]
        waits = [any(COLLECTIVE_FRAME.search(f.function or "") for f in s.frames) for s in dumps]
        waiting = [s for s, w in zip(dumps, waits) if w]
        busy = [s for s, w in zip(dumps, waits) if not w]  # not `s not in waiting`: quadratic in ranks
        return busy, waiting


def _failed_on_transport_first(case: Case, k, timed_out: set[int]) -> set[int]:
    """Ranks that failed on a transport error of their own (gloo's "Connection closed by peer", an
    NCCL WARN) BEFORE any timed-out rank failed, by torchrun's failure entries (their printed
    times, one second apart at least): they were in the communication when it broke, not busy
    elsewhere, so they are no silent ranks.  A straggler's own "closed by peer" comes after its
    peers timed out and tore their connections down: its failure entry is the later one."""
    exits = _exits(case)
    timed_exits = [exits[r] for r in timed_out if r in exits]
    if not timed_exits:
        return set()
    first_timeout_exit = min(timed_exits)
    return {e.rank for e in _failed_at_connection(case, k) if e.rank is not None and e.rank not in timed_out
            and e.rank in exits and (first_timeout_exit - exits[e.rank]).total_seconds() >= 1}


def _reset_at_peers_timeout(case: Case, k, timed_out: set[int]) -> set[int]:
    """Ranks whose own error is gloo's 'Connection reset by peer' (signals.toml timeout.all_ranks
    reset_by_peer) no earlier than a second before the first timed-out rank failed and no later than
    the agents' polling after it (threshold.reset_before_peer_exit_s, reset_after_peer_exit_s), by
    torchrun's failure entries: the timed-out peer closed its pairs with this rank's data unread (an RST, not a
    FIN), so this rank was sending in the collective when the peer gave up -- it waited there too."""
    if not timed_out:
        return set()
    exits = _exits(case)
    timed_exits = [exits[r] for r in timed_out if r in exits]
    if not timed_exits:
        return set()
    first_timeout_exit = min(timed_exits)
    reset = re.compile(SIGN.timeout_all_ranks.params["reset_by_peer"])
    # within the records' resolution before, and the agents' polling after (audit 10 L5: a reset
    # long after is another write -- a straggler's, arriving late -- not the collective's)
    before, after = LIMIT.reset_before_peer_exit_s, LIMIT.reset_after_peer_exit_s
    return {e.rank for e in _failed_at_connection(case, k) if e.rank is not None and e.rank not in timed_out
            and e.rank in exits and reset.search(e.text or "")
            and -after <= (first_timeout_exit - exits[e.rank]).total_seconds() < before}


def _exits(case: Case) -> dict[int, object]:
    """rank -> the time of its first torchrun failure entry."""
    exits: dict[int, object] = {}
    for e in events_of(case, KIND.launcher_child_failed):
        if e.rank is not None and e.stamp is not None and e.when and e.when.at:
            exits[e.rank] = min(exits.get(e.rank, e.when.at), e.when.at)
    return exits


def level_stall(case: Case, k) -> Finding | None:
    """The collective-timeout reading when it found every rank of the world timed out in one
    collective after each had logged the same step (timeout.ranks_level): no rank was behind,
    the collective itself stopped moving.  Rules that measured the path (network state) pair
    with it: the ranks' own logs say nobody was late, the host's state says why nothing moved."""
    for f in CollectiveTimeout().findings(case, k, []):
        if SIGN.timeout_ranks_level.id in f.signs:
            return f
    return None


class TimeoutRecordsDisagree(Rule):
    """Two ranks' watchdog records of the same work of one process group disagree.

    ProcessGroupNCCL numbers each group's collectives per rank (WorkNCCL SeqNum) and NCCL pairs
    the ranks' calls by that order: when rank A's timed-out work N is an ALLREDUCE of 1 element
    and rank B's work N a BROADCAST (or an ALLREDUCE of 10^9 elements), the ranks issued different
    collectives -- neither could ever complete (collective_desync).  A record is placed in its
    group by its own [PG ...] prefix or by the same rank's "detected by watchdog at work: N" line;
    a disagreement between records that cannot both be placed in one group only leans."""

    id = "timeout-records-disagree"

    def findings(self, case, k, trace):
        timeouts = [e for e in events_of(case, (KIND.msg_watchdog_timeout,))
                    if e.rank is not None and str(e.data.get("seq", "")).isdecimal() and e.data.get("op")]
        if len(timeouts) < 2:
            return []
        params = registry().signals[SIGN.timeout_same_seq_different_work.id].params
        group_of = {(e.rank, str(e.data.get("seq"))): str(e.data.get("pg"))
                    for e in events_of(case, (KIND.msg_watchdog_exception_at_work,))
                    if e.rank is not None and str(e.data.get("pg", "")).isdecimal()}
        by_seq: dict[str, list[tuple[Event, str]]] = {}
        for e in timeouts:
            op = str(e.data["op"])
            if op in params["not_compared"] or op.endswith("COALESCED"):
                continue
            seq = str(e.data["seq"])
            pg = str(e.data.get("pg") or e.data.get("pg_outer") or group_of.get((e.rank, seq)) or "")
            by_seq.setdefault(seq, []).append((e, pg))
        for seq, records in sorted(by_seq.items(), key=lambda kv: int(kv[0])):
            pair = _disagreeing(records, params["same_count"])
            if pair is None:
                continue
            (a, pg_a), (b, pg_b) = pair
            grouped = bool(pg_a) and pg_a == pg_b
            sign = SIGN.timeout_same_seq_different_work if grouped else SIGN.timeout_same_seq_different_work_ungrouped
            where = f"process group {pg_a}" if grouped else "a process group the bundle does not name for both"
            summary = (f"rank {a.rank} and rank {b.rank} timed out in work {seq} of {where} with different records: "
                       f"{_work(a)} against {_work(b)} -- the ranks issued different collectives, which can never "
                       "pair up")
            trace.append(f"{self.id}: SeqNum {seq}: rank {a.rank} {_work(a)} vs rank {b.rank} {_work(b)} "
                         f"({'one group: ' + pg_a if grouped else 'group not placed for both'})")
            return [sign_finding(k, sign, self.id, summary, [a, b], "desync", culprits=())]
        return []


def _work(e: Event) -> str:
    n = e.data.get("numel_in")
    return f"{e.data.get('op')}" + (f" of {n} elements" if n not in (None, "") else "")


def _disagreeing(records, same_count) -> tuple | None:
    """The first two records (one per rank) of one SeqNum whose op, or -- for an op every rank
    calls with one count -- whose element count differs; placed pairs (same group) first."""
    first_per_rank: dict[int, tuple[Event, str]] = {}
    for e, pg in records:
        first_per_rank.setdefault(e.rank, (e, pg))
    ranked = list(first_per_rank.values())
    pairs = [(x, y) for i, x in enumerate(ranked) for y in ranked[i + 1:]]
    pairs.sort(key=lambda p: not (p[0][1] and p[0][1] == p[1][1]))
    for (a, pa), (b, pb) in pairs:
        if pa and pb and pa != pb:
            continue   # two groups: their SeqNums count apart
        op_a, op_b = str(a.data["op"]), str(b.data["op"])
        n_a, n_b = str(a.data.get("numel_in") or ""), str(b.data.get("numel_in") or "")
        if op_a != op_b or (op_a in same_count and n_a and n_b and n_a != n_b):
            return (a, pa), (b, pb)
    return None


# At most this many silent ranks are named; more would say nothing a count does not.
NAMED_SILENT_RANKS = 256


def silent_ranks(world: int, timed_out: set[int], awaited: set[int]) -> list[int]:
    """The world's ranks that never reported a timeout (plus those others waited for by
    name), walked lazily and cut at NAMED_SILENT_RANKS whatever the claimed world size."""
    others = (r for r in range(world) if r not in timed_out)
    return sorted(set(islice(others, NAMED_SILENT_RANKS)) | awaited)


# what NCCL prints only under NCCL_DEBUG=INFO/WARN (parsers/nccl.py)
_NCCL_DEBUG_KINDS = frozenset({KIND.nccl_info, KIND.nccl_warn, KIND.nccl_init, KIND.nccl_network, KIND.nccl_transport,
                               KIND.nccl_trace, KIND.nccl_error_chain, KIND.nccl_abort})


def _level_steps(case: Case, timeouts: list[Event], timed_out: set[int]) -> tuple[int, tuple[Ref, ...]] | None:
    """The step every timed-out rank got to (the highest its own progress lines name,
    messages.toml rank_step), when each of them logged one and all got to the same step; else
    None.  The highest, not the last in the file: a handler's "step 21 failed" printed before
    the traceback that torch's excepthook writes at exit still says how far the rank got."""
    best: dict[int, tuple[int, Event]] = {}
    for e in events_of(case, KIND.msg_rank_step):
        r = e.rank
        step = str(e.data.get("step", ""))
        if r in timed_out and step.isdecimal() and (r not in best or int(step) > best[r][0]):
            best[r] = (int(step), e)
    if len(timed_out) < 2 or set(best) != timed_out:
        return None
    steps = {s for s, _ in best.values()}
    if len(steps) != 1:
        return None
    return steps.pop(), tuple(best[r][1].ref for r in sorted(best))


def _behind_steps(case: Case, timed_out: set[int], silent: list[int]):
    """((silent rank, its step, its line), (waiter, its step, its line)) when a rank that reported no
    timeout logged its own progress (messages.toml rank_step) up to a lower step than a rank that
    timed out had logged (signals.toml timeout.awaited_rank_behind); else None.  The highest step
    each names, as _level_steps reads it."""
    best: dict[int, tuple[int, Event]] = {}
    for e in events_of(case, KIND.msg_rank_step):
        step = str(e.data.get("step", ""))
        if e.rank is not None and step.isdecimal() and (e.rank not in best or int(step) > best[e.rank][0]):
            best[e.rank] = (int(step), e)
    waiters = [(best[r][0], r) for r in timed_out if r in best]
    late = [(best[r][0], r) for r in silent if r in best]
    if not waiters or not late:
        return None
    step, waiter = max(waiters)
    late_step, rank = min(late)
    if late_step >= step:
        return None
    return (rank, late_step, best[rank][1]), (waiter, step, best[waiter][1])


def _timeouts_apart(case: Case, timeouts: list[Event], timed_out: set[int]) -> bool:
    """Did the ranks' timeouts expire apart?  Every rank waits the same timeout from the moment
    it entered the collective, so ranks that entered together fail together; a rank whose
    failure (torchrun's ChildFailedError entry, which names the global rank and its time) came
    a large share of the timeout after another's entered late -- stopped or busy after its last
    progress line (a frozen container, a save) -- and its level step counter says nothing."""
    limits = [int(v) for e in timeouts for v in (e.data.get("timeout_ms"), e.data.get("ran_ms"))
              if str(v or "").isdecimal() and int(v) > 0]
    if not limits:
        return False
    exits: dict[int, object] = {}
    for e in events_of(case, KIND.launcher_child_failed):
        if e.rank in timed_out and e.when and e.when.at:
            exits[e.rank] = min(exits.get(e.rank, e.when.at), e.when.at)
    if len(exits) < 2:
        return False
    spread_ms = (max(exits.values()) - min(exits.values())).total_seconds() * 1000
    return spread_ms >= LIMIT.timeouts_apart_share * min(limits)


def _worked_on_after_wait(case: Case, timeouts: list[Event], silent: list[int]):
    """(rank, line, timeout, seconds) when a rank that reported no timeout logged its own work
    (signals.toml timeout.awaited_rank_worked_on params: the training loop's progress lines) at
    least half a timeout after a rank that timed out had begun its wait: it was running its own
    code, not waiting in the collective; else None.  The waiter began at the latest at the
    latest bound of its timeout's time (an untimed traceback: up to its file's next timed line)
    minus the timeout it printed; the line's own printed time minus its uncertainty must be
    later by threshold.timeouts_apart_share of that timeout (lockstep jitter, host clocks)."""
    params = SIGN.timeout_awaited_rank_worked_on.params
    wanted = set(silent)
    lines = [e for e in events_of(case, tuple(params["progress_kinds"]))
             if e.when and e.when.at and e.when.basis in (Basis.MEASURED, Basis.CONVERTED)
             and (e.when.uncertainty_s or 0) <= params["max_uncertainty_s"]]
    if not lines:
        return _failed_long_after(case, timeouts, wanted)
    file_rank = _file_ranks(case)
    mine = [(e.rank if e.rank is not None else file_rank.get(e.ref.path), e) for e in lines]
    mine = [(r, e) for r, e in mine if r in wanted]
    if not mine:
        return _failed_long_after(case, timeouts, wanted)
    for t in timeouts:
        limits = [int(v) for v in (t.data.get("timeout_ms"), t.data.get("ran_ms")) if str(v or "").isdecimal()]
        if t.rank is None or t.rank in wanted or not limits or not t.when or not t.when.at:
            continue
        _, fired_by = _first_bounds([t], t.when.at)
        if fired_by is None:
            continue
        limit_s = max(limits) / 1000
        began_by = clocks.add_seconds(fired_by, -limit_s)
        if began_by is None:
            continue
        for r, e in sorted(mine, key=lambda re_: re_[1].when.at, reverse=True):
            printed = clocks.add_seconds(e.when.at, -(e.when.uncertainty_s or 0))
            late = (printed - began_by).total_seconds() if printed is not None else None
            if late is not None and late >= LIMIT.timeouts_apart_share * limit_s:
                return r, e, t, late
    return _failed_long_after(case, timeouts, wanted)


def _failed_long_after(case: Case, timeouts: list[Event], wanted: set[int]):
    """(rank, its failure record, timeout, seconds) when a rank that reported no timeout failed
    of its own error (its launcher's record: exit code, no signal -- not the teardown) half a
    timeout or more after the rank that timed out had failed: had it waited in the same
    collective since the same moment, its own timeout (or the peer-gone error a waiting gloo pair
    raises at once) would have ended it within the launchers' polling; it got there late.  Only
    with its own error in the bundle that is no timeout (a rank whose timeout line is missing
    would look the same)."""
    records: dict[int, Event] = {}
    for e in events_of(case, KIND.launcher_child_failed):
        code = e.data.get("exitcode")
        if e.rank is not None and e.when and e.when.at and isinstance(code, int) and code > 0:
            records[e.rank] = e if e.rank not in records or e.when.at < records[e.rank].when.at else records[e.rank]
    timeout_lines = {(t.ref.path, t.ref.line) for t in timeouts}
    own_error = {e.rank for e in events_of(case, KIND.py_exception)
                 if e.rank in wanted and (e.ref.path, e.ref.line) not in timeout_lines}
    for t in timeouts:
        limits = [int(v) for v in (t.data.get("timeout_ms"), t.data.get("ran_ms")) if str(v or "").isdecimal()]
        if t.rank is None or t.rank in wanted or t.rank not in records or not limits:
            continue
        limit_s = max(limits) / 1000
        for r in sorted(wanted & own_error & set(records)):
            late = (records[r].when.at - records[t.rank].when.at).total_seconds()
            if late >= LIMIT.timeouts_apart_share * limit_s:
                return r, records[r], t, late
    return None


def _file_ranks(case: Case) -> dict[str, int]:
    """A file's rank when every event of it that names a rank names the same one (a per-node or
    per-rank log): its lines without a rank are that rank's."""
    seen: dict[str, set[int]] = {}
    for e in case.events:
        if e.rank is not None:
            seen.setdefault(e.ref.path, set()).add(e.rank)
    return {path: next(iter(ranks)) for path, ranks in seen.items() if len(ranks) == 1}


def _transport_errors_visible(case: Case, timeouts: list[Event]) -> bool:
    """Could the bundle show a transport error at all?  NCCL reports one only under NCCL_DEBUG
    (none of its output: its absence says nothing, audit 6 M6); gloo raises its transport
    errors (tcp/pair.cc "Connection closed by peer") in the exception, with no switch."""
    gloo_only = all(e.kind == KIND.msg_gloo_timeout for e in timeouts)
    return gloo_only or any(e.kind in _NCCL_DEBUG_KINDS for e in case.events)


def _network_signs(case: Case, k) -> list[Event]:
    """Events that say the transport failed: NCCL WARNs and error chains, IB port events,
    and lines a message pattern reads as a comms cause other than the timeout itself."""
    comms = {f"msg.{m.id}" for m in k.messages
             if m.cause in k.causes and k.causes[m.cause].category == "comms" and m.cause != SIGN.timeout_all_ranks.cause}
    return events_of(case, _TRANSPORT_KINDS | comms)


def _failed_at_connection(case: Case, k) -> list[Event]:
    """A rank's own transport failures: the network signs, and its peer closing or resetting the
    connection (the peer ended: messages.toml peer_closed_connection, audit 13 M1)."""
    return _network_signs(case, k) + events_of(case, _PEER_ENDED)


def _deaths_not_by_timeout(case: Case, timeouts: list[Event]) -> list[Event]:
    """A dead peer, whose cause is the story: a process killed by the kernel or dead of a
    fatal signal other than the teardown after a timeout, or an exception that is not
    itself a communication error (counter_evidence.crashed_peer reads the same deaths)."""
    out = []
    links = chain_links(case)
    for e in events_of(case, _KILLS | _SIGNAL_DEATHS | _PEER_ENDED | {KIND.py_exception}):
        if e.kind in _KILLS or e.kind in _PEER_ENDED:  # (a peer's orderly close: that peer ended)
            out.append(e)
        elif e.kind in _SIGNAL_DEATHS and e.kind not in _KERNEL_LOG:
            name = signals.name_of(e.data.get("signal")) or signals.of_exitcode(e.data.get("exitcode"))
            if name and name not in _TEARDOWN:
                out.append(e)
        elif e.kind == KIND.py_exception and not _NETWORK_TEXT.search(e.text or "") and not carries_another(e) \
                and not chained_onto_communication(e, links):
            out.append(e)
    return out


_TRANSPORT_KINDS = frozenset({KIND.nccl_warn, KIND.nccl_error_chain, KIND.kernel_ib})
_KILLS = deaths("kernel_kill")
_SIGNAL_DEATHS = deaths("fatal_signal", "exit")
_PEER_ENDED = deaths("peer")
_KERNEL_LOG = produced_by("parser:kernel")


class HighHostMemoryThenDeath(Rule):
    """The job's own last host-memory reading was high (DeepSpeed's see_memory_usage and
    the like), and then a process was killed or the launcher tore the job down: the OOM
    killer is the likeliest hand even without a kernel log in the bundle."""

    id = "high-host-memory-then-death"

    def findings(self, case, k, trace):
        readings = events_of(case, KIND.msg_host_memory_report)
        high = [e for e in readings if _num(e.data.get("pct")) >= LIMIT.high_host_memory_pct]
        if not high:
            return []
        last = max(high, key=lambda e: e.seq)
        # a death after the reading (SIGKILL / exit -9, or a launcher line that says a worker
        # failed or is torn down); not a launcher line that says nothing died -- its start, a
        # spawn, the job's end, a signal the agent received (audit 6 M4)
        deaths = [e for e in case.events if e.seq > last.seq and (
            e.kind in _LAUNCHER_DEATH_KINDS or died_of(e, "SIGKILL"))]
        if not deaths:
            return []
        pct = _num(last.data.get("pct"))
        # A second, independent sign: the readings rose towards the death (a trend, not one figure).
        before = [_num(e.data.get("pct")) for e in sorted(readings, key=lambda e: e.seq) if e.seq <= last.seq]
        rising = len(before) >= 2 and all(b >= a for a, b in zip(before, before[1:])) and before[-1] > before[0]
        trace.append(f"{self.id}: host memory at {pct:.0f}% ({last.ref.describe()}), then {deaths[0].ref.describe()}")
        sign = SIGN.memory_high_then_death if pct < LIMIT.very_high_host_memory_pct else SIGN.memory_very_high_then_death
        summary = (f"host memory was {pct:.0f}% used ({last.ref.describe()}) just before a process of the job "
                   f"was killed ({deaths[0].ref.describe()}); dmesg would show the OOM killer"
                   + (f"; it rose over {len(before)} readings ({before[0]:.0f}% to {before[-1]:.0f}%)" if rising else ""))
        return [sign_finding(k, sign, self.id, summary, [last, deaths[0]], "memory", weight=sign.weight,
                             combined=(SIGN.memory_rising,) if rising else ())]

class MemoryLimitSet(Rule):
    """A host allocation failed while a virtual-memory limit (`ulimit -v`, RLIMIT_AS) was set:
    the limit, not the machine's RAM, ran out.  Linux overcommits, so a plain malloc rarely
    fails unless such a limit is in force.  A killed process is not read here: the limit fails
    allocations, it kills nothing."""

    id = "memory-limit-set"

    def findings(self, case, k, trace):
        limits = [f for f in case.facts if f.name == "ulimit.virtual" and str(f.value).lower() != "unlimited"]
        if not limits:
            return []
        # Only an allocation that failed: RLIMIT_AS makes brk/mmap/mremap fail with ENOMEM
        # (getrlimit.2) and never sends SIGKILL, so a killed process is no sign of it (audit 6 M2).
        failures = [e for e in events_of(case, {KIND.py_exception, KIND.native_terminate})
                    if _catalog_cause(e.text) == SIGN.memory_limit_set.cause]
        # the interpreter's own refusals (MemoryError): read by their message, the same failure
        failures += events_of(case, frozenset(SIGN.memory_limit_set.params.get("refused_allocations", ())))
        # pthread_create maps each new thread's stack; glibc turns that mmap's ENOMEM into EAGAIN,
        # so under RLIMIT_AS a thread-creation EAGAIN may be this limit, not a task limit (audit 8 M1)
        thread = re.compile(SIGN.memory_limit_set.params["thread_eagain"])
        threads = [e for e in events_of(case, KIND.msg_task_create_eagain) if thread.search(e.text or "")]
        if not failures and not threads:
            return []
        f = limits[0]
        if not failures:
            trace.append(f"{self.id}: ulimit -v {f.text or f.value} ({f.ref.describe()}) and a thread-creation "
                         f"EAGAIN ({threads[0].ref.describe()})")
            return [sign_finding(k, SIGN.memory_limit_set, self.id,
                                 f"a virtual-memory limit is set (ulimit -v {f.text or f.value}, {f.ref.describe()}) and "
                                 f"a thread could not be created ({threads[0].ref.describe()}): each thread's stack is "
                                 "mapped under that limit, and pthread_create reports a refused map as EAGAIN -- "
                                 "the same error a task limit gives", threads[:3], "memory", extra_refs=(f.ref,))]
        trace.append(f"{self.id}: ulimit -v {f.text or f.value} ({f.ref.describe()}) and {failures[0].ref.describe()}")
        return [sign_finding(k, SIGN.memory_limit_set, self.id,
                             f"a virtual-memory limit is set (ulimit -v {f.text or f.value}, {f.ref.describe()}) and a "
                             f"process ran out of memory ({failures[0].ref.describe()})", failures[:3], "memory",
                             extra_refs=(f.ref,))]


def _catalog_cause(text: str) -> str:
    from postmortem.knowledge import catalog  # here, not at the top: startup time (issue 17)

    m = catalog.match_message(text or "", ("pytorch",))
    return m.cause if m else ""


class CudaBuildNewerThanDriver(Rule):
    """NCCL says which CUDA it was built for (`NCCL version 2.25.1+cuda12.8`) and which CUDA the
    driver supports (`cudaDriverVersion 12000`).  Within one major version CUDA's minor-version
    compatibility lets a newer build run on an older driver; a newer MAJOR version cannot."""

    id = "cuda-build-newer-than-driver"

    def findings(self, case, k, trace):
        builds = [e for e in events_of(case, KIND.nccl_version) if e.data.get("cuda")]
        drivers = events_of(case, KIND.msg_cuda_driver_version)
        if not builds or not drivers:
            return []
        driver = min(int(e.data["driver"]) for e in drivers if str(e.data.get("driver", "")).isdecimal())
        newer = [e for e in builds if _cuda_number(str(e.data["cuda"])) // 1000 > driver // 1000]
        if not newer:
            return []
        trace.append(f"{self.id}: NCCL built for CUDA {newer[0].data['cuda']}, driver supports {driver // 1000}.{driver % 1000 // 10}")
        return [sign_finding(k, SIGN.cuda_build_newer_than_driver, self.id,
                        f"NCCL was built for CUDA {newer[0].data['cuda']} but the driver supports CUDA "
                             f"{driver // 1000}.{driver % 1000 // 10} at most", [newer[0], drivers[0]], "cuda")]


def _cuda_number(version: str) -> int:
    """`12.8` -> 12080, the encoding of cudaDriverVersion."""
    major, _, minor = version.partition(".")
    try:
        return int(major) * 1000 + int((minor or "0")[:2]) * 10
    except ValueError:
        return 0


# How a process of the job is seen to die (signals.toml `death`), the kernel's own kills aside.
_DEATH_KINDS = deaths("fatal_signal", "exit", "exception", "reported")
_LAUNCHER_KINDS = produced_by("parser:launcher")
_LAUNCHER_DEATH_KINDS = _LAUNCHER_KINDS - {KIND.launcher_start, KIND.launcher_spawned, KIND.launcher_finished,
                                           KIND.launcher_cancelled, KIND.launcher_signal_received}


class KilledWithoutReason(Rule):
    """A rank killed by SIGKILL (exit code -9) with no OOM line in the bundle: the OOM
    killer is the usual sender, so say so — weakly, and ask for dmesg."""

    id = "sigkill-exit"

    def findings(self, case, k, trace):
        kills = [e for e in events_of(case, _DEATH_KINDS) if died_of(e, "SIGKILL")]
        if not kills:
            return []
        trace.append(f"{self.id}: {len(kills)} SIGKILL exit(s)")
        return [sign_finding(k, SIGN.sigkill_exit, self.id,
                             "a rank was killed with SIGKILL (exit code -9), the OOM killer's signal", kills, "SIGKILL")]


_OOM_KILLS = deaths("kernel_kill")   # the kernel's OOM killer, however it was read


def _count(f) -> int:
    try:
        return int(f.value)
    except (TypeError, ValueError):
        return 0


class CgroupOomKills(Rule):
    """The job's memory cgroup counts OOM kills (memory.events / memory.oom_control
    `oom_kill`, any OOM killer's).  The count has no time and a group can outlive a job, so
    it is a sign only beside a death of the job this bundle shows (a SIGKILL, or the
    kernel's kill line); with a SIGKILL exit and no kernel log, as in a container that may
    not read dmesg, it is the independent second sign the kill needs."""

    id = "cgroup-oom-kills"

    def findings(self, case, k, trace):
        counts = [f for f in case.facts if f.name == "cgroup.oom_kill" and _count(f) > 0]
        if not counts:
            return []
        deaths_seen = [e for e in events_of(case, _OOM_KILLS | _DEATH_KINDS) if e.kind in _OOM_KILLS
                       or (e.kind in _DEATH_KINDS and died_of(e, "SIGKILL"))]
        f = counts[0]
        if not deaths_seen:
            trace.append(f"{self.id}: the memory cgroup counts {_count(f)} OOM kill(s) ({f.ref.describe()}) "
                         "but no death of the job is seen: an earlier job's, perhaps")
            return []
        limits = [x for x in case.facts if x.name == "cgroup.memory_max_bytes" and x.value != "unlimited"]
        limit = (f", its limit {_count(limits[0]) / (1 << 20):.0f} MiB ({limits[0].ref.describe()})"
                 if limits else "")
        trace.append(f"{self.id}: cgroup oom_kill {_count(f)} ({f.ref.describe()}) and {deaths_seen[0].ref.describe()}")
        return [sign_finding(k, SIGN.cgroup_oom_kills, self.id,
                             f"the job's memory cgroup counts {_count(f)} OOM kill(s) ({f.ref.describe()}){limit}, "
                             f"and a process of the job was killed ({deaths_seen[0].ref.describe()})",
                             deaths_seen[:3], "cgroup", extra_refs=(f.ref, *(x.ref for x in limits[:1])))]


class OomReportCutShort(Rule):
    """A kernel log holding the OOM killer's report -- dump_header's 'X invoked oom-killer:' line or
    dump_oom_summary's 'oom-kill:constraint=' (mm/oom_kill.c) -- but not the 'Killed process' line
    that ends it: a pasted excerpt cut short.  The kernel printed that report because memory (the
    host's or a cgroup's) ran out and it was choosing a victim; which process died is not in the
    excerpt, so it is weak alone.  Beside the job's own death by SIGKILL (its launcher's record,
    another program's observation) the two make the claim.  A kernel log that holds a kill line
    is read by that line (the parser's kernel.oom_kill, with its victim's pid) instead."""

    id = "oom-report-cut-short"

    def findings(self, case, k, trace):
        kernel_lines = events_of(case, KIND.kernel_line)
        if not kernel_lines:
            return []
        from postmortem.knowledge import catalog  # the catalogs' module only for a kernel log (startup)
        report = catalog.entries_pattern("kernel", tuple(SIGN.kernel_oom_report_cut.params["report_entries"]))
        lines = [e for e in kernel_lines if report.search(e.text or "")]
        if not lines:
            return []
        with_victim = {e.ref.path for e in events_of(case, _OOM_KILLS)}
        cut = [e for e in lines if e.ref.path not in with_victim]
        if not cut:
            trace.append(f"{self.id}: the OOM report ({lines[0].ref.describe()}) is read by its kill line")
            return []
        trace.append(f"{self.id}: the OOM killer's report at {cut[0].ref.describe()} without its kill line")
        return [sign_finding(k, SIGN.kernel_oom_report_cut, self.id,
                             f"the kernel's OOM killer ran ({cut[0].ref.describe()}): memory ran out; the excerpt ends "
                             "before the line naming the process it killed", cut[:2], "kernel")]


class MeasuredLimit(Rule):
    """A limit the process ran with (/proc/PID/limits, `ulimit -a`), measured low, beside a
    message that says that limit's resource ran out: the measurement is a second,
    independent sign of the same cause.  Which fact and which threshold: the sign's params."""

    id = "measured-limit"
    SIGNS = (SIGN.limits_memlock_finite, SIGN.limits_nofile_low)

    def findings(self, case, k, trace):
        out = []
        cause_of = {f"msg.{m.id}": m.cause for m in k.messages}
        for sign in self.SIGNS:
            said = events_of(case, {kind for kind, cause in cause_of.items() if cause == sign.cause})
            if not said:
                continue
            below = getattr(LIMIT, sign.params["below"]) if sign.params.get("below") else None
            low = [f for f in case.facts if f.name == sign.params["fact"] and isinstance(f.value, int)
                   and (below is None or f.value <= below)]
            if not low:
                continue
            f = low[0]
            trace.append(f"{self.id}: {f.name} = {f.value} ({f.ref.describe()}) beside {said[0].ref.describe()}")
            out.append(sign_finding(k, sign, self.id,
                                    f"the process ran with {f.text or f'{f.name} {f.value}'} ({f.ref.describe()})",
                                    said[:3], "limit", extra_refs=(f.ref,)))
        return out


class PidsLimitRefused(Rule):
    """The job's own EAGAIN from creating a thread or process, beside the limit that refused it:
    its pids cgroup's pids.events `max N` (N > 0), or the kernel's "fork rejected by pids
    controller in <group>" for the job's group (the group whose pids files the bundle holds, or
    one the job's own lines name: a container's id is its host name).  Both are the limit's own
    account of the refusal the EAGAIN reports; the kernel line of another group (a login
    session's fork bomb) says nothing of the job (audit 7 M14)."""

    id = "pids-limit-refused"

    def findings(self, case, k, trace):
        said = events_of(case, set(SIGN.limits_pids_refused.params["beside"]))
        if not said:
            return []
        counts = [f for f in case.facts if f.name == "cgroup.pids_max_hits" and isinstance(f.value, int)]
        hits = [f for f in counts if f.value > 0]
        groups = {f: _pids_group_of(f, case) for f in counts}
        if len(set(groups.values())) > 1:
            # A listing of several groups (grep -H over /sys/fs/cgroup/pids/*): a refusal counts only in
            # the job's group -- one its own lines name (audit 8 M1: a CI runner's 'max 1' beside the
            # job's 'max 0' is no refusal of the job's)
            named = [f for f in hits if groups[f] and _named_leaf(groups[f], case)]
            if hits and not named:
                trace.append(f"{self.id}: the bundle lists {len(set(groups.values()))} pids groups and none the job's "
                             f"lines name: {hits[0].ref.describe()}'s refusals are not shown to be the job's")
            hits = named
        if hits:
            f = hits[0]
            limit = next((g for g in case.facts if g.name == "cgroup.pids_max"
                          and _pids_group_of(g, case) == groups[f]), None)
            trace.append(f"{self.id}: pids.events max {f.value} ({f.ref.describe()}) beside {said[0].ref.describe()}")
            return [sign_finding(k, SIGN.limits_pids_refused, self.id,
                                 f"the job's pids cgroup refused {f.value} task creation(s) ({f.ref.describe()})"
                                 + (f" at its limit of {limit.value} tasks ({limit.ref.describe()})" if limit else "")
                                 + f": threads and processes count against it ({said[0].ref.describe()})",
                                 said[:2], "pids", extra_refs=(f.ref,) + ((limit.ref,) if limit else ()))]
        for e in events_of(case, {KIND.kernel_line}):
            m = _PIDS_REJECTED.search(e.text)
            if not m:
                continue
            if not _the_jobs_group(m.group("group"), case):
                trace.append(f"{self.id}: {e.ref.describe()} names pids group {m.group('group')}, not shown to be "
                             "the job's: it does not say which limit refused the job's task creation")
                continue
            trace.append(f"{self.id}: {e.ref.describe()} (the job's pids group) beside {said[0].ref.describe()}")
            return [sign_finding(k, SIGN.limits_pids_refused, self.id,
                                 f"the kernel's pids controller refused a task creation in the job's group "
                                 f"{m.group('group')} ({e.ref.describe()}): threads and processes count against "
                                 f"its limit ({said[0].ref.describe()})", [said[0], e], "pids")]
        return []


# kernel/cgroup/pids.c pids_event: "cgroup: fork rejected by pids controller in " + the group's path
_PIDS_REJECTED = re.compile(r"fork rejected by pids controller in (?P<group>/\S*)")
# a container's cgroup leaf (docker-<id>.scope, cri-containerd-<id>.scope, crio-<id>, /docker/<id>): its id
_CONTAINER_ID = re.compile(r"(?:^|[-/])(?P<id>[0-9a-f]{12})[0-9a-f]{0,52}(?:\.scope)?$")


def _pids_group_of(fact, case: Case) -> str:
    """The pids group a pids file's value belongs to: the nearest cgroup.pids_group fact at or above
    its line in the same file (the value's own grep -H line, or the header above it)."""
    above = [g for g in case.facts if g.name == "cgroup.pids_group" and g.ref.path == fact.ref.path
             and g.ref.line is not None and fact.ref.line is not None and g.ref.line <= fact.ref.line]
    return str(max(above, key=lambda g: g.ref.line).value) if above else ""


def _named_leaf(group: str, case: Case) -> bool:
    """The group's leaf (a container id, a job's folder) on a line of the job's own files."""
    leaf = group.rstrip("/").rsplit("/", 1)[-1]
    if len(leaf) < 4:
        return False
    kernel = produced_by("parser:kernel")
    skip = {g.ref.path for g in case.facts if g.name.startswith("cgroup.")}
    return any(e.kind not in kernel and e.ref.path not in skip and (leaf in e.text or e.host == leaf)
               for e in case.events)


def _the_jobs_group(group: str, case: Case) -> bool:
    """Is a pids group the job's?  Yes when the bundle holds that group's pids files, or the job's own
    (non-kernel) lines name its leaf, or its container id (a container's host name is the id's first
    12 hex digits, as NCCL and the launcher print it)."""
    if any(f.name == "cgroup.pids_group" and isinstance(f.value, str) and f.value != "/"
           and (group == f.value or group.endswith(f.value) or f.value.endswith(group)) for f in case.facts):
        return True
    leaf = group.rstrip("/").rsplit("/", 1)[-1]
    m = _CONTAINER_ID.search(leaf)
    names = {m.group("id")} if m else ({leaf} if leaf and not leaf.endswith((".scope", ".slice")) else set())
    kernel = produced_by("parser:kernel")
    return any(e.kind not in kernel and (e.host in names or any(n in e.text for n in names))
               for e in case.events if names)


class EnomemUnderMemlock(Rule):
    """ENOMEM ("Cannot allocate memory") from a call RLIMIT_MEMLOCK governs: mlock(2), mlockall,
    mmap(MAP_LOCKED), ibv_reg_mr and the verbs rings (which pin pages), cudaHostRegister, the EFA
    provider posting its receive buffers.  These answer ENOMEM when the limit is exceeded (man
    mlock.2, ERRORS) — and when the host is short of memory, so the failing call is one weak sign.
    The limit's measured value is a second, independent one only when it is small (at or below
    threshold.memlock_small_bytes, the defaults): a finite limit alone is the default nearly
    everywhere.  An ENOMEM from fork/clone/Popen/mmap is never this limit's (overcommit, RLIMIT_AS,
    vm.max_map_count answer those), nor a dmabuf registration's (umem_dmabuf.c charges no memlock).
    Lines a memlock message pattern already reads are left to it and to MeasuredLimit."""

    id = "enomem-memlock"

    def findings(self, case, k, trace):
        read = {(e.ref.path, e.ref.line) for e in events_of(case, {f"msg.{m.id}" for m in k.messages
                                                                    if m.cause == SIGN.limits_enomem_in_locking_call.cause})}
        for e in enomem_events(case):
            if (e.ref.path, e.ref.line) in read:
                continue
            call = _locking_call(case, e)
            if call is None:
                continue
            small = [f for f in case.facts if f.name == "ulimit.memlock" and isinstance(f.value, int)
                     and f.value <= LIMIT.memlock_small_bytes]
            trace.append(f"{self.id}: ENOMEM at {e.ref.describe()} from {call}"
                         + (f"; locked-memory limit {small[0].text or small[0].value} ({small[0].ref.describe()})" if small else ""))
            summary = f"{call} failed with ENOMEM ({e.ref.describe()}): it pins memory charged to RLIMIT_MEMLOCK"
            if small:
                summary += (f"; the process ran with a locked-memory limit of {small[0].text or small[0].value} "
                            f"({small[0].ref.describe()}), a default far below what pinning buffers needs")
            return [sign_finding(k, SIGN.limits_enomem_in_locking_call, self.id, summary, [e], "ENOMEM",
                                 extra_refs=tuple(f.ref for f in small[:1]),
                                 combined=(SIGN.limits_memlock_beside_enomem,) if small else ())]
        return []


def _locking_call(case: Case, e: Event) -> str | None:
    """The call RLIMIT_MEMLOCK governs that this ENOMEM came from, as its line or the innermost
    frames of its traceback name it; None when a call it does not govern is named first."""
    params = SIGN.limits_enomem_in_locking_call.params
    locking = [re.compile(p) for p in params["locking"]]
    not_locking = [re.compile(p) for p in params["not_locking"]]
    stack = _traceback_of(case, e) if e.kind == KIND.py_exception else None
    # The line first, then the frames from the innermost (the call that returned ENOMEM) out.
    for text in (e.text or "", *(f"{f.function or ''} {f.file or ''}" for f in (stack.frames if stack else ()))):
        if any(p.search(text) for p in not_locking):
            return None
        hit = next((m for m in (p.search(text) for p in locking) if m), None)
        if hit:
            return hit.group(0)
    return None


class StorePortTaken(Rule):
    """The c10d store's server could not listen on any address, and the bind warnings c10d
    recorded on the way there say EADDRINUSE: the store's port is held by another process.
    (c10d prints the warnings per address and the error once all failed: one failure, whose
    errno is the discriminating part.)"""

    id = "store-port-taken"

    def findings(self, case, k, trace):
        params = SIGN.store_port_taken.params
        listen_failed = re.compile(params["listen_failed"])
        bind_taken = re.compile(params["bind_failed"])
        errors = [e for e in events_of(case, KIND.msg_c10d_log) if listen_failed.search(e.text or "")]
        if not errors:
            return []
        binds = [e for e in case.events if bind_taken.search(e.text or "") and not listen_failed.search(e.text or "")]
        for error in errors:
            before = [e for e in errors if e.ref.path == error.ref.path and (e.ref.line or 0) < (error.ref.line or 0)]
            since = max((e.ref.line or 0 for e in before), default=0)
            own = [b for b in binds if b.ref.path == error.ref.path
                   and since < (b.ref.line or 0) < (error.ref.line or 0) <= (b.ref.line or 0) + int(params["window"])]
            if own:
                trace.append(f"{self.id}: {error.ref.describe()} after {len(own)} bind warning(s) with EADDRINUSE "
                             f"from {own[0].ref.describe()}")
                return [sign_finding(k, SIGN.store_port_taken, self.id,
                                     f"the store's server could not listen on any address ({error.ref.describe()}); "
                                     f"binding its port failed with EADDRINUSE ({own[0].ref.describe()}): another process holds the port",
                                     [*own, error], "EADDRINUSE")]
        trace.append(f"{self.id}: the store could not listen, but no bind warning before it names EADDRINUSE")
        return []


class ForkEnomem(Rule):
    """ENOMEM raised by a fork (multiprocessing starting DataLoader workers, subprocess): the
    kernel could not commit memory for the child -- host memory, strongly; a bare ENOMEM from
    an unnamed call stays the weak python_enomem reading (audit 6 H3)."""

    id = "fork-enomem"

    def findings(self, case, k, trace):
        frames = [re.compile(p) for p in SIGN.mem_fork_enomem.params["fork_frames"]]
        for e in events_of(case, KIND.py_exception):
            if "[Errno 12]" not in (e.text or ""):
                continue
            stack = _traceback_of(case, e)
            # the innermost frames (the raise site and its caller): where the call failed
            inner = [f"{f.file or ''} {f.function or ''}" for f in (stack.frames[:2] if stack else ())]
            if any(p.search(t) for p in frames for t in inner):
                free = memory_plentiful(case)
                if free:
                    # fork(2) also answers ENOMEM with RAM free: a commit limit the parent's size exceeds
                    # (vm.overcommit_memory=2), a pid namespace whose init exited (fork.2) -- audit 7 M9
                    trace.append(f"{self.id}: ENOMEM raised by a fork at {e.ref.describe()}, but {free[1]}: "
                                 "a commit limit or the pid namespace refused it, not the host's memory")
                    return []
                trace.append(f"{self.id}: ENOMEM raised by a fork at {e.ref.describe()}")
                return [sign_finding(k, SIGN.mem_fork_enomem, self.id,
                                     "a fork failed with ENOMEM: the kernel could not commit memory for the child "
                                     f"({e.ref.describe()})", [e], "ENOMEM", extra_refs=(stack.ref,))]
        return []

