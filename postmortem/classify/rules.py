"""Rules: small classes, each turning one kind of signal into Findings with evidence.

A rule never mutates shared state; it returns findings and appends lines to `trace`.
Knowledge (what a message means, what an Xid means) comes from postmortem/knowledge,
never from literals here.  Order does not matter: resolve.py decides root vs symptom.
"""
from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime
from typing import Iterable

from postmortem.classify.counter import effective_shm_size
from postmortem import signals
from postmortem.knowledge import Knowledge
from postmortem.model import Case, Category, Event, Finding, Ref, Stack

MAX_EVIDENCE = 8


def _span(events: list[Event]) -> tuple[int | None, datetime | None, datetime | None]:
    """First reading position, first and last absolute time of some events."""
    seqs = [e.seq for e in events]
    ats = [e.when.at for e in events if e.when and e.when.at]
    return (min(seqs) if seqs else None), (min(ats) if ats else None), (max(ats) if ats else None)


def _refs(events: Iterable[Event]) -> tuple[Ref, ...]:
    seen: dict[tuple, Ref] = {}
    for e in events:
        seen.setdefault((e.ref.path, e.ref.line, e.ref.offset), e.ref)
        if len(seen) >= MAX_EVIDENCE:
            break
    return tuple(seen.values())


def _repeat(weight: float, n: int) -> float:
    """Support from n lines saying the same thing: more lines add a little, not a lot."""
    return 1 - (1 - weight) * (0.85 ** max(0, min(n, 6) - 1))


def finding(k: Knowledge, cause: str, weight: float, rule: str, summary: str, events: list[Event],
            role: str = "root", discriminator: str = "", extra_refs: tuple[Ref, ...] = ()) -> Finding:
    seq, at, last = _span(events)
    category = Category(k.causes[cause].category) if cause in k.causes else Category.UNKNOWN
    return Finding(cause=cause, category=category, confidence=round(min(weight, 0.97), 3), rule=rule,
                   summary=summary, evidence=_refs(events) + extra_refs, first_seq=seq, first_at=at, last_at=last,
                   discriminator=discriminator, role=role)


class Rule:
    id = "rule"

    def findings(self, case: Case, k: Knowledge, trace: list[str]) -> list[Finding]:
        raise NotImplementedError


class KnownMessages(Rule):
    """A known message (knowledge/messages.toml) supports the cause it names.

    Lines of one pattern are one finding; repeats raise support a little."""

    id = "known-messages"

    def findings(self, case, k, trace):
        by_pattern: dict[str, list[Event]] = defaultdict(list)
        for e in case.events:
            if e.kind.startswith("msg."):
                by_pattern[e.kind[4:]].append(e)
        patterns = {m.id: m for m in k.messages}
        out = []
        for pid, events in by_pattern.items():
            m = patterns.get(pid)
            if m is None or m.cause in ("", "xid") or m.weight <= 0:
                continue
            w = min(_repeat(m.weight, len(events)), m.weight_cap)
            summary = f"{len(events)} line(s) matching '{m.id}' ({k.causes[m.cause].title})"
            trace.append(f"{self.id}: {m.id} x{len(events)} -> {m.cause} ({w:.2f}), first at {events[0].ref.describe()}")
            out.append(finding(k, m.cause, w, self.id, summary, events, m.role, discriminator=m.id))
        return out


class XidCatalog(Rule):
    """NVRM Xid lines, read through the Xid catalog (knowledge/xid.toml).

    The same Xid repeating on one GPU weighs toward hardware; an application-fault Xid
    (13, 31) spread over several GPUs is the workload's own kernel fault."""

    id = "xid-catalog"

    def findings(self, case, k, trace):
        xids: dict[int, list[Event]] = defaultdict(list)
        seen: set[tuple] = set()
        for e in case.events:
            if e.kind in ("kernel.xid", "msg.nvrm_xid"):
                key = (e.ref.path, e.ref.line)
                code = e.data.get("code")
                if key in seen or code is None:
                    continue
                seen.add(key)
                try:
                    xids[int(code)].append(e)
                except (TypeError, ValueError):
                    continue
        out = []
        for code, events in sorted(xids.items()):
            info = k.xids.get(code)
            gpus = {str(e.data.get("pci", "")).lower() for e in events}
            where = f"on {len(gpus)} GPU(s): {', '.join(sorted(gpus))}"
            if info is None:
                trace.append(f"{self.id}: Xid {code} is not in the catalog; {where}")
                out.append(finding(k, "gpu_hardware_other", 0.3, self.id, f"Xid {code} (not in the catalog) {where}",
                                   events, "root", discriminator=f"xid{code}"))
                continue
            label = f"Xid {code} {info.name}: {info.meaning} ({len(events)}x {where})"
            if info.role == "consequence" or not info.cause:
                trace.append(f"{self.id}: Xid {code} is a consequence/informational: {info.meaning}")
                out.append(finding(k, "unknown", 0.05, self.id, label, events, "symptom", discriminator=f"xid{code}"))
                continue
            if info.cause == "app_fault":
                if len(gpus) == 1 and len(events) >= 3:
                    trace.append(f"{self.id}: app-fault Xid {code} repeats on one GPU -> hardware suspicion")
                    out.append(finding(k, "gpu_hardware_other", 0.5, self.id, label, events, "root", f"xid{code}"))
                else:
                    trace.append(f"{self.id}: app-fault Xid {code} {where}: the workload's own fault, not hardware")
                    out.append(finding(k, "unknown", 0.1, self.id, label, events, "symptom", f"xid{code}"))
                continue
            w = info.weight if info.role == "root" else info.weight * 0.5
            if len(gpus) == 1 and len(events) > 1:
                w = _repeat(w, len(events))
            trace.append(f"{self.id}: Xid {code} -> {info.cause} ({w:.2f}) {where}")
            out.append(finding(k, info.cause, w, self.id, label, events,
                               "root" if info.role == "root" else "symptom", discriminator=f"xid{code}"))
        return out


NCCL_FRAME = re.compile(r"nccl|libnccl", re.I)
SHM_FRAME = re.compile(r"shared_memory|/dev/shm|\bpsm_|_share_(?:fd|filename)_|shm_open|posix_fallocate|MapAllocator|libshm")
SMALL_SHM_BYTES = 256 << 20


def died_of(e: Event, name: str) -> bool:
    """Does this event say a process died of signal `name` (e.g. SIGBUS)?  Parsers and
    message patterns spell it as signal/signame (a name or strsignal text), signo (a
    number) or exitcode (minus the number)."""
    d = e.data
    if not d.keys() & _SIGNAL_KEYS:  # most events say nothing about a death: answer fast
        return False
    return (any(signals.name_of(d.get(key)) == name for key in ("signal", "signame", "signo"))
            or signals.of_exitcode(d.get("exitcode")) == name)


_SIGNAL_KEYS = frozenset({"signal", "signame", "signo", "exitcode"})


def _is_sigbus(e: Event) -> bool:
    return died_of(e, "SIGBUS")


def _stack_mentions(stacks: Iterable[Stack], pattern: re.Pattern[str]) -> list[Stack]:
    return [s for s in stacks if any(pattern.search(f.function or "") or pattern.search(f.module or "")
                                     or pattern.search(f.file or "") for f in s.frames)]


class SigbusContext(Rule):
    """A SIGBUS, read by where it happened.

    * the core's fault address inside a /dev/shm file: shared memory exhausted, proven;
    * BUS_MCEERR_*: a hardware memory error;
    * inside NCCL code (NCCL maps its intra-node buffers from /dev/shm; 2.12-2.18 size them
      sparse, so a full tmpfs surfaces as SIGBUS on first touch): shm exhausted, likely;
    * otherwise the commonest cause in training jobs is still /dev/shm, but weakly."""

    id = "sigbus-context"

    def findings(self, case, k, trace):
        buses = [e for e in case.events if _is_sigbus(e)]
        if not buses:
            return []
        core_hits = [e for e in case.events if e.kind == "core.signal" and _is_sigbus(e)]
        for e in core_hits:
            code = str(e.data.get("si_code_name", ""))
            mapping = str(e.data.get("mapping", ""))
            if code.startswith("BUS_MCEERR"):
                trace.append(f"{self.id}: core SIGBUS {code}: hardware memory error")
                return [finding(k, "host_memory_error", 0.9, self.id, f"SIGBUS {code} in the core: the kernel reports poisoned memory", [e], "root", "SIGBUS")]
            if mapping.startswith("/dev/shm/"):
                trace.append(f"{self.id}: core SIGBUS inside {mapping}: shm exhausted")
                return [finding(k, "shm_exhausted", 0.95, self.id,
                                f"SIGBUS at an address inside {mapping} (offset {e.data.get('mapping_offset')}): the tmpfs had no page to give",
                                [e], "root", "SIGBUS")]
        # Softer signs, each with its own strength; the strongest one sets the support.
        signs: list[tuple[float, str, tuple[Ref, ...]]] = []
        nccl_stacks = _stack_mentions(case.stacks, NCCL_FRAME)
        if nccl_stacks:
            signs.append((0.62, "the SIGBUS hit inside NCCL code: NCCL's shared-memory segments live in /dev/shm, "
                                "and an undersized /dev/shm surfaces as SIGBUS on first touch", (nccl_stacks[0].ref,)))
        shm_stacks = _stack_mentions(case.stacks, SHM_FRAME)
        if shm_stacks:
            signs.append((0.7, "the crashing stack is writing shared memory", (shm_stacks[0].ref,)))
        small = [(f, v) for f, v in effective_shm_size(case) if v is not None and v <= SMALL_SHM_BYTES]
        if small:
            f, v = small[0]
            signs.append((0.78, f"/dev/shm is only {v / (1 << 20):.0f} MiB ({f.ref.describe()}), "
                                "the container default that DataLoader workers and NCCL overflow", (f.ref,)))
        if not signs:
            trace.append(f"{self.id}: SIGBUS without location; weak shm suspicion")
            return [finding(k, "shm_exhausted", 0.4, self.id,
                            "a process died of SIGBUS; in training jobs that is most often an exhausted /dev/shm "
                            "(no location known to confirm it)", buses, "root", "SIGBUS")]
        signs.sort(key=lambda s: -s[0])
        w = 1 - (1 - signs[0][0]) * (0.8 if len(signs) > 1 else 1.0)
        refs = tuple(r for _, _, rs in signs for r in rs)
        trace.append(f"{self.id}: SIGBUS with {len(signs)} shm sign(s): " + "; ".join(t for _, t, _ in signs))
        return [finding(k, "shm_exhausted", w, self.id, "SIGBUS: " + "; ".join(t for _, t, _ in signs),
                        buses, "root", "SIGBUS", extra_refs=refs)]


class NcclVersionMismatch(Rule):
    """Different NCCL versions in one job (one banner per node or log) cannot talk to each other."""

    id = "nccl-version-mismatch"

    def findings(self, case, k, trace):
        versions: dict[str, list[Event]] = defaultdict(list)
        for e in case.events:
            v = e.data.get("version") if e.kind in ("nccl.version", "msg.nccl_version_banner", "msg.nccl_error_in") else None
            if isinstance(v, str) and re.fullmatch(r"\d+\.\d+\.\d+", v.split("+")[0]):
                versions[v.split("+")[0]].append(e)
        if len(versions) < 2:
            return []
        listing = ", ".join(f"{v} ({versions[v][0].ref.describe()})" for v in sorted(versions))
        trace.append(f"{self.id}: versions {listing}")
        events = [evs[0] for evs in versions.values()]
        return [finding(k, "nccl_version_mismatch", 0.85, self.id, f"different NCCL versions in one job: {listing}",
                        events, "root", "versions")]


COLLECTIVE_FRAME = re.compile(r"barrier|all_?reduce|all_?gather|broadcast|reduce_scatter|all_to_all|alltoall|"
                              r"\bwait\b|monitored_barrier|synchronize", re.I)
TIMEOUT_KINDS = ("msg.watchdog_timeout", "msg.gloo_timeout", "msg.nccl_uniqueid_store_timeout")


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
        timeouts = [e for e in case.events if e.kind in TIMEOUT_KINDS]
        if not timeouts:
            return []
        timed_out = {e.rank for e in timeouts if e.rank is not None}
        # A rank that others waited for by name (the one to publish the ncclUniqueId) is silent too.
        awaited = {int(e.data["awaited"]) for e in timeouts if str(e.data.get("awaited", "")).isdigit()} - timed_out
        world = self._world(case, timed_out)
        silent = sorted((world - timed_out) | awaited) if timed_out else []
        world_known_apart = bool(awaited) or (bool(world - timed_out) and (
            len(timed_out) >= 2 or self._world_size(case) or self._launcher_ranks(case)))
        seqs = [int(e.data["seq"]) for e in timeouts if str(e.data.get("seq", "")).isdigit()]
        early = bool(seqs) and max(seqs) <= 10
        progress = [e for e in case.events if e.kind == "msg.progress_bar"]
        busy, waiting = self._dumps(case)
        if silent and world_known_apart:
            w = 0.5 + (0.12 if early else 0) + (0.1 if progress else 0) + (0.12 if busy and waiting else 0)
            why = []
            if progress:
                why.append(f"the log shows '{progress[0].data.get('task', '').strip()}' still running")
            if busy and waiting:
                why.append(f"a stack dump shows a rank in {busy[0].frames[0].function}() while another waits in "
                           f"{waiting[0].frames[0].function}()")
            op = timeouts[0].data.get("op", "a collective")
            summary = (f"rank(s) {sorted(timed_out)} timed out in {op}"
                       f"{f' (SeqNum {min(seqs)})' if seqs else ''} while rank(s) {silent} never reported a timeout"
                       + (f"; {'; '.join(why)}" if why else ""))
            trace.append(f"{self.id}: straggler: silent {silent}, early={early}, progress={bool(progress)}, dumps={bool(busy and waiting)}")
            extra = tuple(s.ref for s in busy[:1] + waiting[:1])
            return [finding(k, "straggler_timeout", w, self.id, summary, timeouts + progress[:1], "root", "timeout",
                            extra_refs=extra)]
        trace.append(f"{self.id}: no rank is known to be missing; the collective itself was stuck")
        return [finding(k, "nccl_timeout", 0.4, self.id,
                        f"{len(timeouts)} collective timeout(s) across ranks {sorted(timed_out) or '?'}; no other fault found",
                        timeouts, "root", "timeout")]

    @staticmethod
    def _world_size(case: Case) -> int | None:
        sizes = [int(e.data["nranks"]) for e in case.events
                 if e.kind == "nccl.init" and str(e.data.get("nranks", "")).isdigit()]
        return max(sizes) if sizes else None

    @staticmethod
    def _launcher_ranks(case: Case) -> set[int]:
        return {e.rank for e in case.events if e.kind == "launcher.child_failed" and e.rank is not None}

    def _world(self, case: Case, timed_out: set[int]) -> set[int]:
        size = self._world_size(case)
        if size:
            return set(range(size))
        ranks = self._launcher_ranks(case) | timed_out
        return set(range(max(ranks) + 1)) if ranks else set()

    @staticmethod
    def _dumps(case: Case) -> tuple[list[Stack], list[Stack]]:
        """Thread dumps (faulthandler) split into ranks busy in ordinary code and ranks
        waiting in a collective."""
        dumps = [s for s in case.stacks if s.origin == "faulthandler" and s.frames]
        waiting = [s for s in dumps if any(COLLECTIVE_FRAME.search(f.function or "") for f in s.frames)]
        busy = [s for s in dumps if s not in waiting]
        return busy, waiting


class SilentCollectiveHang(Rule):
    """nccl-tests that set up its GPUs, printed no result and no error: it hung.

    With all GPUs in one process the traffic is intra-node peer-to-peer; GPUs under
    different PCIe root complexes (bus ids on both sides of 0x80) are where IOMMU/ACS
    redirection breaks P2P."""

    id = "silent-collective-hang"

    def findings(self, case, k, trace):
        header = [e for e in case.events if e.kind == "msg.nccl_tests_header"]
        devices = [e for e in case.events if e.kind == "msg.nccl_tests_device"]
        if not header or not devices:
            return []
        if any(e.kind == "msg.nccl_tests_result" for e in case.events):
            return []
        if any(e.severity.value in ("error", "fatal") and not e.kind.startswith(("msg.libibverbs", "nccl.warn"))
               for e in case.events):
            return []
        hosts = {e.data.get("node") for e in devices}
        buses = sorted({int(str(e.data.get("bus", "0")), 16) for e in devices})
        split_roots = any(b < 0x80 for b in buses) and any(b >= 0x80 for b in buses)
        if len(hosts) != 1:
            return []
        w = 0.5 if split_roots else 0.4
        why = " across two PCIe root complexes" if split_roots else ""
        trace.append(f"{self.id}: nccl-tests on {len(devices)} GPUs of one host printed no result and no error{why}")
        return [finding(k, "nccl_p2p", w, self.id,
                        f"nccl-tests initialised {len(devices)} GPUs of one node{why} and then produced no result and no error: a P2P hang",
                        header + devices, "root", "hang")]


HIGH_HOST_MEMORY_PCT = 80.0


class HighHostMemoryThenDeath(Rule):
    """The job's own last host-memory reading was high (DeepSpeed's see_memory_usage and
    the like), and then a process was killed or the launcher tore the job down: the OOM
    killer is the likeliest hand even without a kernel log in the bundle."""

    id = "high-host-memory-then-death"

    def findings(self, case, k, trace):
        readings = [e for e in case.events if e.kind == "msg.host_memory_report"]
        high = [e for e in readings if _num(e.data.get("pct")) >= HIGH_HOST_MEMORY_PCT]
        if not high:
            return []
        last = max(high, key=lambda e: e.seq)
        deaths = [e for e in case.events if e.seq > last.seq and (
            e.kind.startswith("launcher.") or died_of(e, "SIGKILL"))]
        if not deaths:
            return []
        pct = _num(last.data.get("pct"))
        trace.append(f"{self.id}: host memory at {pct:.0f}% ({last.ref.describe()}), then {deaths[0].ref.describe()}")
        return [finding(k, "host_oom", 0.5 if pct < 90 else 0.6, self.id,
                        f"host memory was {pct:.0f}% used ({last.ref.describe()}) just before a process of the job "
                        f"was killed ({deaths[0].ref.describe()}); dmesg would show the OOM killer",
                        [last, deaths[0]], "root", "memory")]


class QuietPcieTopology(Rule):
    """No error anywhere, and the GPUs talk peer-to-peer over PCIe (`nvidia-smi topo -m`
    shows PIX/PXB/PHB/NODE/SYS between GPUs, no NVLink): the classic silent hang is P2P
    traffic broken by PCIe ACS or the IOMMU.  Weak on purpose: any error line outweighs it."""

    id = "quiet-pcie-topology"
    PCIE = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})

    def findings(self, case, k, trace):
        links = [f for f in case.facts if f.name == "gpu.topo_links" and isinstance(f.value, dict)]
        if not links or any(e.severity.value in ("error", "fatal") for e in case.events):
            return []
        kinds = {v for f in links for pair, v in f.value.items() if pair.startswith("GPU") and "-GPU" in pair}
        if not kinds or not kinds <= self.PCIE:
            return []
        crosses = bool(kinds & {"NODE", "SYS"})
        trace.append(f"{self.id}: no error lines; GPU pairs linked by {sorted(kinds)} only")
        return [finding(k, "nccl_p2p", 0.4 if crosses else 0.36, self.id,
                        f"no error anywhere and the GPUs reach each other only over PCIe ({', '.join(sorted(kinds))}"
                        f"{', across host bridges' if crosses else ''}): a silent hang of P2P traffic (ACS/IOMMU) is the "
                        "likeliest reading; confirm with NCCL_P2P_DISABLE=1",
                        [], "root", "topology", extra_refs=tuple(f.ref for f in links[:2]))]


class KilledWithoutReason(Rule):
    """A rank killed by SIGKILL (exit code -9) with no OOM line in the bundle: the OOM
    killer is the usual sender, so say so — weakly, and ask for dmesg."""

    id = "sigkill-exit"

    def findings(self, case, k, trace):
        kills = [e for e in case.events if died_of(e, "SIGKILL")
                 and not e.kind.startswith("msg.dataloader")]
        if not kills:
            return []
        trace.append(f"{self.id}: {len(kills)} SIGKILL exit(s)")
        return [finding(k, "host_oom", 0.35, self.id, "a rank was killed with SIGKILL (exit code -9), the OOM killer's signal",
                        kills, "root", "SIGKILL")]


# GPU health counters from `nvidia-smi -q` / the nvidia-smi table: name pattern -> (cause, weight, why).
GPU_HEALTH: tuple[tuple[re.Pattern[str], str, float, str], ...] = (
    (re.compile(r"gpu\.\d+\.ecc_uncorrected$"), "gpu_memory_ecc", 0.7, "uncorrectable ECC errors counted"),
    (re.compile(r"gpu\.\d+\.remapped_rows_failure$"), "gpu_memory_ecc", 0.8, "row remapping failed"),
    (re.compile(r"gpu\.\d+\.remapped_rows_uncorrectable$"), "gpu_memory_ecc", 0.55, "rows remapped after uncorrectable errors"),
    (re.compile(r"gpu\.\d+\.smi_error$"), "gpu_hardware_other", 0.55, "nvidia-smi cannot read the GPU"),
)
HOT_GPU_C = 90


class GpuHealth(Rule):
    """What nvidia-smi measured: uncorrectable ECC counts, failed row remapping, a GPU
    nvidia-smi can no longer read, temperatures at the throttle point."""

    id = "gpu-health"

    def findings(self, case, k, trace):
        out = []
        for pattern, cause, weight, why in GPU_HEALTH:
            hits = [f for f in case.facts if pattern.match(f.name) and _bad(f.value)]
            if hits:
                where = ", ".join(f"{f.name}={f.value} ({f.ref.describe()})" for f in hits[:4])
                trace.append(f"{self.id}: {why}: {where}")
                out.append(finding(k, cause, weight, self.id, f"nvidia-smi: {why}: {where}", [], "root",
                                   "nvidia-smi", extra_refs=tuple(f.ref for f in hits[:8])))
        hot = [f for f in case.facts if re.match(r"gpu\.\d+\.temp_c$", f.name) and _num(f.value) >= HOT_GPU_C]
        if hot:
            where = ", ".join(f"{f.name}={f.value} C ({f.ref.describe()})" for f in hot[:4])
            trace.append(f"{self.id}: GPU at {HOT_GPU_C} C or more: {where}")
            out.append(finding(k, "gpu_thermal_power", 0.4, self.id, f"GPU temperature at the throttle point: {where}",
                               [], "root", "thermal", extra_refs=tuple(f.ref for f in hot[:8])))
        return out


def _num(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("-inf")


def _bad(value) -> bool:
    """A counter above zero, a True flag, or an error text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    return bool(value) and str(value).strip().lower() not in ("0", "no", "none", "n/a", "false")


RULES: tuple[Rule, ...] = (
    KnownMessages(),
    XidCatalog(),
    SigbusContext(),
    NcclVersionMismatch(),
    CollectiveTimeout(),
    SilentCollectiveHang(),
    KilledWithoutReason(),
    GpuHealth(),
    QuietPcieTopology(),
    HighHostMemoryThenDeath(),
)
