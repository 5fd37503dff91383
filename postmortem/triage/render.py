"""The triage outputs: index.html (self-contained, autoescaped), triage.json, summary.md."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SUMMARY_GROUPS = 10   # groups listed in summary.md (a chat message, a CI step summary)


def write_all(doc: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "triage.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "index.html").write_text(render_index(doc), encoding="utf-8")
    (out / "summary.md").write_text(render_summary(doc), encoding="utf-8")


def write_report(out: Path, name: str, html: str) -> None:
    folder = out / "bundles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.html").write_text(html, encoding="utf-8")


def render_index(doc: dict[str, Any]) -> str:
    """One self-contained page: its style and script inline and allowed by hash (CSP), so
    nothing loads and no injected markup can run."""
    from collections import Counter
    from importlib.resources import files

    from jinja2 import Environment, PackageLoader, select_autoescape
    from markupsafe import Markup

    from postmortem.report.html import _sha256

    env = Environment(loader=PackageLoader("postmortem.triage", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    css = files("postmortem.triage").joinpath("templates", "index.css").read_text(encoding="utf-8")
    js = files("postmortem.triage").joinpath("templates", "index.js").read_text(encoding="utf-8")
    csp = (f"default-src 'none'; style-src '{_sha256(css)}'; script-src '{_sha256(js)}'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    groups = doc["groups"]
    categories = sorted(Counter(g["category"] for g in groups).items())
    statuses = Counter("regressed" if g.get("regressed") else "new" if g["new"] else "ongoing" for g in groups)
    return env.get_template("index.html.j2").render(
        doc=doc, reports=_reports(doc), css=Markup(css), js=Markup(js), csp=csp, categories=categories,
        statuses=[(s, statuses[s]) for s in ("regressed", "new", "ongoing") if statuses[s]])


def _reports(doc: dict[str, Any]) -> dict[str, str | None]:
    return {b["name"]: b["report"] for b in doc["bundles"]}


def _md(text: Any) -> str:
    """Bundle text inside a Markdown table cell or list item: every active character
    escaped (report/text.py), no pipes, no newlines."""
    from postmortem.report.text import markdown_text

    return markdown_text(str(text), 300)


def _code(text: Any) -> str:
    from postmortem.report.text import markdown_code

    return markdown_code(str(text), 300).replace("|", "\\|") or "-"


def _status(g: dict[str, Any]) -> str:
    return "regressed" if g.get("regressed") else "new" if g["new"] else ""


def _day(iso: str | None) -> str:
    return iso[:16].replace("T", " ") if iso else "-"


def render_summary(doc: dict[str, Any]) -> str:
    """An issue list for a chat message or a CI step summary: every new and regressed group
    (never cut), then the largest others, then the roll-up by cause with its signatures."""
    t = doc["totals"]
    lines = [f"### postmortem triage: {t['bundles']} bundles, {t['groups']} groups",
             "",
             f"{t.get('regressed', 0)} regressed, {t['new']} new, {t['gone']} gone, {t['hardware']} hardware, "
             f"{t['unknown']} unknown, {t.get('timeouts', 0)} over the time budget, "
             f"{t['errors']} could not be analysed" + _baseline_note(doc),
             "",
             "| status | count | first seen | last seen | category | cause | signature | hosts | GPUs |",
             "|:-:|---:|---|---|---|---|---|---|---|"]
    groups = doc["groups"]
    flagged = [g for g in groups if g["new"] or g.get("regressed")]
    others = [g for g in groups if not (g["new"] or g.get("regressed"))]
    shown = flagged + others[:max(0, SUMMARY_GROUPS - len(flagged))]
    for g in shown:
        lines.append(f"| {_status(g)} | {g['count']} | {_day(g['first_seen'])} | {_day(g['last_seen'])} "
                     f"| {g['category']} | {_md(g['cause'])} | {_code(g['signature'])} "
                     f"| {_md(', '.join(g['hosts'][:3]) or '-')} | {_md(g['gpu_spread'])} |")
    if len(groups) > len(shown):
        lines.append(f"\n... and {len(groups) - len(shown)} more groups (none new or regressed) in index.html")
    causes = doc.get("causes") or []
    if causes:
        lines += ["", "**By cause**", ""]
        for c in causes:
            flags = ", ".join(f"{n} {word}" for n, word in ((c["regressed"], "regressed"), (c["new"], "new")) if n)
            lines.append(f"- {c['category']} / {_md(c['cause'])}: {c['count']} bundles in "
                         f"{len(c['signatures'])} signature(s)" + (f" ({flags})" if flags else "")
                         + (f", crashed {_day(c['first_seen'])} to {_day(c['last_seen'])}" if c["first_seen"]
                            else ", crash times unknown"))
            lines.extend(f"  - {_code(s)}" for s in c["signatures"][:8])
            if len(c["signatures"]) > 8:
                lines.append(f"  - ... {len(c['signatures']) - 8} more")
    if doc["gone"]:
        lines += ["", "Gone since the baseline: " + ", ".join(_code(g['signature']) for g in doc["gone"][:10])]
    lemons = [n for n in doc["lemon_nodes"] if n["repeated"]]
    if lemons:
        lines += ["", "Lemon nodes (repeated hardware verdicts): " +
                  ", ".join(f"{_md(n['host'])} ({n['hardware_bundles']})" for n in lemons)]
    return "\n".join(lines) + "\n"


def _baseline_note(doc: dict[str, Any]) -> str:
    b = doc["baseline"]
    if b is None:
        return " (no baseline: every group counts as new)."
    if not b["comparable"]:
        return (f" (baseline used signature scheme {b['signature_scheme']}, this run {doc['signature_scheme']}:"
                " groups are not comparable).")
    return "."
