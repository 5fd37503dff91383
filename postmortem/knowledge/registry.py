"""The signal registry: every signal the classifier may read, declared once.

A signal is one of
* an event kind a parser emits (`kernel.xid`), declared in signals.toml [kind.*];
* an event kind a message pattern emits (`msg.<id>`), declared by its entry in
  messages.toml (that entry is its registration: id, fields = the pattern's named
  groups, cause, role, strength, sample and source);
* a sign a rule derives from registered kinds and facts (`sigbus.core_in_shm`), declared
  in signals.toml [sign.*] with its cause, role, strength, weight and provenance.
signals.toml [threshold.*] holds every number a rule or the engine compares with.

Code refers to them only through the constants below (`KIND.kernel_xid`,
`SIGN.sigbus_core_in_shm`, `LIMIT.before_job_s`): an unknown name fails at import, and
tests/test_knowledge.py proves every name used in the code is registered.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Iterable

from postmortem.knowledge import ROLES, KnowledgeError, load, source

STRENGTHS = ("strong", "weak")
# How an event says a process died: of a fatal signal it names, by the launcher's record
# of its exit, of an uncaught exception, killed by the kernel, a shell/launcher line
# naming the signal, or -- `peer` -- another process's line saying its peer ended (the peer
# closed their connection in order: the kernel closes a dead process's sockets).
DEATHS = ("", "fatal_signal", "exit", "exception", "kernel_kill", "reported", "peer")
_ID = re.compile(r"(?<![a-z0-9_.])[a-z][a-z0-9_]*+(?:\.[a-z0-9_]++)+")


@dataclass(frozen=True, slots=True, eq=False)   # identity: one object per registered id
class Signal:
    id: str
    producer: str           # "parser:<name>", "pattern:messages.toml" or "rule:<rule id>"
    fields: tuple[str, ...]
    cause: str              # the cause it hints at ("" for context)
    role: str               # root | symptom | context
    strength: str           # strong (one is enough to claim) | weak (needs an independent second sign) | ""
    weight: float           # how much one such sign supports its cause (0 for context)
    provenance: str
    death: str = ""         # how this event says a process died ("" when it does not)
    params: dict = field(default_factory=dict)  # data the producing rule reads (lists of names, patterns)


@dataclass(frozen=True, slots=True)
class Limit:
    id: str
    value: float
    provenance: str


@dataclass(frozen=True, slots=True)
class Counter:
    id: str
    against: str            # the cause it speaks against ("*": whichever cause the check names)
    factor: float           # multiplies that cause's support
    provenance: str


@dataclass(frozen=True, slots=True)
class Registry:
    signals: dict[str, Signal]
    limits: dict[str, Limit]
    counters: dict[str, Counter]
    failures: dict[str, str] = field(default_factory=dict)   # signal id -> the failure it reads (signals.toml [failure])

    def kinds_with_death(self, *deaths: str) -> frozenset[str]:
        return frozenset(s.id for s in self.signals.values() if s.death and (not deaths or s.death in deaths))


def _from_messages() -> dict[str, Signal]:
    out = {}
    for m in load().messages:
        sid = f"msg.{m.id}"
        strength = m.strength if m.cause not in ("",) else ""
        out[sid] = Signal(sid, "pattern:messages.toml", m.fields, m.cause, m.role, strength,
                          m.weight, f"{m.source}; sample: {m.sample}", m.death)
    return out


def parse_signals(data: dict, causes: Iterable[str], origin: str = "signals.toml") -> Registry:
    causes = set(causes)
    signals: dict[str, Signal] = {}
    for table, producer_required in (("kind", True), ("sign", True)):
        for sid, e in data.get(table, {}).items():
            where = f"{origin} [{table}.\"{sid}\"]"
            if not _ID.fullmatch(sid):
                raise KnowledgeError(f"{where}: ids are dotted snake_case")
            producer = e.get("producer", "")
            if not producer or ":" not in producer:
                raise KnowledgeError(f"{where}: producer must be 'parser:<name>' or 'rule:<id>'")
            if table == "kind" and not producer.startswith("parser:"):
                raise KnowledgeError(f"{where}: an event kind is produced by one parser")
            if table == "sign" and not producer.startswith("rule:"):
                raise KnowledgeError(f"{where}: a derived sign is produced by one rule")
            cause, role = e.get("cause", ""), e.get("role", "context")
            strength, death = e.get("strength", ""), e.get("death", "")
            if role not in ROLES:
                raise KnowledgeError(f"{where}: role must be one of {ROLES}")
            if cause and cause not in causes:
                raise KnowledgeError(f"{where}: unknown cause '{cause}'")
            if cause and strength not in STRENGTHS:
                raise KnowledgeError(f"{where}: a signal with a cause needs strength strong or weak")
            if death not in DEATHS:
                raise KnowledgeError(f"{where}: death must be one of {DEATHS}")
            if not e.get("provenance"):
                raise KnowledgeError(f"{where}: provenance is required (upstream source or a real sample line)")
            weight = float(e.get("weight", 0.0))
            if cause and not 0 < weight < 1:
                raise KnowledgeError(f"{where}: weight must be in (0, 1)")
            if sid in signals:
                raise KnowledgeError(f"{where}: defined twice")
            signals[sid] = Signal(sid, producer, tuple(e.get("fields", ())), cause, role, strength, weight,
                                  e["provenance"], death, dict(e.get("params", {})))
    limits = {}
    for lid, e in data.get("threshold", {}).items():
        where = f"{origin} [threshold.{lid}]"
        if "value" not in e or not e.get("provenance"):
            raise KnowledgeError(f"{where}: value and provenance are required")
        limits[lid] = Limit(lid, float(e["value"]), e["provenance"])
    counters = {}
    for cid, e in data.get("counter", {}).items():
        where = f"{origin} [counter.{cid}]"
        against = e.get("against", "")
        if against != "*" and against not in causes:
            raise KnowledgeError(f"{where}: unknown cause '{against}'")
        if not 0 < float(e.get("factor", 0)) < 1 or not e.get("provenance"):
            raise KnowledgeError(f"{where}: factor in (0, 1) and provenance are required")
        counters[cid] = Counter(cid, against, float(e["factor"]), e["provenance"])
    failures: dict[str, str] = {}
    for fid, e in data.get("failure", {}).items():
        where = f"{origin} [failure.\"{fid}\"]"
        if not e.get("signals") or not e.get("provenance"):
            raise KnowledgeError(f"{where}: signals and provenance are required")
        for sid in e["signals"]:
            if sid in failures:
                raise KnowledgeError(f"{where}: {sid} already reads failure {failures[sid]}")
            failures[str(sid)] = fid
    return Registry(signals, limits, counters, failures)


@functools.lru_cache(maxsize=None)
def registry() -> Registry:
    k = load()
    reg = parse_signals(source("signals.toml"), k.causes)
    for sid, s in _from_messages().items():
        if sid in reg.signals:
            raise KnowledgeError(f"signals.toml: {sid} is declared both as a parser kind and a message pattern")
        reg.signals[sid] = s
    _check_single_producer(reg)
    return reg


def _check_single_producer(reg: Registry) -> None:
    """Two producers of one line's meaning are one too many: a message pattern may not
    declare that it reads what a parser kind already carries (`same_as`)."""
    for s in reg.signals.values():
        if s.producer.startswith("rule:") and s.death:
            raise KnowledgeError(f"signals.toml [sign.\"{s.id}\"]: a derived sign is never a process death")


def _same(i: str) -> str:
    return i


class _Names:
    """Attribute access to registered ids: `KIND.kernel_xid` -> "kernel.xid".  An unknown
    name raises at import time of the module that uses it."""

    def __init__(self, what: str, ids: Iterable[str], value=None) -> None:
        value = value or _same
        self._what = what
        self._by_name = {}
        for i in ids:
            name = i.replace(".", "_")
            if name in self._by_name:
                raise KnowledgeError(f"signals.toml: {i} and another id share the name {name}")
            self._by_name[name] = value(i)
        # Ids (not tunable values) as plain attributes too: rules read KIND.x once per event
        # (8 M lookups at 8,192 ranks); __getattr__ stays the fallback that names what is not
        # registered, and the only way to thresholds (tests adjust those in `_by_name`).
        if value is _same:
            self.__dict__.update({n: v for n, v in self._by_name.items() if not n.startswith("_") and n != "names"})

    def __getattr__(self, name: str):
        try:
            return self.__dict__["_by_name"][name]
        except KeyError:
            raise KnowledgeError(f"{self.__dict__['_what']} '{name}' is not registered in signals.toml") from None

    def names(self) -> set[str]:
        return set(self._by_name)


def _kinds() -> _Names:
    r = registry()
    return _Names("event kind", (s.id for s in r.signals.values() if not s.producer.startswith("rule:")))


def _signs() -> _Names:
    r = registry()
    return _Names("sign", (s.id for s in r.signals.values() if s.producer.startswith("rule:")),
                  lambda i: r.signals[i])


def _limits() -> _Names:
    r = registry()
    return _Names("threshold", r.limits, lambda i: r.limits[i].value)


def _counters() -> _Names:
    r = registry()
    return _Names("counter-evidence", r.counters, lambda i: r.counters[i])


KIND = _kinds()
SIGN = _signs()
LIMIT = _limits()
COUNTER = _counters()


def kind_signal(kind: str) -> Signal | None:
    return registry().signals.get(kind)


# Catalog entries (knowledge/catalogs, generated from the upstream sources) are registered
# signals too, one per entry and reading: producer `catalog:<catalog>`, strength by how
# specific the entry is (an exact upstream message with one reading is strong, a whole
# subsystem weak), weight from catalogs/readings.toml.
CATALOG_STRENGTH = {"specific": "strong", "subsystem": "weak"}


@functools.lru_cache(maxsize=None)
def source_labels() -> dict[str, str]:
    """The report's source label of an event by the first part of its kind (signals.toml [source])."""
    return {str(prefix): str(label) for prefix, label in source("signals.toml").get("source", {}).items()}


@functools.lru_cache(maxsize=None)
def _catalog_weights() -> dict[str, float]:
    return {name: float(e["weight"]) for name, e in source("catalogs/readings.toml")["strength"].items()}


@functools.lru_cache(maxsize=None)
def catalog_signal(catalog: str, entry_id: str, cause: str, specificity: str, why: str) -> Signal:
    """The registered signal of one catalog entry read as `cause` with `specificity`
    ('specific' | 'subsystem'); fails on a cause or a specificity the registry does not know."""
    if cause not in load().causes:
        raise KnowledgeError(f"catalog {catalog} entry {entry_id}: unknown cause '{cause}'")
    if specificity not in CATALOG_STRENGTH:
        raise KnowledgeError(f"catalog {catalog} entry {entry_id}: specificity '{specificity}' has no strength")
    return Signal(f"catalog.{entry_id}", f"catalog:{catalog}", (), cause, "root", CATALOG_STRENGTH[specificity],
                  _catalog_weights()[specificity], f"knowledge/catalogs/{catalog}.json: {why}")


def produced_by(producer: str) -> frozenset[str]:
    """The event kinds one parser emits (`produced_by("parser:launcher")`)."""
    return frozenset(s.id for s in registry().signals.values() if s.producer == producer)


def deaths(*how: str) -> frozenset[str]:
    """The event kinds that say a process died (signals.toml `death`), optionally only some ways."""
    return registry().kinds_with_death(*how)
