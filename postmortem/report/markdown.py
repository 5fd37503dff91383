"""Markdown sized for a ticket body (under MAX_CHARS).

Knowledge text (explanation, fix, commands) is ours and written as Markdown.  Bundle
text (summaries quoting paths, cited lines, counter-evidence, the bundle name) is not:
in prose every active character is escaped, and cited lines go in code spans whose
fence is longer than any backtick run they hold (text.py).  Sections are added in order
of importance and the last ones are dropped when the budget runs out.
"""
from __future__ import annotations

from postmortem.model import Analysis
from postmortem.report.text import markdown_code, markdown_text

MAX_CHARS = 4000


def render(a: Analysis) -> str:
    v = a.verdict
    head = [f"## postmortem: {v.category.value} / `{v.cause}` (confidence {v.confidence:.2f})", "",
            f"Bundle {markdown_code(a.case.name, 80)}", "", markdown_text(v.summary, 400), ""]
    if v.explanation:
        head += [v.explanation, ""]
    from postmortem.report import collectives_view

    hang = collectives_view.summary(a)
    sections = [
        f"**Collectives**\n{markdown_text(hang, 900)}\n\n" if hang else "",
        _section("Evidence", [f"{markdown_code(r.describe(), 100)} {markdown_code(r.text, 180)}"
                              for r in (v.root.evidence[:6] if v.root else ())]),
        _section("Counter-evidence", [markdown_text(c, 200) for c in v.counter] or ["none found"]),
        _section("Fix", list(v.remediation)),
        _section("Confirm with", [f"`{s}`" for s in v.commands] + list(v.steps)),
        _section("Collect", list(v.collect)),
        _symptoms(a),
    ]
    tail = f"Signature: `{v.signature}`\n"
    out = "\n".join(head) + "\n"
    for section in sections:
        if section and len(out) + len(section) + len(tail) <= MAX_CHARS:
            out += section
    return out + tail


def _section(title: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"**{title}**\n" + "".join(f"- {item}\n" for item in items) + "\n"


def _symptoms(a: Analysis) -> str:
    symptoms = a.verdict.symptoms
    if not symptoms:
        return ""
    items = "".join(f"- {markdown_text(f.summary, 200)}\n" for f in symptoms[:8])
    return f"<details><summary>Symptoms ({len(symptoms)})</summary>\n\n{items}\n</details>\n\n"
