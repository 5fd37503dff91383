"""One self-contained HTML file (jinja2, autoescaped): no external request of any kind.

`render(analysis)` works from the Analysis alone; `render(analysis, bundle_path=...)`
also re-reads a few lines around each cited line (see context.py).  The page is put
together here as plain objects, and the templates under templates/ only lay it out:

  report.html.j2     the page: head, CSP, navigation, sections
  _verdict.html.j2   verdict, explanation, fix, next commands, counter-evidence
  _evidence.html.j2  each cited line in context, linked to its timeline row
  _timeline.svg.j2   swimlanes (svg.py computes the geometry)
  _timeline.html.j2  filters, the SVG and the collapsed-row table
  _hang.html.j2      Flight Recorder grid per process group, ranks grouped by stack
  _stacks.html.j2    crashing thread first, frames grouped; core facts
  _artifacts.html.j2 every file of the bundle and what became of it
  report.css, report.js  inlined; the CSP allows exactly these two by hash

Bundle text is never marked safe: autoescape covers HTML and SVG, and `script_json`
covers the one JSON island.
"""
from __future__ import annotations

import base64
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from postmortem import __version__
from postmortem.model import Analysis, Artifact, ArtifactStatus, Ref
from postmortem.packaged import sha256   # hashlib's digests without importing OpenSSL (startup)
from postmortem.report import collectives_view, svg, timeline_view
from postmortem.report.context import Context, read_context
from postmortem.report.jsonout import SCHEMA, finding_json, ref_json
from postmortem.report.stacks_view import build_cores, build_stacks, describe_frame
from postmortem.report.timeline_view import Row, ranges, time_cell

MAX_EVIDENCE = 24          # cited lines shown (root first, then symptoms)
MAX_EVIDENCE_PER_SYMPTOM = 2
MAX_ARTIFACTS = 3000       # past this, only artifacts with a problem are listed (and the rest counted)
MAX_RANGES_CHARS = 200     # a row's rank ranges (`0-3,5,9`) past this are cut and the ranks counted

CATEGORY_LABEL = {"config": "Configuration", "comms": "Communication", "hardware": "Hardware", "unknown": "Unknown"}


@dataclass(frozen=True)
class EvidenceItem:
    number: int
    anchor: str
    ref: Ref
    why: str                           # "root" or the symptom's cause
    lines: list[tuple[int, str, bool]]  # (line number, text, is the cited line)
    row: Row | None                    # its timeline row, when the row is shown
    artifact_anchor: str | None


@dataclass(frozen=True)
class ArtifactRow:
    anchor: str
    artifact: Artifact
    problem: bool


def render(a: Analysis, bundle_path: Path | str | None = None, context: Context | None = None) -> str:
    if context is None and bundle_path is not None:
        context = read_context(Path(bundle_path), (ref for ref, _ in _cited_refs(a)))
    return _template().render(**page(a, context or {}))


def page(a: Analysis, context: Mapping[tuple[str, int], list[tuple[int, str]]]) -> dict[str, Any]:
    """Everything the templates show, as plain objects."""
    cited = _cited_refs(a)
    view = timeline_view.build(a, (r for r, _ in cited))
    artifacts, cut_artifacts = _artifact_rows(a.case.artifacts)
    artifact_anchor = {x.artifact.path: x.anchor for x in artifacts}
    evidence = _evidence(cited, context, view, artifact_anchor)
    css, js = _asset("report.css"), _asset("report.js")
    return {
        "a": a, "v": a.verdict, "version": __version__,
        "category_label": CATEGORY_LABEL.get(a.verdict.category.value, a.verdict.category.value),
        "evidence": evidence, "timeline": view, "svg": svg.layout(view),
        "svg_history": svg.history_layout(view),
        "stacks": build_stacks(a.case.stacks), "cores": build_cores(a.case.facts), "hang": collectives_view.build(a),
        "artifacts": artifacts, "cut_artifacts": cut_artifacts, "artifact_anchor": artifact_anchor,
        "css": _markup(css), "js": _markup(js), "csp": _csp(css, js), "data": _data(a),
        "time_cell": time_cell, "ranges": bounded_ranges, "describe_frame": describe_frame, "code_spans": code_spans,
    }


def _cited_refs(a: Analysis) -> list[tuple[Ref, str]]:
    """Each cited ref once, with why it is cited: the root's evidence, then each symptom's."""
    v = a.verdict
    out: list[tuple[Ref, str]] = []
    seen: set[tuple] = set()

    def add(r: Ref, why: str) -> None:
        key = timeline_view.ref_key(r)
        if key not in seen and len(out) < MAX_EVIDENCE:
            seen.add(key)
            out.append((r, why))

    for r in (v.root.evidence if v.root else ()):
        add(r, "root")
    for f in v.symptoms:
        for r in f.evidence[:MAX_EVIDENCE_PER_SYMPTOM]:
            add(r, f"symptom: {f.cause}")
    return out


def _evidence(cited, context, view, artifact_anchor) -> list[EvidenceItem]:
    items = []
    kept_rows = {r.number for r in view.rows}
    for n, (ref, why) in enumerate(cited, start=1):
        row = view.row_of_ref.get(timeline_view.ref_key(ref))
        if row is not None and row.number in kept_rows:
            row.evidence.append(n)
        else:
            row = None
        items.append(EvidenceItem(n, f"ev-{n}", ref, why, _lines(ref, context, row), row, artifact_anchor.get(ref.path)))
    return items


def _lines(ref: Ref, context, row: Row | None) -> list[tuple[int, str, bool]]:
    """The cited line with its neighbours when context was read, else the cited line alone.
    A byte offset in a core has no line: the event decoded from it stands in."""
    around = context.get((ref.path, ref.line)) if ref.line is not None else None
    if around:
        return [(n, text, n == ref.line) for n, text in around]
    if ref.line is not None or ref.text:
        return [(ref.line or 0, ref.text, True)]
    if row is not None:
        return [(0, row.first.text, True)]
    return []


def bounded_ranges(numbers) -> str:
    """A row's ranks as ranges; scattered ranks (every other one of 8,192) would make one cell
    tens of kilobytes, so past MAX_RANGES_CHARS the text is cut and the rank count said."""
    numbers = list(numbers)
    text = ranges(numbers)
    if len(text) <= MAX_RANGES_CHARS:
        return text
    return text[:text.rfind(",", 0, MAX_RANGES_CHARS)] + f",… ({len(set(numbers))} ranks)"


def _artifact_rows(artifacts: tuple[Artifact, ...]) -> tuple[list[ArtifactRow], int]:
    rows = []
    for n, x in enumerate(artifacts, start=1):
        problem = x.status is not ArtifactStatus.OK or bool(x.message) or x.unclaimed > 0
        if len(artifacts) <= MAX_ARTIFACTS or problem or n <= MAX_ARTIFACTS // 2:
            rows.append(ArtifactRow(f"art-{n}", x, problem))
    return rows, len(artifacts) - len(rows)


def code_spans(text: str) -> list[tuple[str, bool]]:
    """Knowledge text marks commands with `backticks`: split it into (text, is_code) parts."""
    parts = re.split(r"`([^`]+)`", text)
    return [(p, i % 2 == 1) for i, p in enumerate(parts) if p]


def _data(a: Analysis) -> dict[str, Any]:
    """The verdict as JSON, embedded for scripts and for anyone saving the page."""
    v = a.verdict
    return {"schema": SCHEMA, "bundle": a.case.name, "category": v.category.value, "cause": v.cause,
            "confidence": v.confidence, "signature": v.signature,
            "root": finding_json(v.root) if v.root else None,
            "evidence": [ref_json(r) for r in (v.root.evidence if v.root else ())]}


# ---------------------------------------------------------------------------- templates and safety

def script_json(value: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' that could close the element or open a
    comment, and no U+2028/9, which end a line in older JavaScript engines."""
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def _csp(css: str, js: str) -> str:
    """Nothing may load; only our own style and script run (by hash, so injected markup cannot)."""
    return ("default-src 'none'; "
            f"style-src '{_sha256(css)}'; script-src '{_sha256(js)}'; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(sha256(text.encode("utf-8")).digest()).decode("ascii")


@functools.lru_cache(maxsize=None)
def _asset(name: str) -> str:
    from postmortem.packaged import packaged

    return packaged("postmortem.report", "templates", name).read_text(encoding="utf-8")


# The templates compiled to Python ahead of time by tools/compile_templates.py (compiling
# them costs more than rendering a small report); used only while they were made from
# exactly these templates by this jinja2 version (see `compiled_templates`).
COMPILED = "templates_compiled"


@functools.lru_cache(maxsize=1)
def _template():
    return environment(compiled=True).get_template("report.html.j2")


def environment(compiled: bool = True):
    """The report's jinja2 environment: loading the precompiled templates when they are
    current, else compiling from templates/ (what tools/compile_templates.py compiles)."""
    from jinja2 import Environment, ModuleLoader, PackageLoader, StrictUndefined

    folder = compiled_templates() if compiled else None
    loader = ModuleLoader(str(folder)) if folder is not None else PackageLoader("postmortem.report", "templates")
    env = Environment(loader=loader, autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, finalize=_visible)
    env.filters["tojson"] = lambda value: _markup(script_json(value))
    env.filters["short"] = lambda text, width=160: _short(text, width)
    return env


def template_names() -> list[str]:
    from postmortem.packaged import packaged

    return sorted(p.name for p in packaged("postmortem.report", "templates").iterdir() if p.name.endswith(".j2"))


def templates_manifest() -> dict:
    """What the precompiled templates must have been made from: this jinja2, these texts."""
    import jinja2

    return {"jinja2": jinja2.__version__,
            "templates": {name: sha256(_asset(name).encode("utf-8")).hexdigest() for name in template_names()}}


def compiled_templates() -> Path | None:
    """The folder of precompiled templates, when it was made from the current templates by
    the installed jinja2 (a plain folder on disk: jinja2's ModuleLoader imports from a path)."""
    from postmortem.packaged import packaged

    folder = packaged("postmortem.report", COMPILED)
    manifest = folder.joinpath("manifest.json")
    if not isinstance(folder, Path) or not manifest.is_file():
        return None
    try:
        made = json.loads(manifest.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return folder if made == templates_manifest() else None


# Control characters in logs (ESC of colour codes, NUL, ...) shown as their Unicode
# "control pictures" (U+2400 + code, ␛ for ESC), so the reader sees they were there.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _visible(value: Any) -> Any:
    """jinja2 `finalize`: applied to every {{ value }} before escaping; our own Markup passes."""
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return _CONTROLS.sub(lambda m: "\u2421" if m[0] == "\x7f" else chr(0x2400 + ord(m[0])), value)
    return value


def _markup(text: str):
    from markupsafe import Markup

    return Markup(text)  # only for our own assets and script_json output, never for bundle text


def _short(text: str, width: int) -> str:
    text = text or ""
    return text if len(text) <= width else text[: width - 1] + "…"


def write(a: Analysis, out, options) -> None:
    """The registry's interface (postmortem.report.RENDERERS)."""
    out.write(render(a, bundle_path=options.bundle_path))
