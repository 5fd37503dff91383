"""The JSON verdict, schema `postmortem.verdict/1` (documented in docs/json-schema.md).

Field names here are a contract: extend, never rename or drop.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from postmortem import __version__
from postmortem.model import Analysis, Artifact, ArtifactStatus, Event, Fact, Finding, Ref, Severity, Stack
from postmortem.report.rows import Digest, digest, lane_of, row_key, timeline_rows

SCHEMA = "postmortem.verdict/1"


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t else None


def ref_json(r: Ref) -> dict[str, Any]:
    return {"artifact": r.path, "line": r.line, "offset": r.offset, "record": r.record, "text": r.text}


def _leaning_json(v) -> dict[str, Any] | None:
    """An unknown verdict's lean: the cause its evidence points at without enough to claim."""
    if not v.leaning:
        return None
    category = next((f.category.value for f in v.alternatives if f.cause == v.leaning), None)
    return {"cause": v.leaning, "category": category, "support": v.leaning_support}


def finding_json(f: Finding) -> dict[str, Any]:
    return {"cause": f.cause, "category": f.category.value, "confidence": f.confidence, "rule": f.rule,
            "role": f.role, "summary": f.summary, "discriminator": f.discriminator,
            "first_ts": _iso(f.first_at), "culprit_ranks": list(f.culprit_ranks), "evidence": [ref_json(r) for r in f.evidence]}


def event_json(e: Event) -> dict[str, Any]:
    w = e.when
    return {
        "ts": _iso(w.at) if w else None,
        "ts_basis": w.basis.value if w else "order-only",
        "uncertainty_s": w.uncertainty_s if w else None,
        "ts_note": w.note if w else "no time printed",
        "source": e.ref.path, "line": e.ref.line, "host": e.host, "pid": e.pid, "tid": e.tid,
        "rank": e.rank, "lane": lane_of(e), "kind": e.kind, "severity": e.severity.value, "text": e.text,
        "data": {k: v for k, v in e.data.items() if isinstance(v, (str, int, float, bool, list, type(None)))},
    }


def stack_json(s: Stack) -> dict[str, Any]:
    return {"origin": s.origin, "artifact": s.ref.path, "line": s.ref.line, "offset": s.ref.offset,
            "thread": s.thread, "crashed": s.crashed, "host": s.host, "pid": s.pid, "tid": s.tid,
            "rank": s.rank, "title": s.title,
            "frames": [{"function": f.function, "module": f.module, "file": f.file, "line": f.line,
                        "address": hex(f.address) if f.address is not None else None,
                        "offset": hex(f.offset) if f.offset is not None else None,
                        "language": f.language, "note": f.note} for f in s.frames]}


def fact_json(f: Fact) -> dict[str, Any]:
    value = f.value if isinstance(f.value, (str, int, float, bool, type(None))) else str(f.value)
    return {"name": f.name, "value": value, "unit": f.unit, "text": f.text, "host": f.host,
            "artifact": f.ref.path, "line": f.ref.line, "offset": f.ref.offset}


def artifact_json(a: Artifact) -> dict[str, Any]:
    return {"path": a.path, "kind": a.kind, "parser": ",".join(a.parsers) or None, "parsers": list(a.parsers),
            "status": a.status.value, "message": a.message, "size": a.size, "lines": a.lines,
            "unclaimed": a.unclaimed, "host": a.host}


# The JSON is bounded whatever the bundle's size: past MAX_TIMELINE_EVENTS events, each
# timeline row lists its first MAX_EVENTS_PER_ROW events (cited ones always), and the rest
# are counted in `timeline_omitted`; timeline_rows carries every row's full count.
MAX_TIMELINE_EVENTS = 20_000
MAX_EVENTS_PER_ROW = 64
MAX_ROWS = 20_000          # past this, rows without a warning, an error or a cited line are counted
# A row's ranks[], hosts[] and sources[] and the top-level artifacts[] grow with the number of
# files (12 MB of JSON at 8,192 ranks): each lists its first MAX_LIST_ENTRIES entries, plus every
# entry a cited line needs (and, for artifacts, the first MAX_LIST_ENTRIES with a problem); the
# rest are counted in `<list>_omitted`, a field present only when something was left out.
MAX_LIST_ENTRIES = 64


def _cited(a: Analysis) -> set[tuple[str, int | None]]:
    v = a.verdict
    findings = ([v.root] if v.root else []) + list(v.symptoms) + list(v.alternatives)
    return {(r.path, r.line) for f in findings for r in f.evidence}


def listed_events(events: list[Event] | Digest, cited: set, keys: list[tuple] | None = None) -> tuple[list[Event], int]:
    """The events the JSON timeline lists (in order) and how many it leaves out.  `events`:
    a Digest, or events in timeline order (`keys`: their row_key()s, when known)."""
    d = events if isinstance(events, Digest) else None
    all_events = d.events if d is not None else events
    # Copies folded into one event (fold.py) are not listed one by one either.
    folded = sum(map(len, d.folded().values())) if d is not None else 0
    if len(all_events) + folded <= MAX_TIMELINE_EVENTS:   # the bundle's events, folded copies included
        return list(all_events), folded
    if d is None:
        per_row: dict[tuple, int] = {}
        keep = []
        for i, e in enumerate(events):
            key = keys[i] if keys is not None else row_key(e)
            n = per_row.get(key, 0)
            per_row[key] = n + 1
            if n < MAX_EVENTS_PER_ROW or (e.ref.path, e.ref.line) in cited:
                keep.append(e)
    else:
        first = d.first_events(MAX_EVENTS_PER_ROW)
        keep = [all_events[i] for i in sorted(set(first).union(_cited_events(all_events, cited)))]
    if len(keep) > MAX_TIMELINE_EVENTS:  # many distinct rows: cited and severe first, then in order
        ranked = sorted(range(len(keep)), key=lambda i: (
            (keep[i].ref.path, keep[i].ref.line) not in cited,
            keep[i].severity not in (Severity.ERROR, Severity.FATAL, Severity.WARNING), i))
        chosen = sorted(ranked[:MAX_TIMELINE_EVENTS])
        keep = [keep[i] for i in chosen]
    return keep, len(all_events) - len(keep) + folded


def _cited_events(events: list[Event], cited: set) -> list[int]:
    """Indices of the events on a cited (path, line)."""
    paths = {path for path, _ in cited}
    return [i for i, e in enumerate(events) if e.ref.path in paths and (e.ref.path, e.ref.line) in cited]


def listed_rows(rows: list[dict[str, Any]], cited: set) -> tuple[list[dict[str, Any]], int]:
    """The rows the JSON lists: all of them up to MAX_ROWS; past that every loud or cited
    row and the first quiet ones, in order.  Returns them and how many were left out."""
    if len(rows) <= MAX_ROWS:
        return rows, 0
    def loud(r) -> bool:
        return r["severity"] in ("warning", "error", "fatal") or (r["first_source"], r["first_line"]) in cited
    quiet = MAX_ROWS - sum(1 for r in rows if loud(r))
    kept = []
    for r in rows:
        if loud(r):
            kept.append(r)
        elif quiet > 0:
            quiet -= 1
            kept.append(r)
    return kept, len(rows) - len(kept)


class _Needed:
    """The entries a cut list must keep: the cited artifacts, and the ranks and hosts of the
    findings, the launcher's root and the events on cited lines (found once, when first asked)."""

    def __init__(self, a: Analysis, d: Digest, cited: set) -> None:
        self.a, self.d, self.cited = a, d, cited
        self.sources = {path for path, _ in cited}
        self._who: tuple[set, set] | None = None

    def who(self) -> tuple[set, set]:
        if self._who is None:
            v, ev = self.a.verdict, self.d.events
            findings = ([v.root] if v.root else []) + list(v.symptoms) + list(v.alternatives)
            cited_events = [ev[i] for i in _cited_events(ev, self.cited)]
            ranks = {r for f in findings for r in f.culprit_ranks} | {e.rank for e in cited_events}
            hosts = {e.host for e in cited_events}
            if v.launcher_root is not None:
                ranks.add(v.launcher_root.rank)
                hosts.add(v.launcher_root.host)
            self._who = ranks - {None}, hosts - {None, ""}
        return self._who


def cut_list(values: list, needed) -> tuple[list, int]:
    """The first MAX_LIST_ENTRIES values and every later one that is `needed` (a set, or a
    function giving one), in order; and how many were left out."""
    if len(values) <= MAX_LIST_ENTRIES:
        return values, 0
    needed = needed() if callable(needed) else needed
    kept = values[:MAX_LIST_ENTRIES] + [x for x in values[MAX_LIST_ENTRIES:] if x in needed]
    return kept, len(values) - len(kept)


def bounded_row(row: dict[str, Any], needed: _Needed) -> dict[str, Any]:
    """A timeline row with its ranks, hosts and sources cut (`ranks_omitted` ... after each
    list that was cut); a row within the bound is returned as it is."""
    if all(len(row[k]) <= MAX_LIST_ENTRIES for k in ("ranks", "hosts", "sources")):
        return row
    wanted = {"ranks": lambda: needed.who()[0], "hosts": lambda: needed.who()[1], "sources": needed.sources}
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key not in wanted:
            out[key] = value
            continue
        out[key], omitted = cut_list(value, wanted[key])
        if omitted:
            out[key + "_omitted"] = omitted
    return out


def listed_artifacts(artifacts: tuple[Artifact, ...] | list[Artifact], cited_paths: set[str]) -> tuple[list[Artifact], int]:
    """The artifacts the JSON lists: the first MAX_LIST_ENTRIES, every cited one and the first
    MAX_LIST_ENTRIES with a problem (not read, or read with a message), in order."""
    if len(artifacts) <= MAX_LIST_ENTRIES:
        return list(artifacts), 0
    kept, problems = [], 0
    for n, x in enumerate(artifacts):
        if n < MAX_LIST_ENTRIES or x.path in cited_paths:
            kept.append(x)
        elif problems < MAX_LIST_ENTRIES and (x.status is not ArtifactStatus.OK or x.message):
            kept.append(x)
            problems += 1
    return kept, len(artifacts) - len(kept)


def launcher_root_json(r) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"rank": r.rank, "local_rank": r.local_rank, "host": r.host, "pid": r.pid, "exitcode": r.exitcode,
            "signal": r.signal, "time": r.time, "error_file": r.error_file, "agrees": r.agrees, "note": r.note,
            "evidence": ref_json(r.ref)}


def to_dict(a: Analysis) -> dict[str, Any]:
    """The whole JSON document as one dict (small bundles, tests); `chunks` streams it."""
    doc = _fields(a)
    return {key: list(value) if isinstance(value, _Items) else value for key, value in doc.items()}


class _Items:
    """A top-level list produced item by item, so the big ones are never held whole."""

    def __init__(self, make, items) -> None:
        self.make, self.items = make, items

    def __iter__(self):
        return (self.make(x) for x in self.items)

    def __bool__(self) -> bool:
        return bool(self.items)


def _fields(a: Analysis) -> dict[str, Any]:
    v = a.verdict
    rows_of = digest(a.case.events)   # shared with the HTML and terminal renderers
    cited = _cited(a)
    rows, rows_omitted = listed_rows(timeline_rows(rows_of), cited)
    needed = _Needed(a, rows_of, cited)
    rows = [bounded_row(r, needed) for r in rows]
    listed, omitted = listed_events(rows_of, cited)
    artifacts, artifacts_omitted = listed_artifacts(a.case.artifacts, needed.sources)
    doc = {
        "schema": SCHEMA,
        "tool": {"name": "postmortem", "version": __version__},
        "bundle": a.case.name,
        "verdict": {
            "category": v.category.value, "cause": v.cause, "title": v.title, "confidence": v.confidence,
            "summary": v.summary, "explanation": v.explanation,
            "evidence": [ref_json(r) for r in (v.root.evidence if v.root else ())],
            "root": finding_json(v.root) if v.root else None,
            "symptoms": [finding_json(f) for f in v.symptoms],
            "alternatives": [finding_json(f) for f in v.alternatives],
            "counter_evidence": list(v.counter_evidence),
            "remediation": list(v.remediation), "next_steps": list(v.next_steps),
            "commands": list(v.commands), "steps": list(v.steps),
            "collect": list(v.collect),
            "launcher_root": launcher_root_json(v.launcher_root),
            "leaning": _leaning_json(v),
        },
        "signature": v.signature,
        "timeline_notes": list(a.timeline_notes),
        "limits": list(a.limits),
        "hosts": list(a.hosts),
        "timeline": _Items(event_json, listed),
        "timeline_omitted": omitted,
        "timeline_rows": rows,
        "timeline_rows_omitted": rows_omitted,
        "stacks": _Items(stack_json, a.case.stacks),
        "facts": _Items(fact_json, a.case.facts),
        "artifacts": _Items(artifact_json, artifacts),
    }
    if artifacts_omitted:   # only when the list was cut, so every smaller report is unchanged
        doc["artifacts_omitted"] = artifacts_omitted
    doc["trace"] = list(v.trace)
    return doc


def render(a: Analysis) -> str:
    return "".join(chunks(a))


def chunks(a: Analysis):
    """The JSON text in pieces: each top-level field, and each item of a top-level list,
    on its own line, encoded compactly by json's C encoder (`indent` would switch to the
    pure-Python one, which is many times slower and holds the whole tree of strings on
    big bundles).  List items are made and encoded one at a time."""
    encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
    yield "{"
    for n, (key, value) in enumerate(_fields(a).items()):
        yield ("\n  " if n == 0 else ",\n  ") + encode(key) + ": "
        if isinstance(value, (list, _Items)) and value:
            sep = "[\n    "
            for item in value:
                yield sep + encode(item)
                sep = ",\n    "
            yield "\n  ]"
        elif isinstance(value, _Items):
            yield "[]"   # an empty list (an _Items is no JSON value of its own)
        else:
            yield encode(value)
    yield "\n}"


def write(a: Analysis, out, options) -> None:
    """The registry's interface (postmortem.report.RENDERERS)."""
    for part in chunks(a):
        out.write(part)
    out.write("\n")
