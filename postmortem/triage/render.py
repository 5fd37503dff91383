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
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("postmortem.triage", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    return env.get_template("index.html.j2").render(doc=doc, reports=_reports(doc))


def _reports(doc: dict[str, Any]) -> dict[str, str | None]:
    return {b["name"]: b["report"] for b in doc["bundles"]}


def _md(text: Any) -> str:
    # Bundle text inside a Markdown table cell: no pipes, no newlines, no backticks.
    return str(text).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def render_summary(doc: dict[str, Any]) -> str:
    t = doc["totals"]
    lines = [f"### postmortem triage: {t['bundles']} bundles, {t['groups']} groups",
             "",
             f"{t['new']} new, {t['gone']} gone, {t['hardware']} hardware, {t['unknown']} unknown, "
             f"{t['errors']} could not be analysed" + _baseline_note(doc),
             "",
             "| count | new | category | cause | signature | hosts | GPUs |",
             "|---:|:-:|---|---|---|---|---|"]
    for g in doc["groups"][:SUMMARY_GROUPS]:
        lines.append(f"| {g['count']} | {'new' if g['new'] else ''} | {g['category']} | {_md(g['cause'])} "
                     f"| `{_md(g['signature'])}` | {_md(', '.join(g['hosts'][:3]) or '-')} | {_md(g['gpu_spread'])} |")
    if len(doc["groups"]) > SUMMARY_GROUPS:
        lines.append(f"\n... and {len(doc['groups']) - SUMMARY_GROUPS} more groups in index.html")
    if doc["gone"]:
        lines += ["", "Gone since the baseline: " + ", ".join(f"`{_md(g['signature'])}`" for g in doc["gone"][:10])]
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
