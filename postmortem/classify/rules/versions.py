"""An NCCL bug fixed in a later release: the failure located in NCCL itself, and the job's NCCL
older than a release whose fix names what the failure's lines name (knowledge/releases.py).

Two signs, each weak (signals.toml nccl.own_failure, nccl.fixed_in_later_release):
  - the failure is NCCL's own -- its internal check failed (ncclInternalError), NCCL handed
    CUDA an invalid argument (a CUDA call NCCL makes, not the application's), or the crashed
    stack is in libnccl (SIGSEGV/SIGABRT) -- rather than a failure NCCL merely reports (a
    system call, the network, the application's invalid usage);
  - the job's NCCL version (NCCL's banner, or c10d's "NCCL version X" in its error) is strictly
    older than a release whose notes or fix commits name an identifier or a component the
    failure's lines name.  The version number alone proves nothing and gives no sign.
"""
from __future__ import annotations

import dataclasses
import functools
import re

from postmortem import stacks as stacklib
from postmortem.classify.rules.base import Rule, died_of, events_of, sign_finding
from postmortem.knowledge.registry import KIND, LIMIT, SIGN, registry
from postmortem.model import Event

# ncclResult_t 3 as NCCL (nccl.h.in ncclGetErrorString), c10d and nccl-tests print it.
_INTERNAL = re.compile(r"\bncclInternalError\b|^internal error\b|'internal error\b")
# cudaErrorInvalidValue's text (cudaGetErrorString(1)) in NCCL's own CUDACHECK WARN
# ("Cuda failure 'invalid argument'", src/include/checks.h; "Cuda failure 1 'invalid argument'" from 2.19).
_CUDA_INVALID_VALUE = re.compile(r"Cuda failure (?:\d+ )?'invalid argument'")
# libnccl, not the network plugin libnccl-net*.so (aws-ofi-nccl, nccl-rdma-sharp-plugins): the
# interconnect's plugin crashing is not NCCL's own failure (audit 10 L8)
_NCCL_LIB = re.compile(r"libnccl(?!-net)")
_NCCL_FUNCTION = re.compile(r"(?<!_)_*p?nccl[A-Z]")  # (?<!_): one try per run of underscores (linear)
# Frames a crash report prints before the faulting one: the C library, the signal trampoline,
# UCX's handler (libucs ucs_handle_error), raise/abort on a SIGABRT.
_HANDLER_MODULE = re.compile(r"libc[.-]|libpthread|ld-linux|linux-vdso|libucs|libgcc_s")
_HANDLER_FUNCTION = re.compile(r"^(?:__GI_)?(?:raise|abort)$|pthread_kill|^__restore_rt$|sigaction|ucs_handle_error|ucs_debug")
_VERSION = re.compile(r"(?<![\d.])(\d+\.\d+\.\d+)")
_LAST_ERROR = re.compile(r"Last error:\s*\n\s*(.{4,400})")
_WARN_FILE = re.compile(r"\s([\w/]+\.(?:cc|h|cu|cpp)):\d+ (?:\(\w+\) )?NCCL WARN")
# strerror() texts NCCL's WARNs quote after "error:" / "errno": a system call failed.
_ERRNO_TEXT = re.compile(r"No space left|No such file|Permission denied|Connection (?:refused|reset|timed out)|"
                         r"Cannot allocate memory|Resource temporarily unavailable|Network is unreachable|No route to host|"
                         # src/misc/utils.cc ncclMemoryStack::allocateSpilled, then abort(): host memory
                         # exhausted or a ulimit -v / cgroup limit (v2.21.5-1 :272, v2.27.3-1 :270; audit 10 L8)
                         r"malloc\(size=\d+\) returned null")


@functools.lru_cache(maxsize=None)
def _readings() -> dict:
    from postmortem import knowledge

    return knowledge.source("catalogs/readings.toml")["nccl_own_failure"]


def job_versions(case) -> dict[str, list[Event]]:
    """The NCCL versions the bundle says the job ran: NCCL's banner, c10d's error text, vLLM's
    log of the library it loaded.  Never a package listing (collect_env, pip list): it says what
    was installed when it was taken, often after the failure (audit 10 L9)."""
    out: dict[str, list[Event]] = {}
    for e in events_of(case, (KIND.nccl_version, KIND.msg_nccl_error_in, KIND.msg_nccl_loaded_version)):
        m = _VERSION.match(str(e.data.get("version") or ""))
        if m:
            out.setdefault(_decoded(m.group(1)), []).append(e)
    return out


def _decoded(version: str) -> str:
    """PyTorch <= 1.9's c10d printed NCCL_VERSION_CODE as code/1000 . (code%1000)/100 . code%100;
    since NCCL 2.9 the code is major*10000 + minor*100 + patch, so 2.11.4 printed as '21.1.4'
    (NVIDIA/nccl#577) and 2.9.9 as '20.9.9' (#520): a first field of 20 or more is that code
    (audit 10 L4)."""
    a, b, c = (int(x) for x in version.split("."))
    if a < 20:
        return version
    code = a * 1000 + b * 100 + c
    return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"


def own_failure_lines(case) -> tuple[list[Event], list[str], str]:
    """The events saying NCCL failed in itself, the texts they carry (continuations included),
    and what kind of failure it is ('' when none)."""
    internal: list[Event] = []
    invalid: list[Event] = []
    texts: list[str] = []
    for e in events_of(case, (KIND.msg_nccl_error_in, KIND.msg_nccl_test_failure)):
        if _INTERNAL.search(str(e.data.get("error") or "")):
            internal.append(e)
            texts.append(e.text or "")
    for e in events_of(case, KIND.nccl_error_chain):
        if e.data.get("result") == "ncclInternalError":
            internal.append(e)
            texts.append(str(e.data.get("origin_msg") or ""))
    for e in events_of(case, KIND.nccl_warn):
        text = e.text or ""
        if _CUDA_INVALID_VALUE.search(text):
            invalid.append(e)
            texts.append(text)
        elif e.data.get("result") == "ncclInternalError":
            internal.append(e)
            texts.append(text)
    for e in events_of(case, KIND.py_exception):
        whole = "\n".join(str(x) for x in (e.text, e.data.get("message"), e.data.get("continuation")) if x)
        if "ncclInternalError" in whole or ("ncclUnhandledCudaError" in whole and _CUDA_INVALID_VALUE.search(whole)):
            (internal if "ncclInternalError" in whole else invalid).append(e)
            texts.append(whole)
    kind = "internal" if internal else "cuda_invalid_value" if invalid else ""
    events = internal + invalid
    if events:
        origins = _origins(case, texts)
        if _reported_environment(origins) or _unlocated(kind, origins):
            return [], [], ""
    if not events:
        crashed = stacklib.crashing(case.stacks, case.events)
        # the same veto as for a WARN: the WARNs NCCL printed before it died (audit 10 L8)
        if (crashed is not None and crashed.crashed and _in_libnccl(crashed) and not _died_of_sigbus(case)
                and not _reported_environment(_origins(case, []))):
            frames = [f for f in crashed.frames if _NCCL_LIB.search(f.module or "")]
            return [], [" ".join(filter(None, (f.function, f.file))) for f in frames], "libnccl_crash"
    return events, texts, kind


def _origins(case, texts: list[str]) -> list[tuple[str, str]]:
    """The lines saying where in NCCL the failure started: its WARNs and the 'Last error' text
    c10d quotes, each with its file ('' when unprinted)."""
    out = [(str(e.data.get("msg") or e.text or ""), str(e.data.get("file") or "")) for e in events_of(case, KIND.nccl_warn)]
    # NCCL's own words for where it failed, read by a message pattern of the same failure
    # (signals.toml [failure."nccl.own_failure"]: 'Failed to find reverse path ...' after 'Last error:')
    same = tuple(s for s, f in registry().failures.items() if f == SIGN.nccl_own_failure.id and s.startswith("msg."))
    out += [(e.text or "", "") for e in events_of(case, same)]
    out += [(m.group(1), "") for t in texts for m in [_LAST_ERROR.search(t)] if m]
    return out


def _reported_environment(origins: list[tuple[str, str]]) -> bool:
    """Did NCCL only report a failure of the environment?  A WARN (or the 'Last error') from a
    subsystem that talks to the network, /dev/shm, the fabric (catalogs/readings.toml
    nccl_own_failure), or one quoting an errno text."""
    from postmortem.knowledge import catalog, releases  # only on NCCL failure lines (startup)

    envs = set(_readings()["environment_subsystems"])
    for text, file in origins:
        m = catalog.match_nccl(text)
        subsystem = m.entry.subsystem if m else ""
        if not file:
            named = _WARN_FILE.search(text)
            file = named.group(1) if named else ""
        words = {n.split(":", 1)[1] for n in releases.identifiers_in(text) if n.startswith("component:")}
        if subsystem in envs or _file_subsystem(file) in envs or _ERRNO_TEXT.search(text) or words & envs:
            return True
    return False


def _unlocated(kind: str, origins: list[tuple[str, str]]) -> bool:
    """Nothing says where the failure began: an ncclInternalError with no WARN and no 'Last
    error' text, or a Cuda failure 'invalid argument' with no NCCL source file (c10d's 'Last error'
    drops it).  misc/socket.cc returns ncclInternalError at 12 sites and transport/net_ib.cc at
    about 20 in every release 2.16-2.20, and NCCL 2.18 reports every network error that way
    (NVIDIA/nccl#1092); the commonest printer of the invalid-argument text is transport/nvls.cc (a
    fabric manager: NVIDIA/nccl#976, #1338, #1488, #1705).  Such a line is as likely a failure NCCL
    reports as its own, in any release (audit 10 M4)."""
    if kind == "internal":
        return not origins
    if kind == "cuda_invalid_value":
        return not any(file or _WARN_FILE.search(text) for text, file in origins)
    return False


def _file_subsystem(file: str) -> str:
    from postmortem.knowledge import catalog  # only on NCCL failure lines (startup)

    return catalog.nccl_file_subsystem(file) if file else ""


def _in_libnccl(stack) -> bool:
    """The innermost frames outside the signal handler's (libc, libpthread, UCX's error handler,
    raise/abort) are NCCL's: its library, or its functions where the module is not printed."""
    for f in stack.frames[:12]:
        mod, fn = f.module or "", f.function or ""
        if _HANDLER_MODULE.search(mod) or _HANDLER_FUNCTION.search(fn) or f.note:
            continue
        return bool(_NCCL_LIB.search(mod) or (not mod and _NCCL_FUNCTION.match(fn)))
    return False


def _died_of_sigbus(case) -> bool:
    """A SIGBUS in NCCL is its /dev/shm segment or a revoked GPU mapping: the environment
    (rule sigbus-context), not NCCL's own failure."""
    return any(died_of(e, "SIGBUS") for e in case.events)


def failure_identifiers(case, texts: list[str]) -> frozenset[str]:
    """What the failure's lines name: their texts, the 'Last error' NCCL attached, and every
    NCCL WARN of the bundle (its file, and the subsystem the NCCL catalog gives its text)."""
    from postmortem.knowledge import catalog, releases  # only when a failure is NCCL's own (startup)

    named: set[str] = set()
    for t in texts:
        named |= releases.identifiers_in(t)
        last = _LAST_ERROR.search(t)
        if last:
            m = catalog.match_nccl(last.group(1))
            named |= releases.identifiers_in(last.group(1), m.entry.subsystem if m else "")
    for e in events_of(case, KIND.nccl_warn):
        m = catalog.match_nccl(e.text or "")
        named |= releases.identifiers_in(str(e.data.get("msg") or ""), m.entry.subsystem if m else "",
                                          str(e.data.get("file") or ""))
    for e in events_of(case, KIND.msg_nccl_topology_failure):
        m = catalog.match_nccl(e.text or "")
        named |= releases.identifiers_in(e.text or "", m.entry.subsystem if m else "topology")
    return frozenset(named)


class NcclFixedInLaterRelease(Rule):
    id = "nccl-fixed-in-later-release"

    def findings(self, case, k, trace):
        events, texts, kind = own_failure_lines(case)
        if not kind:
            return []
        from postmortem.knowledge import releases  # only when a failure is NCCL's own (startup)

        what = {"internal": "NCCL's own internal check failed (ncclInternalError)",
                "cuda_invalid_value": "NCCL handed CUDA an invalid argument (its own CUDA call failed with cudaErrorInvalidValue)",
                "libnccl_crash": "the crashed thread died inside libnccl"}[kind]
        crash_ref = ()
        if kind == "libnccl_crash":
            crashed = stacklib.crashing(case.stacks, case.events)
            crash_ref = (crashed.ref,)
        out = [sign_finding(k, SIGN.nccl_own_failure, self.id, what, events, "nccl-own", extra_refs=crash_ref)]
        trace.append(f"{self.id}: {what}")
        versions = job_versions(case)
        if len(versions) != 1:  # none: nothing to compare; several: rule nccl-version-mismatch's reading
            trace.append(f"{self.id}: job's NCCL version: {', '.join(sorted(versions)) or 'not in the bundle'}")
            return out
        version, banners = next(iter(versions.items()))
        named = failure_identifiers(case, texts)
        fixes = releases.fixes_after(version, named)
        # A component word alone (IB, socket, topology, proxy ...) is named by fixes in nearly every
        # release up to the newest: matching it says no more than "not the newest NCCL".  Only a
        # fix naming the same variable, function, file or text is a sign.
        # Nor does a file name, or a name fixed in many release series (audit 10 M1): only a name
        # every fix of which is in one series just after the job's (releases.names_one_bug).
        window = int(LIMIT.nccl_fix_window_series)
        specific = [f for f in fixes if any(releases.names_one_bug(n, version, window) for n in f.named)]
        trace.append(f"{self.id}: NCCL {version}; the failure names {', '.join(sorted(named)) or 'nothing'}; "
                     f"later fixes naming the same: {len(specific)} by name, {len(fixes) - len(specific)} by component only")
        if not specific:
            return out
        first = specific[0]
        advice = (f"NCCL {first.release} fixed: \"{first.text}\" ({first.source}; it names {', '.join(first.named)}, "
                  f"as the failure does): upgrade NCCL on every node to {first.release} or later (the job runs {version})")
        more = "; ".join(f"{f.release}: \"{f.text}\"" for f in specific[1:3])
        out.append(dataclasses.replace(
            sign_finding(k, SIGN.nccl_fixed_in_later_release, self.id,
                         f"the job runs NCCL {version}; NCCL {first.release} lists a fix naming what the failure names: "
                         f"\"{first.text}\" ({first.source})" + (f"; also {more}" if more else ""),
                         banners[:1] + events[:1], f"fixed-in-{first.release}", extra_refs=crash_ref),
            advice=advice))
        return out
