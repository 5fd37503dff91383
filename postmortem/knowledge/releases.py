"""NCCL's release history (catalogs/nccl_releases.json, tools/catalogs/gen_nccl_releases.py):
which later release lists a fix naming what a failure's lines name.

Both sides are read with the catalog's own vocabulary (its `identifiers` and `components`
tables): a fix item and a failure line match when they name the same NCCL_* variable, nccl*
function, source file, quoted text or component of NCCL (IB, shm, proxy, topology ...).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from postmortem.packaged import packaged

# The catalog's subsystems of a WARN's source file (catalogs/nccl.json file_rules) that are
# components of the release notes' vocabulary.
_SUBSYSTEM_COMPONENT = {"ib": "ib", "socket": "socket", "net_plugin": "plugin", "nvls": "nvls", "p2p": "p2p",
                        "shm": "shm", "topology": "topology", "proxy": "proxy", "gdr": "gdr", "nvml": "nvml",
                        "ras": "ras"}


@dataclass(frozen=True)
class Fix:
    release: str      # the first release that ships it, e.g. "2.19.3"
    text: str         # the notes item or the fix commit's subject
    source: str       # "release notes" or "commit <hash>"
    named: tuple[str, ...]  # what it names that the failure's lines name too ("component:shm")


@functools.lru_cache(maxsize=None)
def _data() -> dict:
    return json.loads(packaged("postmortem.knowledge", "catalogs", "nccl_releases.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _rules() -> tuple[tuple[tuple[str, re.Pattern[str]], ...], tuple[tuple[str, re.Pattern[str]], ...]]:
    d = _data()
    cased = set(d["cased"])
    ids = tuple((k, re.compile(rx)) for k, rx in d["identifiers"].items() if k != "issue")  # a log line names no issue
    comps = tuple((c, re.compile(rx, 0 if c in cased else re.I)) for c, rx in d["components"].items())
    return ids, comps


def vkey(version: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version or "")
    return tuple(int(x) for x in m.groups()) if m else ()


# What every c10d / NCCL error line carries whatever failed: names nothing about the failure.
_BOILERPLATE = re.compile(r"NCCL error in: \S+|\(run with NCCL_DEBUG=INFO for details\)|NCCL version \S+|"
                          r"\bnccl(?:Success|InProgress|\w*Error|Invalid\w*)\b")


@functools.lru_cache(maxsize=None)
def _error_strings() -> re.Pattern[str]:
    """ncclGetErrorString's and cudaGetErrorString's texts (catalogs/nccl.json results,
    catalogs/cuda.json): every failure of that result prints them, so they name no bug (audit 10 L1)."""
    from postmortem.knowledge import catalog  # the catalogs as already read and cached

    texts: set[str] = set()
    for name in ("nccl", "cuda"):
        d = catalog.data(name)
        for e in d.get("results", []) + d.get("entries", []):
            for t in [e.get("message") or ""] + list(e.get("older_messages") or ()):
                t = t.split(" (run with NCCL_DEBUG")[0].strip()
                if len(t) >= 4 and e.get("id", "").startswith(("ncclresult.", "cuda.")):
                    texts.add(t)
    return re.compile("|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True)), re.I)


def identifiers_in(text: str, subsystem: str = "", file: str = "") -> frozenset[str]:
    """What one failure line names, as "kind:value" (lower case), by the catalog's rule; the
    error wrapper's own words (ncclResult_t names and texts, CUDA's error texts, the NCCL_DEBUG
    hint, c10d's source file) name nothing."""
    ids, comps = _rules()
    text = _error_strings().sub(" ", _BOILERPLATE.sub(" ", text))
    out: set[str] = set()
    for kind, rx in ids:
        for m in rx.finditer(text):
            g = next((x for x in m.groups() if x), None) if m.groups() else None
            value = (g or m.group(0))
            if kind == "file":
                value = value.rsplit("/", 1)[-1]
            if kind == "quoted" and not re.search(r"[A-Za-z0-9]{2}", value):
                continue   # what is left of a quoted error text once its words are gone
            out.add(f"{kind}:{value.lower()}")
    out.update(f"component:{c}" for c, rx in comps if rx.search(text))
    if subsystem in _SUBSYSTEM_COMPONENT:
        out.add(f"component:{_SUBSYSTEM_COMPONENT[subsystem]}")
    if file:
        out.add(f"file:{file.rsplit('/', 1)[-1].lower()}")
    return frozenset(out)


def _fix_ids(fix: dict) -> frozenset[str]:
    return frozenset(f"{k}:{v.lower()}" for k, vs in fix["ids"].items() for v in vs)


def fixes_after(version: str, named: frozenset[str]) -> list[Fix]:
    """The fixes of releases strictly newer than `version` whose items name something the
    failure's lines name, oldest release first.  [] for a version the history does not know
    (a newer one than the catalog's, or no version at all)."""
    have = vkey(version)
    if not have or not named:
        return []
    out: list[Fix] = []
    for r in _data()["releases"]:
        if vkey(r["version"]) <= have:
            continue
        for f in r["fixes"]:
            both = sorted(_fix_ids(f) & named)
            if both:
                out.append(Fix(r["version"], f["text"], f["source"], tuple(both)))
    return out


@functools.lru_cache(maxsize=None)
def _series_naming() -> dict[str, frozenset[tuple[int, ...]]]:
    """name -> the minor release series (major, minor) whose fixes name it."""
    out: dict[str, set[tuple[int, ...]]] = {}
    for r in _data()["releases"]:
        series = vkey(r["version"])[:2]
        for f in r["fixes"]:
            for name in _fix_ids(f):
                out.setdefault(name, set()).add(series)
    return {k: frozenset(v) for k, v in out.items()}


def names_one_bug(name: str, version: str, window: int) -> bool:
    """Does a fix naming `name` say the job's NCCL had THAT bug?  Only when every fix that names
    it is in one minor series and the job's release is of that series or of the `window` series
    before it.  A component word, a source file (a file holds many bugs; a commit body mentions
    files in passing: audit 10 M1, 'topo.cc' in 2.30.7's vNIC fix) or a name fixed again and
    again over many series (ncclCommAbort: 2.16 to 2.27) says no more than 'not the newest NCCL'
    -- the version number alone."""
    if name.startswith(("component:", "file:")):
        return False
    series = _series_naming().get(name, frozenset())
    have = vkey(version)[:2]
    if len(series) != 1 or len(have) != 2:
        return False
    (major, minor), = series
    return have[0] == major and minor - window <= have[1] <= minor


def newest() -> str:
    return _data()["releases"][-1]["version"]
