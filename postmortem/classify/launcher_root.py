"""torchrun's "Root Cause (first observed failure)", weighed against the verdict.

torch.distributed.elastic's ChildFailedError names as root cause the failure with the
earliest error-file timestamp, or else the first its agent observed: the first process to
*exit*.  In a crash that is usually the crashing rank; in a timeout or hang it is a rank that
waited and gave up, while the rank that held the job up is still busy and is killed later
with SIGTERM (lab-torchrun-straggler-timeout: torchrun names rank 1, rank 0 was late).  So
the block is evidence to weigh: it is reported beside the verdict, with whether it names the
rank the verdict blames, and it never decides the verdict.
"""
from __future__ import annotations

import dataclasses
import posixpath

from postmortem.classify.index import events_of
from postmortem.knowledge.registry import KIND, deaths
from postmortem.model import Case, Event, LauncherRoot, Verdict


def first_observed_failure(case: Case) -> Event | None:
    """The launcher's root-cause entry (the earliest read, when several tables were logged).
    Each node's agent prints its own table, naming its own first exit: an entry for a rank whose
    own error is its peer ending (a close or reset, registry death 'peer') is that survivor's
    fallout, so another node's entry naming a rank that did not only lose its peer comes first
    (audit 13 M3: node0 names rank 0, exit 1 after gloo's reset; node1 names rank 1, SIGKILL)."""
    roots = [e for e in events_of(case, KIND.launcher_child_failed) if e.data.get("root")]
    if not roots:
        return None
    survivors = fallout_ranks(case)
    return min(roots, key=lambda e: (e.rank is not None and e.rank in survivors, e.seq))


def fallout_ranks(case: Case) -> frozenset[int]:
    """Ranks that printed their peer ending (registry death 'peer'): each saw another process die."""
    return frozenset(e.rank for e in events_of(case, deaths("peer")) if e.rank is not None)


def blamed_ranks(verdict: Verdict, case: Case) -> tuple[int, ...]:
    """The ranks the verdict blames: by name (a straggler, the rank behind in a hang), else the
    ranks its cited lines print (launcher lines aside: they would only cite the block itself)."""
    root = verdict.root
    if root is None:
        return ()
    if root.culprit_ranks:
        return root.culprit_ranks
    cited = {(r.path, r.line, r.offset) for r in root.evidence}
    paths = {path for path, _, _ in cited}
    ranks = [e.rank for e in case.events if e.ref.path in paths and (e.ref.path, e.ref.line, e.ref.offset) in cited
             and e.rank is not None and e.kind != KIND.launcher_child_failed]
    return tuple(dict.fromkeys(ranks))


def weigh(verdict: Verdict, case: Case) -> Verdict:
    e = first_observed_failure(case)
    if e is None:
        return verdict
    d = e.data
    what = f"rank {e.rank}" if e.rank is not None else "a process"
    how = f"exitcode {d.get('exitcode')}" + (f" ({d['signal']})" if d.get("signal") else "")
    said = f"torchrun's \"Root Cause (first observed failure)\" names {what} ({how}, {e.ref.describe()})"
    blamed = blamed_ranks(verdict, case)
    if e.rank is None or not blamed or verdict.cause == "unknown":
        agrees = None
        note = f"{said}: the first process its agent saw exit; nothing else in the bundle names a failing rank to weigh it against"
    elif e.rank in blamed:
        agrees = True
        note = f"{said}: the rank the verdict blames too"
    else:
        agrees = False
        named = ", ".join(str(r) for r in blamed)
        note = (f"{said}, but the verdict blames rank {named}: torchrun reports the first process to exit, "
                + ("which in a timeout is a rank that waited and gave up, not the one it waited for"
                   if verdict.root is not None and verdict.root.culprit_ranks else
                   "not the first to fail"))
    error_file = d.get("error_file")
    if error_file and not any(posixpath.basename(a.path) == posixpath.basename(error_file) for a in case.artifacts):
        note += f"; its error file {error_file} is not in the bundle"
    root = LauncherRoot(ref=e.ref, rank=e.rank, local_rank=_int(d.get("local_rank")), host=e.host, pid=e.pid,
                        exitcode=_int(d.get("exitcode")), signal=d.get("signal"), time=d.get("time"),
                        error_file=error_file, agrees=agrees, note=note)
    return dataclasses.replace(verdict, launcher_root=root, trace=verdict.trace + (f"launcher root: {note}",))


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
