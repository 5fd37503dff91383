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
            w = _repeat(m.weight, len(events))
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


SIGBUS_NAMES = re.compile(r"\b(?:SIGBUS|Bus error)\b")
SIGKILL_NAMES = re.compile(r"\b(?:SIGKILL|Killed)\b")
NCCL_FRAME = re.compile(r"nccl|libnccl", re.I)


def _is_signal(e: Event, signo: int, names: re.Pattern[str]) -> bool:
    """Does this event say a process died of signal `signo`?  Parsers and message
    patterns use the keys signal/signame (a name), signo (a number), exitcode (-signo)."""
    d = e.data
    for key in ("signal", "signame"):
        if isinstance(d.get(key), str) and names.search(d[key]):
            return True
    return str(d.get("signo", "")) == str(signo) or str(d.get("exitcode", "")) == str(-signo)


def _is_sigbus(e: Event) -> bool:
    return _is_signal(e, 7, SIGBUS_NAMES)


def _stack_mentions(stacks: Iterable[Stack], pattern: re.Pattern[str]) -> list[Stack]:
    return [s for s in stacks if any(pattern.search(f.function or "") or pattern.search(f.module or "")
                                     for f in s.frames)]


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
        nccl_stacks = _stack_mentions(case.stacks, NCCL_FRAME)
        if nccl_stacks:
            trace.append(f"{self.id}: SIGBUS with NCCL frames on the stack ({nccl_stacks[0].ref.describe()})")
            return [finding(k, "shm_exhausted", 0.62, self.id,
                            "SIGBUS inside NCCL code: NCCL's shared-memory segments live in /dev/shm, and an undersized /dev/shm surfaces as SIGBUS on first touch",
                            buses, "root", "SIGBUS", extra_refs=(nccl_stacks[0].ref,))]
        trace.append(f"{self.id}: SIGBUS without location; weak shm suspicion")
        return [finding(k, "shm_exhausted", 0.4, self.id,
                        "a process died of SIGBUS; in training jobs that is most often an exhausted /dev/shm (no location known to confirm it)",
                        buses, "root", "SIGBUS")]


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


class CollectiveTimeout(Rule):
    """Watchdog timeouts: whose were they?

    When some ranks time out and others never report, the silent ranks were busy
    elsewhere (a straggler: preprocessing, a long save); an early sequence number (the
    first collectives of the job) and a progress bar make that reading stronger.  When
    every rank we know of timed out, the collective itself was stuck."""

    id = "collective-timeout"

    def findings(self, case, k, trace):
        timeouts = [e for e in case.events if e.kind == "msg.watchdog_timeout"]
        if not timeouts:
            return []
        ranks = {e.rank for e in timeouts if e.rank is not None}
        world = self._world_size(case)
        top = (world - 1) if world else (max(ranks) if ranks else -1)
        silent = sorted(set(range(top + 1)) - ranks) if ranks else []
        seqs = [int(e.data["seq"]) for e in timeouts if str(e.data.get("seq", "")).isdigit()]
        early = bool(seqs) and max(seqs) <= 10
        progress = [e for e in case.events if e.kind == "msg.progress_bar"]
        if silent and len(ranks) >= 2:
            w = 0.5 + (0.12 if early else 0) + (0.1 if progress else 0)
            what = f"; the log shows '{progress[0].data.get('task', '').strip()}' still running" if progress else ""
            summary = (f"ranks {sorted(ranks)} timed out in {timeouts[0].data.get('op', 'a collective')} "
                       f"(SeqNum {min(seqs) if seqs else '?'}) while rank(s) {silent} never reported{what}")
            trace.append(f"{self.id}: straggler: silent ranks {silent}, early={early}, progress={bool(progress)}")
            return [finding(k, "straggler_timeout", w, self.id, summary, timeouts + progress[:1], "root", "timeout")]
        trace.append(f"{self.id}: no rank is known to be missing; the collective itself was stuck")
        return [finding(k, "nccl_timeout", 0.4, self.id,
                        f"{len(timeouts)} watchdog timeout(s) across ranks {sorted(ranks) or '?'}; no other fault found",
                        timeouts, "root", "timeout")]

    @staticmethod
    def _world_size(case: Case) -> int | None:
        sizes = [int(e.data["nranks"]) for e in case.events
                 if e.kind == "nccl.init" and str(e.data.get("nranks", "")).isdigit()]
        return max(sizes) if sizes else None


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


class KilledWithoutReason(Rule):
    """A rank killed by SIGKILL (exit code -9) with no OOM line in the bundle: the OOM
    killer is the usual sender, so say so — weakly, and ask for dmesg."""

    id = "sigkill-exit"

    def findings(self, case, k, trace):
        kills = [e for e in case.events if _is_signal(e, 9, SIGKILL_NAMES)
                 and not e.kind.startswith("msg.dataloader")]
        if not kills:
            return []
        trace.append(f"{self.id}: {len(kills)} SIGKILL exit(s)")
        return [finding(k, "host_oom", 0.35, self.id, "a rank was killed with SIGKILL (exit code -9), the OOM killer's signal",
                        kills, "root", "SIGKILL")]


RULES: tuple[Rule, ...] = (
    KnownMessages(),
    XidCatalog(),
    SigbusContext(),
    NcclVersionMismatch(),
    CollectiveTimeout(),
    SilentCollectiveHang(),
    KilledWithoutReason(),
)
