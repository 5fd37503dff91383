"""Rules that read the knowledge files: known messages and the Xid catalog."""
from __future__ import annotations

import re
from collections import defaultdict

from postmortem.classify.index import kinds_in
from postmortem.classify.rules.base import Rule, _repeat, connection_failure_kinds, events_of, finding, sign_finding
from postmortem.classify.rules.catalog import _FAILED, _other_side, _readings
from postmortem.classify.rules.config import TIMEOUT_KINDS
from postmortem.knowledge.registry import KIND, LIMIT, SIGN
from postmortem.model import Event, Severity

_PATTERN_KINDS_PREFIX = "msg."  # the kinds message patterns emit: msg.<id> (knowledge/messages.toml)
_NONFATAL = re.compile(r"\bNon-?fatal\b", re.I)

class KnownMessages(Rule):
    """A known message (knowledge/messages.toml) supports the cause it names.

    Lines of one pattern are one finding; repeats raise support a little."""

    id = "known-messages"

    def findings(self, case, k, trace):
        by_pattern: dict[str, list[Event]] = {kind[len(_PATTERN_KINDS_PREFIX):]: events_of(case, kind)
                                              for kind in kinds_in(case) if kind.startswith(_PATTERN_KINDS_PREFIX)}
        patterns = {m.id: m for m in k.messages}
        # one producer per line: an Xid line is the Xid catalog's (xid-catalog reads it); a message
        # pattern matching the same line ("GPU has fallen off the bus" in an Xid 79) would read it twice
        by_catalog = {(e.ref.path, e.ref.line) for e in events_of(case, KIND.kernel_xid)}
        out = []
        for pid, events in by_pattern.items():
            m = patterns.get(pid)
            if m is not None and m.cause == "" and m.role == "symptom":
                out.append(_fallout(k, self.id, m, events, trace))
                continue
            if m is None or m.cause in ("", "xid") or m.weight <= 0:
                continue
            events = [e for e in events if (e.ref.path, e.ref.line) not in by_catalog]
            if not events:
                trace.append(f"{self.id}: {m.id}: every line is an Xid line the Xid catalog reads (audit 6 L7)")
                continue
            w = min(_repeat(m.weight, len(events)), m.weight_cap)
            # What the line itself said (the headline adds the cause's title; never the pattern id).
            summary = " ".join(events[0].text.split())[:200] + (f" (×{len(events)})" if len(events) > 1 else "")
            strength = m.strength
            if strength == "strong" and _far_end_silent(case, k, m.id, events):
                strength, w = "weak", min(w, _readings()["strength"]["subsystem"]["weight"])
                summary += ("; no other process of the job reports its own side of the failure: a peer host that "
                            "died (power loss, panic, hard lockup) leaves this same error -- collect its kernel log and BMC event log")
                trace.append(f"{self.id}: {m.id}: weak: the far end's kernel stopped answering, and nothing shows the far end "
                             "alive after it (its own socket error or timeout): a dead peer host prints the same (audit 10 H1)")
            trace.append(f"{self.id}: {m.id} x{len(events)} -> {m.cause} ({w:.2f}), first at {events[0].ref.describe()}")
            out.append(finding(k, m.cause, w, self.id, summary, events, m.role, discriminator=m.id,
                               strength=strength, signal=f"{_PATTERN_KINDS_PREFIX}{m.id}"))
        return out


def _fallout(k, rule: str, m, events: list[Event], trace: list[str]):
    """A line that is fallout by nature with no cause of its own (a peer's orderly close: its
    process ended first): listed among the verdict's symptoms, no support for any cause."""
    trace.append(f"{rule}: {m.id} x{len(events)}: fallout, no cause of its own, first at {events[0].ref.describe()}")
    summary = " ".join(events[0].text.split())[:200] + (f" (×{len(events)})" if len(events) > 1 else "")
    return finding(k, "", 0.0, rule, summary, events, "symptom", discriminator=m.id,
                   signal=f"{_PATTERN_KINDS_PREFIX}{m.id}")


def _far_end_silent(case, k, pid: str, events: list[Event]) -> bool:
    """Every line is an errno that the path stopping and the peer host dying both produce
    (catalogs/readings.toml [far_end_silent]), and no other process of the job reports its own
    side of the failure: a transport error or timeout of a process other than the one that
    printed the line, naming no peer that line names (a co-survivor naming the same dead peer
    is no sign of it alive)."""
    spec = _readings()["far_end_silent"]
    if pid not in spec["messages"] or not all(e.data.get("error") in spec["errors"] for e in events):
        return False
    comms = connection_failure_kinds(k) | set(TIMEOUT_KINDS)
    reports = [r for r in events_of(case, comms) if r.severity in _FAILED]
    return not any(_other_side(r, e) for e in events for r in reports)


class XidCatalog(Rule):
    """NVRM Xid lines, read through the Xid catalog (knowledge/xid.toml).

    The same Xid repeating on one GPU weighs toward hardware; an application-fault Xid
    (13, 31) spread over several GPUs is the workload's own kernel fault."""

    id = "xid-catalog"

    def findings(self, case, k, trace):
        xids: dict[int, list[Event]] = defaultdict(list)
        seen: set[tuple] = set()
        for e in events_of(case, KIND.kernel_xid):
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
                out.append(sign_finding(k, SIGN.xid_not_in_catalog, self.id, f"Xid {code} (not in the catalog) {where}",
                                        events, discriminator=f"xid{code}"))
                continue
            label = f"Xid {code} {info.name}: {info.meaning} ({len(events)}x {where})"
            if info.role == "consequence" or not info.cause:
                trace.append(f"{self.id}: Xid {code} is a consequence/informational: {info.meaning}")
                out.append(finding(k, "unknown", LIMIT.consequence_xid_weight, self.id, label, events, "symptom",
                                   discriminator=f"xid{code}"))
                continue
            if info.cause == "app_fault":
                pids = {e.pid for e in events if e.pid}
                programs = {e.data.get("comm") for e in events if e.data.get("comm")}
                if len(gpus) == 1 and len(pids) >= LIMIT.app_fault_processes and len(programs) >= 2:
                    trace.append(f"{self.id}: app-fault Xid {code} on one GPU from {len(programs)} different programs -> the GPU")
                    out.append(sign_finding(k, SIGN.xid_app_fault_repeats_on_one_gpu, self.id,
                                            f"{label} from {len(programs)} different programs "
                                            f"({', '.join(sorted(programs))})", events, f"xid{code}"))
                elif len(gpus) == 1 and len(pids) >= LIMIT.app_fault_processes:
                    # One program re-run (or names not printed): its own pointer bug repeats just the same.
                    trace.append(f"{self.id}: app-fault Xid {code} on one GPU from {len(pids)} runs of "
                                 f"{'one program' if programs else 'unnamed processes'} -> leans to the GPU")
                    out.append(sign_finding(k, SIGN.xid_app_fault_repeats_same_program, self.id,
                                            f"{label} from {len(pids)} separate processes", events, f"xid{code}"))
                elif len(pids) == 1:
                    trace.append(f"{self.id}: app-fault Xid {code} from one process (pid {next(iter(pids))}): its own bad access")
                    out.append(sign_finding(k, SIGN.xid_app_fault_one_process, self.id,
                                            f"{label} from one process (pid {next(iter(pids))})", events, f"xid{code}"))
                else:
                    trace.append(f"{self.id}: app-fault Xid {code} {where}: the workload's own fault, not hardware")
                    out.append(finding(k, "unknown", LIMIT.app_fault_xid_weight, self.id, label, events, "symptom", f"xid{code}"))
                continue
            w = info.weight if info.role == "root" else info.weight * LIMIT.symptom_xid_factor
            if len(gpus) == 1 and len(events) > 1:
                w = _repeat(w, len(events))
            strength = _xid_strength(info)
            if strength == "strong" and all(_NONFATAL.search(e.text or "") for e in events):
                # the driver's own word: NVLink5 Xids (144-150) print "Nonfatal" or "Fatal" per error
                # (leptonai/gpud#1160/#1174); a Nonfatal one was corrected or is informational (audit 6 H10)
                strength = "weak"
                w = min(w, SIGN.xid_not_in_catalog.weight)
                trace.append(f"{self.id}: Xid {code}: the driver calls every one of these lines Nonfatal")
            trace.append(f"{self.id}: Xid {code} -> {info.cause} ({w:.2f}) {where}")
            out.append(finding(k, info.cause, w, self.id, label, events,
                               "root" if info.role == "root" else "symptom", discriminator=f"xid{code}",
                               strength=strength))
        return out


def _xid_strength(info) -> str:
    """An Xid is the driver's own report of the fault it detected.  Strong only where xid.toml
    marks the entry so from NVIDIA's catalog row (a description naming one failed unit and an immediate action other than IGNORE, e.g. 79
    fell off the bus, 48 double-bit ECC, 119 GSP timeout, and a resolution that does not send
    one to the application or the software stack); weak for generic descriptions (46 'GPU stopped
    processing': NVIDIA lists driver errors and system memory corruption among its causes),
    the readings tools/catalogs/gen_nvidia.py derived from a mnemonic, and every consequence or
    context Xid (audit 5 L7: strength is not derived from a weight)."""
    return "strong" if info.role == "root" and info.strength == "strong" else "weak"

