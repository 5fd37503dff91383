"""Markdown sized for a ticket body."""
from __future__ import annotations

from postmortem.model import Analysis
from postmortem.report.text import short


def _code(text: str) -> str:
    text = short(text, 200).replace("`", "ˋ")
    return f"`{text}`"


def render(a: Analysis) -> str:
    v = a.verdict
    out = [f"## postmortem: {v.category.value} / `{v.cause}` (confidence {v.confidence:.2f})", "",
           short(v.summary, 400), "", v.explanation, ""]
    if v.root and v.root.evidence:
        out.append("**Evidence**")
        out.extend(f"- {_code(r.describe())} {_code(r.text or '')}" for r in v.root.evidence[:6])
        out.append("")
    if v.counter:
        out.append("**Counter-evidence**")
        out.extend(f"- {short(c, 200)}" for c in v.counter)
        out.append("")
    if v.remediation:
        out.append("**Fix**")
        out.extend(f"- {r}" for r in v.remediation)
        out.append("")
    if v.next_steps:
        out.append("**Confirm with**")
        out.extend(f"- `{s}`" for s in v.next_steps)
        out.append("")
    if v.collect:
        out.append("**Collect**")
        out.extend(f"- {c}" for c in v.collect)
        out.append("")
    if v.symptoms:
        out.append(f"<details><summary>Symptoms ({len(v.symptoms)})</summary>\n")
        out.extend(f"- {short(f.summary, 200)}" for f in v.symptoms[:10])
        out.append("\n</details>\n")
    out.append(f"Signature: `{v.signature}`")
    return "\n".join(out) + "\n"
