"""The verdict engine: rules -> findings -> one verdict with root, symptoms and confidence.

1. Every rule in rules.RULES runs in isolation (a failing rule becomes a trace line).
2. Findings are grouped by cause; support for a cause is the noisy-OR of its findings.
3. Measured state can speak against a cause (counter-evidence lowers its support).
4. A well-supported cause absorbs the causes it `explains` (causes.toml: NCCL errors
   after a GPU OOM, an AER before Xid 79); among the rest the root is the earliest
   well-supported root-capable cause (without a common clock: the one whose category
   explains the others).  Every other finding is a symptom (later, or a known
   consequence) or an alternative.
5. Below MIN_CONFIDENCE nothing is claimed: the verdict is `unknown` and names what to collect.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from itertools import compress
from operator import attrgetter, methodcaller, not_

from postmortem.classify.counter_evidence import (before_the_job, crashed_peer, death_mismatch, kernel_log_without_oom_kill,
                                                  measured_state_against, oom_kill_hit_the_job, unrelated_victims)
from postmortem.classify import launcher_root
from postmortem.classify.rules import RULES
from postmortem.classify.rules.config import TIMEOUT_KINDS
from postmortem.classify.index import events_of
from postmortem.classify.signature import signature_of
from postmortem.knowledge import Knowledge
from postmortem.knowledge.registry import COUNTER, KIND, LIMIT, deaths, registry
from postmortem.model import Basis, Case, Category, ClockKind, Finding, Verdict
from postmortem.timeline import ZONE_ASSUMED

_DATA, _CONTEXT = attrgetter("data"), methodcaller("get", "context")
MIN_CONFIDENCE = LIMIT.min_confidence
CLOSE_RACE = LIMIT.close_race   # a cause within this fraction of the best may still be the root if it came first


def run_rules(case: Case, k: Knowledge, trace: list[str]) -> list[Finding]:
    found: list[Finding] = []
    for rule in RULES:
        try:
            found.extend(rule.findings(case, k, trace))
        except Exception as exc:  # noqa: BLE001 - a broken rule never breaks the verdict
            trace.append(f"{rule.id}: rule failed: {type(exc).__name__}: {exc}")
    return found


def _support(findings: list[Finding]) -> float:
    """The noisy-OR of the findings' confidences; findings that read one failure (signals.toml
    [failure]) add as one, the most confident of them."""
    failures = registry().failures
    best: dict[object, float] = {}
    for i, f in enumerate(findings):
        key = failures.get(f.signal or "") or i
        best[key] = max(best.get(key, 0.0), f.confidence)
    miss = 1.0
    for confidence in best.values():
        miss *= 1 - confidence
    return 1 - miss


def job_only(case: Case, trace: list[str]) -> Case:
    """The case without its context: kernel-log lines the timeline marked as outside the
    job's window or about another process (job.py) never become a root or a symptom."""
    kept = tuple(compress(case.events, map(not_, map(_CONTEXT, map(_DATA, case.events)))))
    if len(kept) == len(case.events):
        return case
    trace.append(f"context: {len(case.events) - len(kept)} kernel-log event(s) outside the job "
                 "(before or after its window, or other processes) are not evidence")
    return dataclasses.replace(case, events=kept)


def classify(case: Case, k: Knowledge) -> Verdict:
    """The verdict, with the launcher's own root-cause claim weighed beside it (launcher_root.py)."""
    return launcher_root.weigh(_decide(case, k), case)


def _decide(case: Case, k: Knowledge) -> Verdict:
    trace: list[str] = []
    whole = case
    case = job_only(case, trace)
    findings = run_rules(case, k, trace)
    by_cause: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        if f.cause in k.causes and f.cause != "unknown":
            by_cause[f.cause].append(f)
    counters = _counters(findings, case, trace, whole)
    scores = _scores(by_cause, counters, trace)
    explained = _explained(scores, k, trace, by_cause, case)
    contenders = {c: v for c, v in scores.items() if c not in explained}
    # A rival lowers the root's confidence only when something points at it as a root: a
    # cause only its symptoms suggest (a timeout's "the collective was stuck") is no rival.
    rivals = {c: v for c, v in contenders.items() if any(f.role == "root" for f in by_cause[c])}
    # Only a cause something points at as a root can be the root: symptoms alone (timeouts,
    # teardown lines) say that something failed, not what.
    root_cause = _pick_root(by_cause, rivals, k, trace, case)
    if root_cause is None:
        return _unknown(case, k, findings, scores, trace)
    if scores[root_cause] < MIN_CONFIDENCE:
        # one weak sign weighs less than the threshold (catalogs/readings.toml): say where it leans
        trace.append(f"resolve: {root_cause} ({scores[root_cause]:.2f}) is below {MIN_CONFIDENCE:.2f}")
        return _unknown(case, k, findings, scores, trace, leaning=root_cause)
    tentative = not _claimable(by_cause[root_cause], trace)
    if tentative and not LIMIT.weak_sign_alone_claims:
        return _unknown(case, k, findings, scores, trace, leaning=root_cause)
    if _confidence(root_cause, rivals | {root_cause: scores[root_cause]}, k) < MIN_CONFIDENCE:
        trace.append(f"resolve: {root_cause}'s confidence after its rivals is below {MIN_CONFIDENCE:.2f}")
        return _unknown(case, k, findings, scores, trace, leaning=root_cause)
    verdict = _verdict(case, k, root_cause, by_cause[root_cause], findings, scores,
                       rivals | {root_cause: scores[root_cause]},
                       counters.get(root_cause, (1.0, ()))[1], trace)
    if tentative:
        # Claimed on one weak sign (signals.toml weak_sign_alone_claims): say what would confirm it.
        collect = tuple(dict.fromkeys((*_pointers_in_bundle(case), *k.causes[root_cause].collect)))
        verdict = dataclasses.replace(verdict, collect=collect, trace=verdict.trace + (
            f"resolve: tentative — {root_cause} rests on one weak sign; collect: {'; '.join(collect[:3]) or '-'}",))
    return verdict


def _independent_signs(findings: list[Finding]) -> list[str]:
    """The distinct registered signs the findings rest on; a finding that cites exactly the
    lines another one cites (two readings of the same lines) adds none, and signs that read
    one failure as different programs print it (signals.toml [failure]) count once."""
    out: list[str] = []
    seen_lines: list[set] = []
    failures = registry().failures
    seen_failures: set[str] = set()
    for f in sorted(findings, key=lambda f: -f.confidence):
        lines = {(r.path, r.line) for r in f.evidence}
        if lines and any(lines == s for s in seen_lines):
            continue
        seen_lines.append(lines)
        for s in (f.signs or (f.signal or f.discriminator or f.rule,)):
            failure = failures.get(s)
            if s in out or (failure and failure in seen_failures):
                continue
            out.append(s)
            if failure:
                seen_failures.add(failure)
    return out


def _claimable(findings: list[Finding], trace: list[str]) -> bool:
    """A claim needs one strong sign or two independent ones (signals.toml `strength`)."""
    roots = [f for f in findings if f.role == "root"] or findings
    if any(f.strength == "strong" for f in roots):
        return True
    signs = _independent_signs(roots)
    if len(signs) >= 2:
        trace.append(f"resolve: {findings[0].cause} rests on {len(signs)} independent weak signs: " + ", ".join(signs))
        return True
    trace.append(f"resolve: {findings[0].cause} rests on one weak sign ({', '.join(signs)}): not enough to claim")
    return False


def _counters(findings: list[Finding], case: Case, trace: list[str], whole: Case | None = None) -> dict[str, tuple[float, tuple[str, ...]]]:
    """cause -> (factor on its support, reasons): every kind of counter-evidence, combined.
    `whole`: the case before job_only folded the kernel's history away (read by the counters
    that need to see how far back a kernel log reaches)."""
    counters = measured_state_against(case, trace)
    if COUNTER.kernel_log_without_oom_kill.against not in counters:   # one fact (no OOM kill), read once
        counters.update(kernel_log_without_oom_kill(whole or case, trace, findings))
    for cause, (factor, reasons) in [*before_the_job(findings, case, trace).items(),
                                     *unrelated_victims(findings, case, trace).items(),
                                     *death_mismatch(case, trace).items(),
                                     *crashed_peer(case, trace).items()]:
        old_factor, old_reasons = counters.get(cause, (1.0, ()))
        counters[cause] = (old_factor * factor, old_reasons + reasons)
    return counters


def _scores(by_cause: dict[str, list[Finding]], counters: dict, trace: list[str]) -> dict[str, float]:
    """Support per cause: the noisy-OR of its root-capable findings (of its symptom-only
    findings, discounted, when it has no root-capable one), times its counter-evidence."""
    scores: dict[str, float] = {}
    for cause, fs in by_cause.items():
        roots = [f for f in fs if f.role == "root"]
        score = _support(roots) if roots else _support(fs) * LIMIT.symptoms_only_discount
        factor, _ = counters.get(cause, (1.0, ()))
        scores[cause] = score * factor
        trace.append(f"resolve: {cause} support {score:.2f} x counter {factor:.2f} = {scores[cause]:.2f}"
                     f" ({'root-capable' if roots else 'symptoms only'})")
    return scores


def _verdict(case: Case, k: Knowledge, root_cause: str, root_findings: list[Finding], findings: list[Finding],
             scores: dict[str, float], contenders: dict[str, float], counter_evidence: tuple[str, ...],
             trace: list[str]) -> Verdict:
    root_findings = sorted(root_findings, key=lambda f: (f.role != "root", -f.confidence))
    evidence = tuple(dict.fromkeys(r for f in root_findings for r in f.evidence))
    root = dataclasses.replace(root_findings[0], evidence=evidence[:12], confidence=round(scores[root_cause], 3))
    others = [f for f in findings if f.cause != root_cause]
    # A symptom: later than the root, a consequence by nature, or a cause the root explains
    # (fallout may be printed first: by another rank, or by a faster logger).
    fallout = set(k.causes[root_cause].explains)
    symptoms = tuple(f for f in others if _after(f, root) or f.role == "symptom" or f.cause in fallout)
    alternatives = tuple(sorted((f for f in others if f not in symptoms and f.cause in scores),
                                key=lambda f: -scores.get(f.cause, 0)))
    cause = k.causes[root_cause]
    if cause.without_timeout is not None and not events_of(case, TIMEOUT_KINDS):
        cause = cause.without_timeout   # a hang with no timeout: speak of none (audit 11 L2)
    # a reading that names the fault more exactly (audit 11 M2): the root's own, else another root
    # finding's of the same cause (every rank alike beside the exception it qualifies, audit 12 L1)
    cause = next((w for w in (cause.for_reading(f.signal) for f in (root, *root_findings[1:])) if w is not cause), cause)
    advice = _specific_advice(root_findings, k)
    return Verdict(
        category=Category(cause.category), cause=root_cause, confidence=_confidence(root_cause, contenders, k),
        summary=f"{cause.title}: {root.summary}", explanation=cause.explanation, root=root, symptoms=symptoms,
        alternatives=alternatives, remediation=advice + tuple(r for r in cause.remediation if r not in advice),
        next_steps=cause.next_steps, commands=cause.commands, steps=cause.steps, title=cause.title,
        counter_evidence=counter_evidence, signature=signature_of(root_cause, cause.category, root, case), trace=tuple(trace))


# A cause explains another's signs only when it is itself well supported, and the
# explained one is not much stronger (then the "fallout" is more likely the story).
EXPLAINS_MIN = LIMIT.explains_min
EXPLAINS_MARGIN = LIMIT.explains_margin


def _explained(scores: dict[str, float], k: Knowledge, trace: list[str],
               by_cause: dict[str, list[Finding]] | None = None, case: Case | None = None) -> set[str]:
    """Causes whose signs are fallout of a present, well-supported cause (causes.toml
    `explains`): an AER before Xid 79 is how the GPU fell off the bus, not a rival.  A GPU
    fault explains the job's failure only when the job failed with a GPU error (a CUDA error,
    a device assert): an exception its own Python code raised is no fallout of the GPU
    (catalogs/readings.toml [fallout]; audit 6 H10).  Nor does a cause explain a failure of
    another kind that was over before it began (`_came_after`)."""
    out: set[str] = set()
    for cause in sorted(scores, key=lambda c: -scores[c]):
        if cause in out or scores[cause] < EXPLAINS_MIN:
            continue
        for other in k.causes[cause].explains:
            if (other == "app_error" and by_cause is not None and k.causes[cause].category == "hardware"
                    and not any(_gpu_error_reading(f) for f in by_cause.get(other, ()))):
                trace.append(f"resolve: {other} is no fallout of {cause}: the job's failure names no GPU error")
                continue
            if (other in scores and by_cause is not None and case is not None
                    and _came_after(cause, other, by_cause, k, case, trace)):
                continue
            if (by_cause is not None and other in by_cause and k.causes[other].category != k.causes[cause].category
                    and _unlinked(by_cause.get(cause, ()), case)):
                trace.append(f"resolve: {other} is no fallout of {cause}: {cause} rests on counts that name "
                             f"no victim and no time, or on kills of processes the job's lines never show dying")
                continue
            if other in scores and other not in out and scores[other] <= scores[cause] + EXPLAINS_MARGIN:
                out.add(other)
                trace.append(f"resolve: {other} ({scores[other]:.2f}) is explained by {cause} ({scores[cause]:.2f})")
    return out


def _came_after(cause: str, other: str, by_cause: dict[str, list[Finding]], k: Knowledge, case: Case,
                trace: list[str]) -> bool:
    """Did `cause`'s first sign come clearly after `other`'s, on the bundle's own timeline?
    A consequence cannot come before its cause; it can be stamped earlier by logger skew
    (threshold.fallout_lead_s) or within the times' own uncertainty (an untimed line is placed
    between its file's timed neighbours, a boot-relative kernel line carries the boot time's
    error): only a gap beyond both counts, and a time without a bound never does.  Two
    hardware causes are stages of one physical fault (an AER well before the GPU fell off the
    bus), so their order says nothing.  Local times read in an assumed zone can be hours off
    the kernel's clock: then no order counts."""
    if k.causes[cause].category == "hardware" and k.causes[other].category == "hardware":
        return False
    first = _first_span(by_cause.get(cause, ()))
    fallout = _first_span([f for f in by_cause.get(other, ()) if not _warned_condition(f, k)])
    if first is None or fallout is None or first[0] is None or fallout[1] is None:
        return False
    gap = (first[0] - fallout[1]).total_seconds()
    if gap <= LIMIT.fallout_lead_s:
        return False
    if _zone_unknown_between_clocks(case):
        trace.append(f"resolve: {cause} is {gap:.0f} s after {other}, but local times were read in an assumed zone"
                     " beside times on another clock: their order is not known")
        return False
    trace.append(f"resolve: {other} is no fallout of {cause}: its first sign (by {fallout[1].isoformat()}) is"
                 f" {gap:.1f} s before {cause}'s (from {first[0].isoformat()}), beyond the"
                 f" {LIMIT.fallout_lead_s:g} s of logger skew")
    return True


def _warned_condition(f: Finding, k: Knowledge) -> bool:
    """A sign its own program prints as a warning or a note (messages.toml severity below error:
    gloo's loopback fallback at init, a thermal slowdown): a condition, not a failure.  It can
    stand long before the job fails (steps ran after it), so it never dates the failure that a
    time order compares (audit 8 H11 b)."""
    if not f.signal.startswith("msg."):
        return False
    sev = next((m.severity for m in k.messages if m.id == f.signal[4:]), "error")
    return sev in ("warning", "info", "debug")


def _zone_unknown_between_clocks(case: Case) -> bool:
    """Local times read in an assumed zone, beside times on another clock (the kernel's boot
    clock, a zoned wall time, a file's mtime): the two kinds may be hours apart."""
    timed = [e for e in case.events if e.when and e.when.at]
    return (any(ZONE_ASSUMED in e.when.note for e in timed)  # type: ignore[union-attr]
            and any(e.when.basis is Basis.MTIME or (e.stamp is not None and e.stamp.clock is not ClockKind.WALL_LOCAL)  # type: ignore[union-attr]
                    for e in timed))


def _before(a: tuple, b: tuple) -> bool:
    """a's first sign happened before b's whatever their uncertainty (both bounded that way)."""
    return a[1] is not None and b[0] is not None and a[1] < b[0]


def _first_span(findings) -> tuple | None:
    """When a cause's first sign happened, as the timeline bounds it: (earliest possible or
    None, latest possible or None, as placed); None when none of its findings has a time."""
    timed = [f for f in findings if f.first_at is not None]
    if not timed:
        return None
    lows = [f.first_earliest for f in timed]
    highs = [f.first_latest for f in timed if f.first_latest is not None]
    return (None if None in lows else min(lows)), (min(highs) if highs else None), min(f.first_at for f in timed)  # type: ignore[type-var]


def _unlinked(findings, case: Case | None = None) -> bool:
    """A cause whose every sign counts kills without naming a victim or a time
    (catalogs/readings.toml [fallout] unlinked_signals), or reads OOM kills of which none is
    seen to hit the job (no victim pid among the job's lines, no process of the job dying by
    SIGKILL: audit 7 H6, a memcg kill of another process): it links no failure of the job to itself."""
    from postmortem.classify.rules.catalog import _readings
    unlinked = set(_readings()["fallout"]["unlinked_signals"])
    if case is not None and not oom_kill_hit_the_job(case):
        unlinked |= _KILL_READINGS | set(_readings()["fallout"]["victim_signals"])
    return bool(findings) and all(f.signal in unlinked for f in findings)


# Readings of the OOM killer's kill line (signals.toml `death = "kernel_kill"`), however parsed.
_KILL_READINGS = deaths("kernel_kill")


def _gpu_error_reading(f: Finding) -> bool:
    """A finding that reads a GPU error (catalogs/readings.toml [fallout] gpu_error_signals)."""
    from postmortem.classify.rules.catalog import _readings
    fallout = _readings()["fallout"]
    signals = (f.signal or "", *f.signs)
    return any(s.startswith(tuple(fallout["gpu_error_signal_prefixes"])) or s in fallout["gpu_error_signals"]
               for s in signals)


def _specific_advice(findings: list[Finding], k: Knowledge) -> tuple[str, ...]:
    """Fixes tied to the very messages that decided the verdict (messages.toml `advice`), and
    those a rule derived from what it read (Finding.advice)."""
    by_id = {m.id: m for m in k.messages}
    advice = [by_id[f.discriminator].advice for f in findings
              if f.rule == "known-messages" and f.discriminator in by_id and by_id[f.discriminator].advice]
    advice += [f.advice for f in findings if f.advice]  # a rule's own derived fix (rule nccl-fixed-in-later-release)
    return tuple(dict.fromkeys(advice))


# When times cannot order two well-supported causes, the one that explains the other
# wins: a hardware fault explains NCCL errors, a config fault (OOM, shm) explains
# collective failures, not the other way round.
PRECEDENCE = {"hardware": 3, "config": 2, "comms": 1, "unknown": 0}


def _pick_root(by_cause, scores, k, trace, case: Case | None = None) -> str | None:
    """The earliest of the well-supported root-capable causes; without times, the one
    whose category explains the others; then the best-supported."""
    if not scores:
        return None
    ranked = sorted(scores, key=lambda c: -scores[c])
    best = ranked[0]
    contenders = [c for c in ranked if scores[c] >= CLOSE_RACE * scores[best]
                  and any(f.role == "root" for f in by_cause[c])]
    if len(contenders) < 2:
        return best
    spans = {c: _first_span(by_cause[c]) for c in contenders}
    if all(spans.values()):
        # Coming first takes the root only for a cause that could itself be claimed: one below
        # the claim threshold or resting on one weak sign would turn a claimable verdict into
        # `unknown` (a kernel log's old OOM kill, discounted, before a SIGBUS).
        able = [c for c in contenders if c == best or (scores[c] >= MIN_CONFIDENCE and _claimable(by_cause[c], []))]
        first = min(able, key=lambda c: (spans[c][2], -scores[c]))
        # ... and only when it came first beyond the times' own uncertainty: an untimed line
        # placed after its file's previous timed line may have come up to the next one's time
        # (audit 7 H2); otherwise the times do not order them.
        unordered = [c for c in able if c != first and not _before(spans[first], spans[c])]
        if not unordered:
            if first != best:
                trace.append(f"resolve: {first} happened before {best} and is close in support: root is {first}")
            return first
        trace.append(f"resolve: {first} and {', '.join(unordered)} overlap within their times' uncertainty: "
                     "their order is not known")
    # Category precedence only lets a cause that could be claimed on its own signs take
    # the root from a better-supported one: one weak hint never outranks a specific line.
    able = [c for c in contenders if c == best or (_claimable(by_cause[c], []) and not _unlinked(by_cause[c], case))]
    # Within a category, a cause whose fallout the other is (causes.toml `explains`: a named
    # network fault behind "the collective stopped moving") is the root.
    pick = max(able, key=lambda c: (PRECEDENCE[k.causes[c].category],
                                    any(o in k.causes[c].explains for o in able if o != c), scores[c]))
    # A cause with no time at all (a snapshot's counters: nvidia-smi's volatile ECC counts span
    # every job since the driver loaded) takes no root by its category's precedence from a cause
    # whose signs are timed lines of this failure (audit 7 H1), nor -- when it is no line of any
    # failure either (a snapshot: findings citing no event) -- from a cause whose signs are lines
    # of the job's own files with no time (plain Python stderr, audit 8 H8).
    timed = [c for c in able if spans[c] or (_snapshot_only(by_cause[pick]) and not _snapshot_only(by_cause[c]))]
    rank = PRECEDENCE[k.causes[pick].category]
    if not spans[pick] and any(PRECEDENCE[k.causes[c].category] < rank for c in timed):
        trace.append(f"resolve: {pick} carries no time{' and reads no line of a failure' if _snapshot_only(by_cause[pick]) else ''}:"
                     f" it takes no root by precedence over {', '.join(timed)}")
        pick = max(timed, key=lambda c: (PRECEDENCE[k.causes[c].category], scores[c]))
        if pick != best:
            trace.append(f"resolve: root is {pick}")
        return pick
    if pick != best:
        trace.append(f"resolve: no common clock; {pick} ({k.causes[pick].category}) explains {best}: root is {pick}")
    return pick


def _snapshot_only(findings) -> bool:
    """Every finding reads measured state only (no event line of any failure: nvidia-smi's
    counters, a cgroup file), so nothing places it in this failure."""
    return bool(findings) and all(f.first_seq is None for f in findings)


def _after(f: Finding, root: Finding) -> bool:
    if f.first_at and root.first_at:
        return f.first_at >= root.first_at
    return False


def _confidence(root: str, scores: dict[str, float], k: Knowledge) -> float:
    """Support of the root, lowered by the strongest rival of another category."""
    category = k.causes[root].category
    rival = max((s for c, s in scores.items() if c != root and k.causes[c].category != category), default=0.0)
    return round(min(LIMIT.max_confidence, scores[root] * (1 - LIMIT.rival_penalty * rival)), 3)


def _pointers_in_bundle(case: Case) -> list[str]:
    """What the bundle itself says to read next, ahead of the generic list: files the
    launcher names as holding the real error, the log of a peer whose process ended first
    (it closed its connections in order: its own error is why), and the stderr of a process
    that exited with a plain error code when no traceback made it into the bundle."""
    pointers = [f"the error file the job's launcher names: {e.data['path']} ({e.ref.describe()})"
                for e in events_of(case, KIND.msg_error_file_pointer) if e.data.get("path")]
    pointers += [f"the log of the process at {_peer_address(e)} (it closed its connection first, {e.ref.describe()}): "
                 "its own error is why the others failed"
                 for e in events_of(case, KIND.msg_peer_closed_connection) if _peer_address(e)][:1]
    if not events_of(case, KIND.py_exception):
        pointers += [f"the stderr of the process that exited with code {e.data['exitcode']} ({e.ref.describe()}): "
                     "its Python traceback is not in the bundle"
                     for e in case.events if str(e.data.get("exitcode", "")).isdecimal() and int(e.data["exitcode"]) > 0][:1]
    return list(dict.fromkeys(pointers))[:3]


def _peer_address(e) -> str:
    """`address:port` of the peer named by a peer_closed_connection line (gloo prints [address]:port,
    NCCL address<port>; a close or a reset), or ""."""
    d = e.data
    host = d.get("peer") or d.get("npeer") or d.get("rpeer") or d.get("cpeer")
    port = d.get("port") or d.get("nport") or d.get("rport") or d.get("cport")
    return f"{host}:{port}" if host and port else host or ""


def _unknown(case: Case, k: Knowledge, findings: list[Finding], scores: dict[str, float],
             trace: list[str], leaning: str | None = None) -> Verdict:
    u = k.causes["unknown"]
    # The best guess is a cause something points at as a root; a cause only its symptoms
    # suggest (a timeout's "the collective was stuck") comes after.
    root_capable = {f.cause for f in findings if f.role == "root"}
    best = sorted(scores, key=lambda c: (c != leaning, c not in root_capable, -scores[c]))
    collect = _pointers_in_bundle(case) + list(u.collect)
    for c in best[:2]:
        collect.extend(x for x in k.causes[c].collect if x not in collect)
    kinds = {a.kind for a in case.artifacts}
    summary = ("No evidence decides the cause" if not findings else
               f"Not enough to claim: leaning {leaning} ({scores[leaning]:.2f}); collect more to decide" if leaning else
               f"Evidence is too weak to decide (best guess: {best[0]}, {scores[best[0]]:.2f})" if best else
               "Only consequences were found, no cause")
    if not case.events and not case.stacks:
        summary = "Nothing in the bundle could be read as a log" + (f" ({', '.join(sorted(kinds))})" if kinds else "")
    trace.append(f"resolve: unknown ({summary})")
    alternatives = tuple(sorted((f for f in findings if f.cause in scores), key=lambda f: -scores[f.cause]))
    symptoms = tuple(f for f in findings if f.cause not in scores)
    return Verdict(
        category=Category.UNKNOWN, cause="unknown", confidence=0.0, summary=summary, explanation=u.explanation,
        root=None, symptoms=symptoms, alternatives=alternatives, remediation=u.remediation,
        next_steps=u.next_steps, counter_evidence=(), signature=signature_of("unknown", "unknown", None, case),
        trace=tuple(trace), collect=tuple(collect), commands=u.commands, steps=u.steps, title=u.title,
        leaning=leaning or "", leaning_support=round(scores[leaning], 2) if leaning else 0.0)
