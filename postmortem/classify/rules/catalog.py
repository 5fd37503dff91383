"""Lines read through the catalogs generated from the upstream sources
(knowledge/catalog.py): NCCL WARN formats, CUDA errors, NV_STATUS codes in NVRM lines,
kernel oops/MCE/AER lines, PyTorch messages in exceptions.

A line a message pattern (messages.toml) already reads is left to that pattern: one
producer per line.  Hits of one entry are one finding; its weight comes from how specific
the entry is (knowledge/catalogs/readings.toml): an exact upstream message with one reading
is strong, a whole subsystem is weak and never claims alone.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from collections import defaultdict

from postmortem import knowledge
from postmortem.classify.rules.app import _param, catalog_reads_instead, own_exception
from postmortem.classify.rules.base import (Rule, _repeat, connection_failure_kinds, events_of, handler_fallout,
                                           sign_finding)
from postmortem.classify.rules.config import TIMEOUT_KINDS
from postmortem.knowledge.registry import KIND, catalog_signal
from postmortem.model import Event, Severity
from postmortem.parsers.iproute import ROUTE_GET_FACT

_PATTERN_KINDS_PREFIX = "msg."  # kinds message patterns emit: their lines are theirs


@functools.lru_cache(maxsize=None)
def _readings() -> dict:
    return knowledge.source("catalogs/readings.toml")


def _hits(e: Event) -> list[catalog.Match]:
    """What the catalogs read on one event's line (only lines of _READ_KINDS are asked)."""
    from postmortem.knowledge import catalog  # the catalogs' module only for lines it reads (startup)

    text = e.text or ""
    if e.kind == KIND.nccl_warn:
        m = catalog.match_nccl(text)
        return [m] if m else []
    out: list[catalog.Match] = []
    if e.kind in (KIND.kernel_nvrm, KIND.kernel_line):
        out += [catalog.Match(s, s.cause, "specific", s.name) for s in catalog.nv_status_in(text)]
        out += _init_failed(text, out)
    if e.kind == KIND.kernel_line:
        m = catalog.match_message(text, ("kernel",))
        if m and m.entry.subsystem in _readings()["kernel"]["read_families"]:
            out.append(m)
    if e.kind == KIND.msg_undefined_symbol:
        # The loader could not resolve an NCCL API function: the libnccl loaded predates the
        # release that declares it.  Any other symbol is not the catalogs' to read.
        api = catalog.nccl_api(str(e.data.get("symbol") or ""))
        return [catalog.Match(api, api.cause, api.strength, f"{api.name} (NCCL >= {api.versions[0]})")] if api else []
    if e.kind == KIND.nccl_error_chain:
        return _chain_reading(e)
    if e.kind in _CUDA_LINE_KINDS:
        # A framework's CUDA check (THC, Caffe, darknet) or a line naming a cudaError_t /
        # CUresult, on a line no parser reads: the error text or name.
        return [catalog.Match(c, c.cause, c.strength, c.name) for c in catalog.cuda_errors_in(text)]
    if e.kind == KIND.msg_c10d_log:
        # A c10d log line (a store or socket warning): the PyTorch catalog reads its text.
        m = catalog.match_message(text, ("pytorch",))
        return [m] if m else []
    if e.kind in (KIND.py_exception, KIND.native_terminate):
        # An exception's message runs on below its first line (ncclResult_t text, then
        # "Last error:" and the last NCCL WARN text, since NCCL 2.13).
        # std::terminate's report carries the exception's what() text on its own line.
        more = "\n".join(str(e.data[k]) for k in ("what", "continuation") if e.data.get(k))
        whole = f"{text}\n{more}" if more else text
        out += [catalog.Match(c, c.cause, c.strength, c.name) for c in catalog.cuda_errors_in(whole)]
        m = catalog.match_message(whole, ("pytorch",))
        if m:
            out.append(m)
        # The ncclResult_t name c10d prints under "NCCL error in:": a class of failures, weak.
        for name in dict.fromkeys(_NCCL_RESULT.findall(whole)):
            r = catalog.nccl_result(name)
            if r is not None and r.cause not in (catalog.CONTEXT, catalog.ERRNO, catalog.CUDA, ""):
                out.append(catalog.Match(r, r.cause, "subsystem", name))
        last = _LAST_ERROR.search(more)
        if last:
            m = catalog.match_nccl(last.group(1))
            if m and not any(x.entry.id == m.entry.id for x in out):
                out.append(m)
    return out


_CUDA_LINE_KINDS = frozenset({KIND.msg_cuda_check_failed, KIND.msg_cuda_error, KIND.msg_cuda_error_named})
# The kinds _hits reads anything on (every other kind: nothing); the rule walks only these.
# A kind _hits starts reading goes here too (tests/classify/test_kind_index.py checks).
_READ_KINDS = frozenset({KIND.nccl_warn, KIND.kernel_nvrm, KIND.kernel_line, KIND.msg_c10d_log, KIND.py_exception,
                         KIND.msg_undefined_symbol, KIND.nccl_error_chain,
                         KIND.native_terminate}) | _CUDA_LINE_KINDS
_NCCL_RESULT = re.compile(r"\b(nccl(?:Unhandled\w{1,20}|Invalid\w{1,20}|Remote|System|Internal)(?:Error|Usage|Argument)?)\b")
_LAST_ERROR = re.compile(r"Last error:\s*\n\s*(.{4,400})")


def _process(e: Event) -> tuple:
    """The NCCL process a line is from: host and pid where the line names them, else its file."""
    return (e.host, e.pid) if e.pid is not None else (e.ref.path,)


def _chain_reading(e: Event) -> list[catalog.Match]:
    """An NCCL error chain ('misc/socket.cc:567 -> 2' ... 'bootstrap.cc:270 -> 2') whose code is
    one the catalog reads by the failing call (ncclSystemError: "the WARN before it names the call
    and errno") and whose process printed no WARN: the file the chain starts in is where the
    system call failed, read as match_nccl reads such a WARN without an errno -- the file's
    subsystem, weakly.  With a WARN the WARN is the reading (one failure, one sign)."""
    from postmortem.knowledge import catalog  # the catalogs' module only for lines it reads (startup)

    chain = e.data.get("chain") or ()
    if e.data.get("origin") or not chain:
        return []
    result = catalog.nccl_result(e.data.get("rc"))
    if result is None or result.cause != catalog.ERRNO:
        return []
    src = str(chain[0]).rsplit(":", 1)[0]
    cause = catalog.nccl_file_cause(src)
    if cause in (catalog.CONTEXT, catalog.ERRNO, catalog.CUDA, ""):
        return []
    return [catalog.Match(result, cause, "subsystem", f"{result.name} returned first by {chain[0]}")]


@functools.lru_cache(maxsize=None)
def _init_failed_reading() -> tuple[re.Pattern[str], catalog.Entry]:
    from postmortem.knowledge import catalog  # the catalogs' module only for lines it reads (startup)

    r = _readings()["nvrm_init_failed"]
    return re.compile(r["regex"]), catalog.Entry("nv_status", "nvrm.init_failed", "RmInitAdapter failed", r["cause"],
                                                 "subsystem", "the driver could not initialise the GPU")


def _init_failed(text: str, found: list[catalog.Match]) -> list[catalog.Match]:
    """'RmInitAdapter failed! (init:rmStatus:line)': the NV_STATUS number read through its
    catalog entry, else the failure itself, weakly."""
    from postmortem.knowledge import catalog  # the catalogs' module only for lines it reads (startup)

    if "RmInitAdapter" not in text or found:  # a status the line names outright reads it already
        return []
    rx, entry = _init_failed_reading()
    m = rx.search(text)
    if not m:
        return []
    status = next((e for e in catalog.nv_status_numbers().get(int(m.group("status"), 16), ())), None)
    if status is not None and status.cause not in (catalog.CONTEXT, "") and not any(f.entry is status for f in found):
        return [catalog.Match(status, status.cause, "specific", f"rmStatus {status.name}")]
    return [catalog.Match(entry, entry.cause, "subsystem", f"rmStatus 0x{m.group('status')}"
                          + (f" {status.name}" if status is not None else ""))]


def _drop_retried_attempts(case, groups: dict, trace: list[str], rule: str) -> None:
    """A failed attempt c10d retries (the pytorch catalog's retried_entries: a connect or bind of
    the store) followed in its own file by a line only a process past its store connect prints (the
    catalog's store_reached_kinds: a rank's step line, a progress bar, any NCCL line, gloo's pair
    connect or a pair's error, a collective's watchdog) was retried with success: the job got past
    it, so it is no sign of a later failure (audit 11 H1)."""
    if not any(key[0].startswith("pt.") for key in groups):
        return
    from postmortem.knowledge import catalog  # the catalogs' module only when read (startup)

    attempts = set(catalog.data("pytorch").get("retried_entries", ()))
    if not any(key[0] in attempts for key in groups):
        return
    data = catalog.data("pytorch")
    reached_kinds = set(data.get("store_reached_kinds", ()))
    prefixes = tuple(data.get("store_reached_kind_prefixes", ()))
    progress: dict[str, int] = {}   # per file, the last line that shows the store was reached
    for e in case.events:
        if e.kind in reached_kinds or (prefixes and e.kind.startswith(prefixes)):
            progress[e.ref.path] = max(progress.get(e.ref.path, -1), e.ref.line or -1)
    for key in [key for key in groups if key[0] in attempts]:
        kept = [e for e in groups[key] if (e.ref.line or 0) >= progress.get(e.ref.path, -1)]
        if len(kept) < len(groups[key]):
            gone = next(e for e in groups[key] if e not in kept)
            trace.append(f"{rule}: {key[0]} on {gone.ref.describe()} not counted: a failed attempt c10d retries, "
                         "and the job got past it (a line of the same file that only a process past its store connect prints "
                         "follows: the retry succeeded)")
        if kept:
            groups[key] = kept
        else:
            del groups[key]


def _attempts_that_failed(case, groups: dict, details: dict, trace: list[str], rule: str) -> None:
    """A per-attempt warning is one weak sign whatever its errno (the catalog's errno_attempt_entries),
    until the connect's final failure (connect_failed_entries: the client's timeout) follows in the
    same file: then the attempts before it are why it failed, and their errno reads the cause as
    specifically as any errno does (audit 11 H1)."""
    from postmortem.knowledge import catalog  # the catalogs' module only when read (startup)

    data = catalog.data("pytorch")
    attempts, final = set(data.get("errno_attempt_entries", ())), set(data.get("connect_failed_entries", ()))
    ending = [re.compile(p) for p in data.get("connect_failed_text", ())]
    ends: dict[str, int] = {}
    finals = [e for (eid, _, _), events in groups.items() if eid in final for e in events]
    if any(key[0] in attempts for key in groups):
        finals += [e for e in case.events if any(p.search(e.text or "") for p in ending)]
    for e in finals:
        ends[e.ref.path] = max(ends.get(e.ref.path, -1), e.ref.line or -1)
    for key in [key for key in groups if key[0] in attempts and key[2] == "subsystem" and details.get(key)]:
        failed = [e for e in groups[key] if (e.ref.line or 0) <= ends.get(e.ref.path, -1)]
        if not failed:
            continue
        trace.append(f"{rule}: {key[0]} ({details[key]}) on {failed[0].ref.describe()} ended in the connect's "
                     "final failure: the attempts' errno is why it failed")
        rest = [e for e in groups[key] if e not in failed]
        up = (key[0], key[1], "specific")
        groups[up] = groups.get(up, []) + failed
        details.setdefault(up, details[key])
        if rest:
            groups[key] = rest
        else:
            del groups[key]


_FAILED = (Severity.ERROR, Severity.FATAL)


def _other_side(report: Event, e: Event) -> bool:
    """`report` is another process's (another rank; without ranks, another file) and does not
    name the peer `e` lost."""
    if report.rank is not None and e.rank is not None:
        other = report.rank != e.rank
    else:
        other = report.ref.path != e.ref.path
    return other and (report.data.get("peer") or None) != e.data.get("peer")


def store_side_alive(case, k, lines: list[Event]) -> Event | None:
    """A line showing the store's side of failed store connects (`lines`) alive: its server
    waiting for clients, another process's own comms failure naming no peer these name, or
    another process's c10d lines holding no such failure (it reached the store or hosts it:
    torchrun's rendezvous runs the store in one of the job's own processes)."""
    spec = _readings()["far_end_silent"]
    server_alive = re.compile(spec["store_server_alive"])
    alive = next((e for e in case.events if server_alive.search(e.text or "")), None)
    if alive is None:
        reports = [r for r in events_of(case, connection_failure_kinds(k) | set(TIMEOUT_KINDS)) if r.severity in _FAILED]
        alive = next((r for r in reports for e in lines if _other_side(r, e)), None)
    if alive is None:
        entries = set(spec["store_entries"])
        failing = {e.ref.path for e in events_of(case, KIND.msg_c10d_log)
                   if any(m.entry.id in entries for m in _hits(e))} | {e.ref.path for e in lines}
        alive = next((e for e in events_of(case, KIND.msg_c10d_log) if e.ref.path not in failing), None)
    return alive


def _store_host_silent(case, k, groups: dict, details: dict, trace: list[str], rule: str) -> set[tuple]:
    """A store connect that failed for want of any answer from the store's host (readings.toml
    [far_end_silent] store_errors: no ARP answer, SYNs unanswered) is what a dead store host
    gives as much as a cut path: strong only when `ip route get` shows this host's own route
    refusing the address, or the bundle shows the store's side alive (store_side_alive);
    otherwise one weak sign (audit 14 H1).  Returns the keys made weak."""
    spec = _readings()["far_end_silent"]
    entries, errors = set(spec["store_entries"]), set(spec["store_errors"])
    keys = [key for key in groups if key[0] in entries and key[2] == "specific" and details.get(key) in errors]
    if not keys:
        return set()
    # EHOSTUNREACH also comes from this host's own route (an `unreachable` or `prohibit` route):
    # `ip route get` refusing the address shows the errno is this host's, not a silent far end
    lines = [e for key in keys for e in groups[key]]
    refused = next((f for f in case.facts if f.name == ROUTE_GET_FACT and isinstance(f.value, dict)
                    and f.value.get("error") and any(str(f.value.get("addr")) in (e.text or "") for e in lines)), None)
    if refused is not None:
        trace.append(f"{rule}: `ip route get` {refused.value.get('addr')} answered '{refused.value['error']}' "
                     f"({refused.ref.describe()}): the errno is this host's own route, not a silent far end")
        return set()
    alive = store_side_alive(case, k, lines)
    if alive is not None:
        trace.append(f"{rule}: the store's side shows itself alive ({alive.ref.describe()}): the connect's errno reads the path")
        return set()
    weakened = set()
    for key in keys:
        weak = (key[0], key[1], "subsystem")
        groups[weak] = groups.get(weak, []) + groups.pop(key)
        details.setdefault(weak, details.pop(key))
        trace.append(f"{rule}: {key[0]} ({details[weak]}): weak: nothing in the bundle shows the store's host alive "
                     "(its server's wait, its own errors, another process's c10d lines without this failure): a host that is off, panicked or not booted gives the same "
                     "errno as a cut path -- collect the store host's log, kernel log and BMC event log (audit 14 H1)")
        weakened.add(weak)
    return weakened


def _sign_of(m):
    return catalog_signal(m.entry.catalog, m.entry.id, m.cause,
                          m.strength if m.strength in ("specific", "subsystem") else "subsystem", m.entry.why)


class CatalogReadings(Rule):
    """Catalog hits (knowledge/catalogs) on lines no message pattern reads."""

    id = "catalog"

    def findings(self, case, k, trace):
        # A pattern that reads a cause owns its line; a context pattern (cause "") only names
        # what the line is, so the catalogs still read why (a "CUDA error: <text>" line).
        reading = {f"{_PATTERN_KINDS_PREFIX}{m.id}" for m in k.messages if m.cause}
        claimed = {(e.ref.path, e.ref.line) for e in events_of(case, reading)}
        # An exception raised while handling another is its fallout, no sign (audit 8 H1).
        claimed |= handler_fallout(case)
        # One exception is one sign: a torch message (the pytorch catalog) on the exception app-error
        # reads as the job's own failure is the same sign; the stronger reading stands (app.py).
        own = own_exception(case, k) if k.causes.get("app_error") is not None else None
        own_line = (own.ref.path, own.ref.line) if own is not None else None
        job_frame_readings = set(_param("app.exception", "job_frame_readings"))
        groups: dict[tuple[str, str, str], list[Event]] = defaultdict(list)
        details: dict[tuple[str, str, str], str] = {}
        seen: set[tuple] = set()
        # the processes that printed a WARN: their error chains are that WARN's failure (one sign)
        warned = {_process(w) for w in events_of(case, KIND.nccl_warn)}
        for e in events_of(case, _READ_KINDS):
            where = (e.ref.path, e.ref.line)
            if where in claimed or (e.kind == KIND.nccl_error_chain and _process(e) in warned):
                continue
            for m in _hits(e):
                if m.cause not in k.causes or (where, m.entry.id) in seen:
                    continue  # context, unresolved, or this line already counted for this entry
                if where == own_line and m.entry.id in job_frame_readings:
                    trace.append(f"{self.id}: {m.entry.id} on {e.ref.describe()}: raised under the job's own frame, "
                                 "the exception app-error reads, one sign")
                    continue
                if (where == own_line and m.cause == "app_error" and m.entry.catalog == "pytorch"
                        and not catalog_reads_instead(case, e, _sign_of(m))):
                    trace.append(f"{self.id}: {m.entry.id} on {e.ref.describe()}: the exception app-error reads, "
                                 "one sign")
                    continue
                seen.add((where, m.entry.id))
                key = (m.entry.id, m.cause, m.strength)
                groups[key].append(e)
                details.setdefault(key, m.detail)
        _drop_retried_attempts(case, groups, trace, self.id)
        _attempts_that_failed(case, groups, details, trace, self.id)
        silent_store = _store_host_silent(case, k, groups, details, trace, self.id)
        if not groups:
            return []
        readings = _readings()
        hardware_xid = self._hardware_xid(case, k, set(readings["fallout"]["app_error_after"]))
        out = []
        for (eid, cause, strength), events in groups.items():
            entry = next(m.entry for m in _hits(events[0]) if m.entry.id == eid)
            sign = catalog_signal(entry.catalog, eid, cause, strength if strength in ("specific", "subsystem")
                                  else "subsystem", entry.why)
            role = "root"
            if cause == "app_error" and entry.catalog == "cuda" and hardware_xid:
                role = "symptom"  # the GPU's own fault (a hardware Xid) explains the CUDA error
                trace.append(f"{self.id}: {entry.name} after hardware Xid {hardware_xid}: fallout, not the job's code")
            # More lines of a specific message add a little; repeats of a subsystem-only reading
            # stay one weak sign (readings.toml: a weak sign never claims alone).
            w = _repeat(sign.weight, len(events)) if strength == "specific" else sign.weight
            what = details[(eid, cause, strength)] or entry.message or entry.name
            # the cause's wording for this reading when it has one (causes.toml by_reading, audit 11 M2)
            title = k.causes[cause].for_reading(sign.id).title
            summary = (f"{len(events)} line(s) the {entry.catalog} catalog reads as {title}: "
                       f"{what[:120]} ({entry.why}; {strength})")
            if (eid, cause, strength) in silent_store:
                summary += ("; nothing in the bundle shows the store's host alive, and a host that is off or "
                            "panicked gives the same errno -- collect the store host's own log, kernel log and BMC event log")
            trace.append(f"{self.id}: {eid} x{len(events)} -> {cause} ({w:.2f}, {strength}), "
                         f"first at {events[0].ref.describe()}")
            f = sign_finding(k, sign, self.id, summary, events, discriminator=eid, weight=w)
            out.append(dataclasses.replace(f, role=role) if role != f.role else f)
        return out

    @staticmethod
    def _hardware_xid(case, k, hardware_causes: set[str]) -> int | None:
        for e in events_of(case, KIND.kernel_xid):
            info = k.xids.get(int(e.data.get("code") or -1))
            if info and info.cause in hardware_causes:
                return info.code
        return None
