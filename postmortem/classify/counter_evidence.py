"""Counter-evidence: measured state that speaks against a cause.

Returns cause -> (factor, reasons): the factor multiplies the cause's support, and each
reason cites the fact it rests on ("/dev/shm is 16G and 3% used (df.txt:2)").
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from operator import attrgetter

from postmortem import signals
from postmortem.stacks import traceback_of
from postmortem.classify.index import events_of
from postmortem.knowledge.registry import COUNTER, KIND, LIMIT, SIGN, deaths, produced_by
from postmortem.model import Case, Event, Fact, Finding, Ref

GIB = 1 << 30
_KERNEL_KINDS = produced_by("parser:kernel")
_CORE_KINDS = produced_by("parser:core")
_OOM_KILLS = deaths("kernel_kill")                   # the kernel's OOM killer, however it was read
_SIGNAL_DEATHS = deaths("fatal_signal", "exit")      # a process seen dying of a signal or exit code


def _against(counter, reason: str, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """One piece of counter-evidence: its factor on the cause it speaks against, said in the trace."""
    trace.append(f"counter: {reason}")
    return {counter.against: (counter.factor, (reason,))}


def _facts(case: Case, name: str) -> list[Fact]:
    return [f for f in case.facts if f.name == name]


def _num(f: Fact) -> float | None:
    try:
        return float(f.value)
    except (TypeError, ValueError):
        return None



def job_start(case: Case) -> Event | None:
    """The earliest timed line of the job's own logs (anything but the kernel's: not its
    kinds, nor a message matched in a file that is a kernel log)."""
    kernel_files = _kernel_artifacts(case)
    timed = [e for e in case.events if e.when and e.when.at and e.kind not in _KERNEL_KINDS and e.kind not in _CORE_KINDS
             and e.ref.path and e.ref.path not in kernel_files and not _is_kernel_log(e, case)]
    return min(timed, key=lambda e: e.when.at) if timed else None  # type: ignore[union-attr]


def _is_kernel_log(e: Event, case: Case) -> bool:
    return e.kind not in _KERNEL_KINDS and e.stamp is not None and e.stamp.clock.value in ("boot", "delta")


def before_the_job(findings: list[Finding], case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Causes whose every sign ended long before the job started logging: a kernel log
    keeps the whole boot's history, and an OOM kill an hour earlier did not kill this job."""
    start = job_start(case)
    if start is None:
        return {}
    out: dict[str, tuple[float, tuple[str, ...]]] = {}
    by_cause: dict[str, list[Finding]] = {}
    for f in findings:
        by_cause.setdefault(f.cause, []).append(f)
    for cause, fs in by_cause.items():
        lasts = [f.last_at for f in fs]
        if not all(lasts):
            continue
        gap = (start.when.at - max(lasts)).total_seconds()  # type: ignore[operator,union-attr]
        if gap > LIMIT.before_job_s:
            reason = (f"every sign of {cause} is {gap / 60:.0f} min older than the job's first log line "
                      f"({start.ref.describe()}): earlier history of the host")
            trace.append(f"counter: {reason}")
            out[cause] = (COUNTER.before_the_job.factor, (reason,))
    return out


def effective_shm_size(case: Case) -> list[tuple[Fact, float | None]]:
    """/dev/shm's size as the job saw it.  `df` reports the mount in effect; in a mount
    table a later mount on /dev/shm hides an earlier one (a container's or a private
    namespace's tmpfs over the host's), so the last line wins there."""
    mount_lines = {(f.ref.path, f.ref.line) for f in _facts(case, "shm.mount")}
    sizes = _facts(case, "shm.size_bytes")
    from_df = [f for f in sizes if (f.ref.path, f.ref.line) not in mount_lines]
    if from_df:
        return [(f, _num(f)) for f in from_df]
    if not sizes:
        # Docker's setting is what the container's /dev/shm got, unless it shares the host's.
        shared = any(str(f.value) == "host" for f in _facts(case, "docker.ipc_mode"))
        return [] if shared else [(f, _num(f)) for f in _facts(case, "docker.shm_size_bytes")]
    last_per_file: dict[str, Fact] = {}
    for f in sizes:
        if f.ref.path not in last_per_file or (f.ref.line or 0) > (last_per_file[f.ref.path].ref.line or 0):
            last_per_file[f.ref.path] = f
    return [(f, _num(f)) for f in last_per_file.values()]


def _kernel_artifacts(case: Case) -> set[str]:
    return {e.ref.path for e in events_of(case, _KERNEL_KINDS)}


def unrelated_victims(findings: list[Finding], case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """An OOM kill whose victim the job's own logs never mention killed some other process
    (the kernel log keeps the whole boot's history) — but only when the kernel and the
    job are seen to share a pid namespace (some pid appears on both sides).  In a
    container the job's pids are not the kernel's, and a missing match proves nothing."""
    victims = {e.pid for e in events_of(case, _OOM_KILLS) if e.pid is not None}
    if not victims:
        return {}
    kernel_files = _kernel_artifacts(case)
    job_pids = {e.pid for e in case.events if e.pid is not None and e.ref.path not in kernel_files}
    kernel_pids = {e.pid for e in case.events if e.pid is not None and e.ref.path in kernel_files}
    if not job_pids or not victims or victims & job_pids or not (kernel_pids & job_pids):
        return {}
    reason = (f"the OOM killer's victim(s) {sorted(victims)} appear nowhere in the job's own logs, "
              f"which name pids {sorted(job_pids)[:6]} (the kernel log shows pid {min(kernel_pids & job_pids)} "
              "too, so they share a pid namespace): another process was killed")
    return _against(COUNTER.unrelated_victims, reason, trace)


# How a job's processes are seen to die (signals.toml `death`), outside the kernel log.
_DEATH_KINDS = deaths("fatal_signal", "exit", "exception", "reported")
_SIGKILL = re.compile(r"SIGKILL|\bKilled\b|-9\b|Out Of Memory|oom", re.I)


def death_mismatch(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """The OOM killer kills with SIGKILL.  When the job's own logs show how it died and
    none of those deaths is a SIGKILL, the OOM kill in the kernel log was another
    process's (the kernel log keeps the whole boot's history)."""
    kills = events_of(case, _OOM_KILLS)
    if not kills:
        return {}
    kernel_files = _kernel_artifacts(case)
    # The victim named in the job's own lines is the job's process, whatever else died (audit 7 M4).
    victims = {e.pid for e in kills if e.pid is not None}
    if victims & {e.pid for e in case.events if e.pid is not None and e.ref.path not in kernel_files}:
        return {}
    # A survivor's "connection closed / timed out" is the fallout of a peer's death, not a death of its own
    # cause (crashed_peer reads it so); neither is an exception that only carries another process's.
    deaths = [e for e in events_of(case, _DEATH_KINDS) if e.ref.path not in kernel_files
              and not str(e.data.get("signal", "")).upper().endswith("SIGTERM")]
    survivors = [e for e in deaths if e.kind == KIND.py_exception
                 and (_NETWORK_TEXT.search(e.text) or carries_another(e) or _peer_end(e))]
    deaths = [e for e in deaths if e not in survivors]
    # Exit code 1 is how Python exits on an uncaught exception: a launcher's record of it (torchrun's
    # "failed (exitcode: 1) ... (pid: N)", its Root Cause table) is the same death as that process's
    # exception -- a survivor's exit when the exception was the peer's fallout (audit 8 H11).
    own = [e for e in deaths if e.kind == KIND.py_exception]
    deaths = [e for e in deaths if not (e.kind != KIND.py_exception and str(e.data.get("exitcode", "")) == "1"
                                        and _same_process_as(e, survivors, bool(own)))]
    if not deaths:
        return {}
    if any(_SIGKILL.search(e.text) or str(e.data.get("exitcode", "")) == "-9"
           or str(e.data.get("signal", "")).upper() in ("SIGKILL", "KILLED") for e in deaths):
        return {}
    first = deaths[0]
    reason = (f"the job died otherwise ({first.ref.describe()}: {first.text.strip()[:80]}), "
              "not by the OOM killer's SIGKILL: the OOM kill in the kernel log hit another process")
    return _against(COUNTER.death_mismatch, reason, trace)


def oom_kill_hit_the_job(case: Case) -> bool:
    """Is an OOM kill of the bundle seen to hit the job?  Yes when a victim's pid is named in
    the job's own lines, or the job's own logs show one of its processes dying as the OOM
    killer kills (SIGKILL, exit -9, 'Killed', OOMKilled).  A memcg kill of some other process
    (the kernel log keeps the host's whole history) links no failure of the job to memory."""
    kernel_files = _kernel_artifacts(case)
    victims = {e.pid for e in events_of(case, _OOM_KILLS) if e.pid is not None}
    if victims & {e.pid for e in case.events if e.pid is not None and e.ref.path not in kernel_files}:
        return True
    # (a death record whose only word is the OOM report itself -- srun's "task N: Out Of Memory",
    # printed for pipelines that completed -- shows no process dying: audit 8 H2)
    return any(_KILLED.search(e.text) or str(e.data.get("exitcode", "")) == "-9"
               or str(e.data.get("signal", "")).upper() in ("SIGKILL", "KILLED")
               for e in events_of(case, _DEATH_KINDS) if e.ref.path not in kernel_files)


_KILLED = re.compile(r"SIGKILL|\bKilled\b|\bsignal 9\b|exitcode: -9\b")


def _same_process_as(e: Event, survivors: list[Event], other_exceptions: bool) -> bool:
    """The exit record is one of these survivors' (same pid, else same rank); a record naming
    neither is theirs when the bundle shows no other process raising."""
    if e.pid is not None:
        return any(s.pid == e.pid for s in survivors)
    if e.rank is not None:
        return any(s.rank == e.rank for s in survivors)
    return bool(survivors) and not other_exceptions


# Deaths that are teardown, not a cause: the launcher's SIGTERM, NCCL's own abort.
_TEARDOWN = frozenset({"SIGTERM", "SIGABRT", "SIGINT", "SIGHUP"})
# (torch's elastic parse_rendezvous_endpoint rejecting the store's address is a set-up error of the
# job's communication, not a death that leaves its peers talking to nobody)
# (glibc's gai_strerror texts: a host name that did not resolve is the network's set-up, c10d's
# 'host not found: ...' ValueError included)
_NETWORK_TEXT = re.compile(r"NCCL|nccl|[Cc]onnection|network|[Gg]loo|[Tt]imed out|[Tt]imeout|DistBackendError|Socket"
                           r"|of the rendezvous endpoint '|Name or service not known|Temporary failure in name resolution")
# Exceptions that only carry another process's error: torch/multiprocessing/spawn.py raises
# ProcessRaisedException in the parent with the child's traceback as its text (the child's own
# exception, read where it is printed, says what happened); not a death of their own.
_CARRIES_ANOTHER = re.compile(r"(?:^|\.)ProcessRaisedException$")


# torch/distributed/elastic/multiprocessing/api.py _terminate_process_handler: the agent (or a
# worker) raises SignalException(f"Process {pid} got signal: {sigval}") when it RECEIVES a death
# signal (TORCHELASTIC_SIGNALS_TO_HANDLE, default SIGTERM,SIGINT,SIGHUP,SIGQUIT): the process
# was told to stop -- the same teardown as a death by SIGTERM above, not a fault of its own.
_GOT_SIGNAL = re.compile(r"(?:^|\.)SignalException\b.*?got signal: (?:Signals\.)?(?P<sig>SIG[A-Z]+|\d{1,2})\b")


def _teardown_signal_exception(e: Event) -> bool:
    m = _GOT_SIGNAL.search(f"{e.data.get('type') or ''} {e.text}")
    return bool(m) and signals.name_of(m.group("sig")) in _TEARDOWN


# EPIPE / ECONNRESET: the other end of a pipe or socket went away -- the writer's exception reports
# the reader's death (a peer, the job's own child), no fault of its own; except a write to the job's
# own output (print into `| head`: rules/app.py _writes_own_output), which is the job's side (audit 8 H6).
_PEER_END_TYPES = re.compile(r"(?:^|\.)(?:BrokenPipe|ConnectionReset|ConnectionAborted)Error$")


def _peer_end(e: Event) -> bool:
    from postmortem.classify.rules.app import _writes_own_output  # rules import this module

    return bool(_PEER_END_TYPES.search(str(e.data.get("type") or ""))) and not _writes_own_output(e)


def carries_another(e: Event) -> bool:
    return bool(_CARRIES_ANOTHER.search(str(e.data.get("type") or "")))


def chained_onto_communication(e: Event, links) -> bool:
    """An earlier link of the exception's chain (rules/base.py chain_links) is a communication
    error, a peer's end or another process's carried error: the exception is the job's report of
    that failure (`raise TrainingError(...) from e`), no death of a cause of its own (audit 12 M1)."""
    return any(_NETWORK_TEXT.search(x.text or "") or carries_another(x) or _peer_end(x)
               for x in links.get((e.ref.path, e.ref.line), ()))


def crashed_peer(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Connection errors are what a process's peers see when it dies.  When the bundle
    shows one of the job's processes dying of a fault (SIGSEGV, SIGBUS ...) or of an
    exception that is not itself a communication error, the network is the messenger.  An
    exception a handler raised while the process's own failure propagated is no death of its
    own (audit 8 H1: it would discount the very failure it follows), nor one the job raised
    from a communication error (audit 12 M1)."""
    from postmortem.classify.rules.base import chain_links, handler_fallout  # rules import this module

    handlers = handler_fallout(case)
    links = chain_links(case)
    for e in events_of(case, (_SIGNAL_DEATHS - _KERNEL_KINDS) | {KIND.py_exception}):
        if (e.ref.path, e.ref.line) in handlers:
            continue
        # (not the kernel log: it keeps every crash since boot, most of them someone else's)
        if e.kind in _SIGNAL_DEATHS and e.kind not in _KERNEL_KINDS:
            name = signals.name_of(e.data.get("signal")) or signals.of_exitcode(e.data.get("exitcode"))
            if name and name not in _TEARDOWN:
                return _peer_reason(e, name, trace)
        elif e.kind == KIND.py_exception and not _NETWORK_TEXT.search(e.text) and not carries_another(e) \
                and not _peer_end(e) and not chained_onto_communication(e, links):
            if _teardown_signal_exception(e):
                continue
            return _peer_reason(e, str(e.data.get("type") or "an exception"), trace)
    return {}


def kernel_log_without_oom_kill(case: Case, trace: list[str],
                                findings: Sequence[Finding] = ()) -> dict[str, tuple[float, tuple[str, ...]]]:
    """A job process died of SIGKILL, and the kernel log of its host -- whole since boot and
    collected after the death -- shows no OOM kill, nor does any memory cgroup count one:
    the kernel's OOM killer did not send it (signals.toml counter.kernel_log_without_oom_kill).
    `case` is the whole case, the kernel's history before the job included: that history is
    what shows the log reaches back to boot.  It weighs on the reading of the SIGKILL as the
    kernel's OOM kill (sigkill.exit) only, not on host_oom's other readings: a user-space killer
    (systemd-oomd, earlyoom, the kubelet's eviction) kills on memory pressure with no kernel line,
    so what shows the memory running out stands (audit 11 L5)."""
    from postmortem.classify.rules.base import died_of  # rules import this module

    against = COUNTER.kernel_log_without_oom_kill.against
    readings = [f for f in findings if f.cause == against]
    readings = [f for f in readings if f.role == "root"] or readings
    if findings and not any(f.signal == SIGN.sigkill_exit.id for f in readings):
        return {}   # nothing reads the SIGKILL as the kernel's OOM kill
    kernel = [e for e in case.events if e.kind in _KERNEL_KINDS]
    if not kernel or events_of(case, _OOM_KILLS) or any(_num(f) for f in _facts(case, "cgroup.oom_kill")):
        return {}
    kernel_files = _kernel_artifacts(case)
    kills = [e for e in events_of(case, _DEATH_KINDS) if e.ref.path not in kernel_files and died_of(e, "SIGKILL")
             and e.when is not None and e.when.at is not None]
    collected = [f for f in _facts(case, "manifest.realtime") if _num(f)]
    banner = re.compile(SIGN.sigkill_exit.params["boot_banner"])
    whole = next((e for e in kernel if banner.search(e.text or "")), None)
    if not kills or not collected or whole is None:
        return {}
    hosts = {e.host for e in kernel if e.host} | {e.host for e in kills if e.host}
    last = max(e.when.at for e in kills)  # type: ignore[union-attr]
    if len(hosts) > 1 or _num(collected[0]) < last.timestamp():
        return {}
    reason = (f"the kernel log, whole since boot ({whole.ref.describe()}) and collected after the SIGKILL "
              f"({collected[0].ref.describe()}), shows no OOM kill: the kernel's OOM killer did not send it")
    others = [f for f in readings if f.signal != SIGN.sigkill_exit.id]
    if not others:
        return _against(COUNTER.kernel_log_without_oom_kill, reason, trace)
    # the kernel reading discounted, the memory readings as they are: the factor on the cause's support
    from postmortem.classify import _support  # the classifier imports this module

    factor = COUNTER.kernel_log_without_oom_kill.factor
    discounted = [dataclasses.replace(f, confidence=f.confidence * factor) if f.signal == SIGN.sigkill_exit.id else f
                  for f in readings]
    before = _support(readings)   # > 0: sigkill.exit is among them
    ratio = _support(discounted) / before if before else 1.0
    reason += (f" -- weighed on that reading only (x{ratio:.2f} on {against}): "
               + ", ".join(sorted({f.signal for f in others})) + " read the memory itself, whoever killed")
    trace.append(f"counter: {reason}")
    return {against: (ratio, (reason,))}


def _peer_reason(e: Event, what: str, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    reason = (f"a process of the job died of {what} ({e.ref.describe()}): connection errors on its peers "
              "are the fallout, not the network")
    return _against(COUNTER.crashed_peer, reason, trace)


def measured_state_against(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    out: dict[str, tuple[float, tuple[str, ...]]] = {}
    sizes = effective_shm_size(case)
    uses = [(f, _num(f)) for f in _facts(case, "shm.use_pct")]
    big = [(f, v) for f, v in sizes if v is not None and v >= LIMIT.shm_big_bytes]
    low_use = [(f, v) for f, v in uses if v is not None and v < LIMIT.shm_low_use_pct]
    if big and low_use:
        f, v = big[0]
        u, pct = low_use[0]
        reason = (f"/dev/shm is {v / GIB:.1f} GiB and {pct:.0f}% used "
                  f"({f.ref.describe()}): shared-memory exhaustion unlikely (unless it was full at crash time)")
        out.update(_against(COUNTER.shm_big_low_use, reason, trace))
    elif big:
        f, v = big[0]
        reason = f"/dev/shm is {v / GIB:.1f} GiB ({f.ref.describe()}), larger than container defaults"
        out.update(_against(COUNTER.shm_big, reason, trace))
    for f in _facts(case, "ulimit.memlock"):
        if str(f.value).lower() == "unlimited":
            reason = f"the locked-memory limit is unlimited ({f.ref.describe()}): not the memlock limit"
            out.update(_against(COUNTER.memlock_unlimited, reason, trace))
            break
    out.update(cgroup_no_oom_kill(case, trace))
    out.update(enomem_with_memory_free(case, trace))
    out.update(request_beyond_host(case, trace))
    for e in events_of(case, {KIND.msg_fm_no_nvswitch})[:1 if not _fabric_needed(case) else 0]:
        reason = (f"Fabric Manager found no NVSwitch to manage ({e.ref.describe()}: NV_WARN_NOTHING_TO_DO): "
                  "the host has no NVSwitch fabric, so no NVLS or Fabric Manager failure")
        out.update(_against(COUNTER.fm_no_nvswitch, reason, trace))
    out.update(thermal_unplaced(case, trace))
    out.update(gpus_without_nvswitch(case, trace))
    for f in _facts(case, "env.NCCL_P2P_DISABLE"):
        if str(f.value).strip() == "1":
            reason = f"NCCL_P2P_DISABLE=1 was set ({f.ref.describe()}): NCCL used no peer-to-peer transport"
            out.update(_against(COUNTER.p2p_disabled, reason, trace))
            break
    return out


# CUDA's own word that the fabric is needed and not up: cudaErrorSystemNotReady (802, "system not
# yet initialized"); an SXM/HGX board in nvidia-smi sits on an NVSwitch baseboard.
_FABRIC_NEEDED = re.compile(r"system not yet initialized|SystemNotReady|SYSTEM_NOT_READY")
_SXM_BOARD = re.compile(r"SXM|HGX|DGX|\bGB200\b|\bB200\b|\bB100\b")


def _fabric_needed(case: Case) -> bool:
    """Something in the bundle says the host needs its NVSwitch fabric (audit 8 M5): then Fabric
    Manager's NV_WARN_NOTHING_TO_DO is no 'no NVSwitch here' -- on NVLink5 systems (HGX/DGX B200,
    B100) FM started without NVLSM fails with exactly that warning, the NVSwitches stay
    uninitialized and CUDA returns cudaErrorSystemNotReady (NVIDIA Fabric Manager user guide, as
    quoted in siderolabs/extensions#717; NVIDIA/gpu-operator#2781)."""
    if any(_FABRIC_NEEDED.search(e.text or "") for e in events_of(case, {KIND.msg_cuda_system_not_ready})):
        return True
    if any(_FABRIC_NEEDED.search(e.text or "") for e in events_of(case, KIND.py_exception)):
        return True
    return any(re.fullmatch(r"gpu\.\d+\.name", f.name) and _SXM_BOARD.search(str(f.value)) for f in case.facts)


def gpus_without_nvswitch(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Every GPU nvidia-smi names is a product never on an NVSwitch baseboard: no fabric for
    Fabric Manager or NVLS to fail (catalogs/readings.toml [nvswitch])."""
    from postmortem.classify.rules.catalog import _readings
    names = [f for f in case.facts if re.fullmatch(r"gpu\.\d+\.name", f.name) and isinstance(f.value, str)]
    products = re.compile(_readings()["nvswitch"]["no_nvswitch_products"])
    if not names or not all(products.search(f.value) for f in names):
        return {}
    f = names[0]
    reason = (f"the GPUs are {f.value.strip()} ({f.ref.describe()}{f', and {len(names) - 1} more' if len(names) > 1 else ''}): "
              "a product never on an NVSwitch baseboard, so no Fabric Manager or NVLS fabric to fail")
    return _against(COUNTER.gpus_without_nvswitch, reason, trace)


def cgroup_no_oom_kill(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """The memory cgroup of the job's own process (read for `collect --pid`, whose header
    names the pid) counts no OOM kill: no process in it was killed by any OOM killer.  A
    group read as `self` is the collector's, which proves nothing about the job's."""
    readers = {f.ref.path for f in _facts(case, "cgroup.reader") if isinstance(f.value, int)}
    zero = [f for f in _facts(case, "cgroup.oom_kill") if f.ref.path in readers and _num(f) == 0]
    if not zero or any(_num(f) for f in _facts(case, "cgroup.oom_kill")):
        return {}
    f = zero[0]
    reason = (f"the job's memory cgroup counts no OOM kill ({f.ref.describe()}): "
              "no process in it was killed by an OOM killer")
    return _against(COUNTER.cgroup_no_oom_kill, reason, trace)


def memory_plentiful(case: Case) -> tuple[Ref, str] | None:
    """(where, why) when the bundle shows the host's memory was not the limit: MemAvailable at
    least LIMIT.enomem_available_pct of MemTotal, no OOM kill in what the bundle holds,
    and no other memory limit (ulimit -v, cgroup memory.max) set."""
    facts = {f.name: f for f in case.facts}
    total, avail = facts.get("mem.total_bytes"), facts.get("mem.available_bytes")
    if not total or not avail or _num(total) <= 0:
        return None
    pct = 100 * _num(avail) / _num(total)
    # "No OOM kill seen" means something only where one would be seen: a kernel log in the bundle.
    if pct < LIMIT.enomem_available_pct or events_of(case, _OOM_KILLS) or not has_kernel_log(case):
        return None
    virtual = facts.get("ulimit.virtual")
    if virtual and isinstance(virtual.value, int):
        return None
    if any(f.name == "cgroup.memory_max_bytes" and f.value != "unlimited" for f in case.facts):
        return None
    return avail.ref, (f"{pct:.0f}% of host memory was available ({avail.ref.describe()}), the kernel log shows "
                       "no OOM kill and no other memory limit is measured: the host had memory to give")


def has_kernel_log(case: Case) -> bool:
    """The bundle holds a kernel log with lines in it (dmesg, journal, syslog), read as one."""
    return any("kernel" in a.parsers for a in case.artifacts)


# strerror(ENOMEM) as CPython ("[Errno 12]"), libfabric ("(-12) Cannot allocate memory"),
# "<call> failed: <strerror>" (NCCL, UCX, verbs wrappers) and PyTorch's CPU allocator
# (c10/core/impl/alloc_cpu.cpp: "Error code 12 (Cannot allocate memory)", audit 7 M13) print it.
_ENOMEM = re.compile(r"\[Errno 12\] Cannot allocate memory|\(-?12\)[: ]+Cannot allocate memory|failed(?: with error)?:? Cannot allocate memory"
                     r"|Error code 12 \(Cannot allocate memory\)")


_TEXT = attrgetter("text")


def enomem_events(case: Case) -> list[Event]:
    """ENOMEM lines, less those whose traceback passes through a call that never locks memory
    (fork: its ENOMEM is the commit charge of a copy of the process, signals.toml params)."""
    # One C-level search of every text first (NUL cannot be part of the phrase): most bundles print no ENOMEM.
    if "Cannot allocate memory" not in "\0".join(filter(None, map(_TEXT, case.events))):
        return []
    out = [e for e in case.events if "Cannot allocate memory" in (e.text or "") and _ENOMEM.search(e.text or "")]
    if not out:
        return out
    not_from = re.compile("|".join(SIGN.limits_enomem_in_locking_call.params.get("not_locking", ())) or r"(?!)")
    return [e for e in out if not any(not_from.search(f"{f.file or ''} {f.function or ''}")
                                      for f in getattr(traceback_of(case.stacks, e), "frames", ()))]


def enomem_with_memory_free(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """An ENOMEM with the host's memory plentiful: not host OOM, whatever limit refused (whether
    `ulimit -l` was captured says nothing about the host's memory; audit 6 M3)."""
    if not enomem_events(case):
        return {}
    free = memory_plentiful(case)
    return _against(COUNTER.enomem_with_memory_free, free[1], trace) if free else {}


def request_beyond_host(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """A refused allocation larger than the host's RAM and swap, with no OOM kill in the bundle: the
    request, not the host's memory running out (signals.toml app.request_beyond_host)."""
    from postmortem.classify.rules.app import request_beyond_host as beyond  # (the rule's own reading)

    found = beyond(case) if not events_of(case, _OOM_KILLS) else None
    if found is None:
        return {}
    e, asked, host, (total, _swap) = found
    reason = (f"{e.ref.describe()} asked for {asked / GIB:,.1f} GiB, more than the host's RAM and swap "
              f"({host / GIB:,.1f} GiB, {total.ref.describe()}): refused outright, not memory running out")
    return _against(COUNTER.request_beyond_host, reason, trace)


def thermal_unplaced(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """A GPU fell off the bus and the bundle shows a thermal slowdown it cannot place (no GPU
    named, or no time before the loss): NVIDIA lists a thermal issue among the causes of Xid 79,
    so the bus loss's own root stays open -- neither read as the thermal event's consequence
    (audit 8 H3) nor claimed as if the reading were not there."""
    from postmortem.classify.rules.hardware import thermal_before_loss  # rules import this module

    lost, hot, placed = thermal_before_loss(case)
    if not lost or not hot or placed:
        return {}
    reason = (f"a thermal slowdown is in the bundle ({hot[0].ref.describe()}: {' '.join(hot[0].text.split())[:80]}) "
              "but names no lost GPU or no time before the loss: whether the GPU overheated before it fell off "
              "the bus is not known (a thermal issue is among Xid 79's causes)")
    return _against(COUNTER.thermal_unplaced, reason, trace)
