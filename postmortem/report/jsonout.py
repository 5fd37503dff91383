"""The JSON verdict, schema `postmortem.verdict/1` (documented in docs/json-schema.md).

Field names here are a contract: extend, never rename or drop.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from postmortem import __version__
from postmortem.model import Analysis, Artifact, Event, Fact, Finding, Ref, Stack
from postmortem.report.rows import shown_events, timeline_rows
from postmortem.report.timeline_view import lane_of
from postmortem.timeline import sort_key

SCHEMA = "postmortem.verdict/1"


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t else None


def ref_json(r: Ref) -> dict[str, Any]:
    return {"artifact": r.path, "line": r.line, "offset": r.offset, "record": r.record, "text": r.text}


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


def launcher_root_json(r) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"rank": r.rank, "local_rank": r.local_rank, "host": r.host, "pid": r.pid, "exitcode": r.exitcode,
            "signal": r.signal, "time": r.time, "error_file": r.error_file, "agrees": r.agrees, "note": r.note,
            "evidence": ref_json(r.ref)}


def to_dict(a: Analysis) -> dict[str, Any]:
    v = a.verdict
    events = sorted(shown_events(a.case.events), key=sort_key)
    return {
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
        },
        "signature": v.signature,
        "timeline_notes": list(a.timeline_notes),
        "limits": list(a.limits),
        "hosts": list(a.hosts),
        "timeline": [event_json(e) for e in events],
        "timeline_rows": timeline_rows(events),
        "stacks": [stack_json(s) for s in a.case.stacks],
        "facts": [fact_json(f) for f in a.case.facts],
        "artifacts": [artifact_json(x) for x in a.case.artifacts],
        "trace": list(v.trace),
    }


def render(a: Analysis) -> str:
    return "".join(chunks(a))


def chunks(a: Analysis):
    """The JSON text in pieces: each top-level field, and each item of a top-level list,
    on its own line, encoded compactly by json's C encoder (`indent` would switch to the
    pure-Python one, which is many times slower and holds the whole tree of strings on
    big bundles)."""
    doc = to_dict(a)
    encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
    yield "{"
    for n, (key, value) in enumerate(doc.items()):
        yield ("\n  " if n == 0 else ",\n  ") + encode(key) + ": "
        if isinstance(value, list) and value:
            yield "[\n    " + ",\n    ".join(encode(item) for item in value) + "\n  ]"
        else:
            yield encode(value)
    yield "\n}"


def write(a: Analysis, out, options) -> None:
    """The registry's interface (postmortem.report.RENDERERS)."""
    for part in chunks(a):
        out.write(part)
    out.write("\n")
