"""Markdown sized for a ticket body (under MAX_CHARS).

It leads with what a ticket needs first: the verdict in words, the host, the crash time
and the report's name; then the evidence (each distinct line once, with a count), the
fix and the commands.  Knowledge text (explanation, fix, steps) is ours and written as
Markdown.  Bundle text is not, and reaches the page through one of three functions of
text.py only: `markdown_text` (prose: every active character escaped, autolinks
included), `markdown_code` (a code span whose fence is longer than any backtick run
inside) or `markdown_block` (a fenced block, for lists of bundle text such as the unknown
verdict's Collect list).  Sections are added in order of importance and the last ones
are dropped when the budget runs out.
"""
from __future__ import annotations

import re

from postmortem.model import Analysis
from postmortem.report.text import markdown_block, markdown_code, markdown_text

MAX_CHARS = 4000


def render(a: Analysis, report: str | None = None) -> str:
    from postmortem.report.terminal import crash_time, failing_rank, failing_stack, headline

    v = a.verdict
    head = [f"## postmortem: {v.category.value} / `{v.cause}` (confidence {v.confidence:.2f})"
            + (f" — {markdown_text(v.title, 120)}" if v.title else ""), "",
            markdown_text(headline(a).removeprefix(v.title or "\0").removeprefix(": ") or v.summary, 400), ""]
    s = failing_stack(a)
    host = (s.host if s else None) or ", ".join(a.hosts[:4])
    facts = [("host", markdown_code(host, 80) if host else "not named in the bundle"),
             ("crash time", markdown_text(re.sub(r"\.\d+", "", crash_time(a)).replace("T", " "), 40) if crash_time(a) else "not known"),
             ("bundle", markdown_code(a.case.name, 80))]
    rank = failing_rank(a)
    if rank is not None:
        facts.insert(1, ("rank", str(rank)))
    if report:
        facts.append(("report", markdown_code(report, 120)))
    head += [" · ".join(f"**{k}** {val}" for k, val in facts), ""]
    head += [f"> **Note:** {markdown_text(note, 300)}" for note in a.limits] + ([""] if a.limits else [])
    from postmortem.report import collectives_view

    hang = collectives_view.summary(a)
    sections = [
        f"**Collectives**\n\n{markdown_text(hang, 900)}\n\n" if hang else "",
        _evidence(a),
        _stack(a),
        _section("Fix", list(v.remediation)),
        _commands(a),
        _collect(a),
        _section("Counter-evidence", [markdown_text(c, 200) for c in v.counter_evidence]),
        _section("Launcher's root cause (weighed, not taken)",
                 [markdown_text(v.launcher_root.note, 400)] if v.launcher_root else []),
        _symptoms(a),
    ]
    tail = f"Signature: {markdown_code(v.signature, 300)}\n"
    out = "\n".join(head) + "\n"
    for section in sections:
        if section and len(out) + len(section) + len(tail) <= MAX_CHARS:
            out += section
    return out + tail


def write(a: Analysis, out, options) -> None:
    """The registry's interface (postmortem.report.RENDERERS)."""
    out.write(render(a, report=options.report))


def _section(title: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"**{title}**\n\n" + "".join(f"- {item}\n" for item in items) + "\n"


def _evidence(a: Analysis) -> str:
    from postmortem.report.terminal import evidence_lines

    v = a.verdict
    lines = evidence_lines(v.root.evidence if v.root else ())[:6]
    return _section("Evidence", [f"{markdown_code(where, 100)} {markdown_code(text, 180)}"
                                 + (f" ×{count}" if count > 1 else "") for where, text, count in lines])


def _stack(a: Analysis) -> str:
    from postmortem.report.stacks_view import describe_frame
    from postmortem.report.terminal import failing_stack

    s = failing_stack(a)
    if s is None or not s.frames:
        return ""
    lines = ([s.title] if s.title else []) + [f"#{i} {describe_frame(f)}" for i, f in enumerate(s.frames[:5])]
    from postmortem.report.terminal import _is_the_roots, other_stack_title

    title = "Failing stack" if _is_the_roots(a, s) else other_stack_title(a)
    return f"**{title}** ({markdown_code(s.ref.describe(), 100)})\n\n" + markdown_block(lines, 200) + "\n"


def _commands(a: Analysis) -> str:
    v = a.verdict
    if not v.commands and not v.steps:
        return ""
    out = "**Confirm with**\n\n"
    if v.commands:
        out += markdown_block(list(v.commands), 400) + "\n"
    out += "".join(f"- {s}\n" for s in v.steps)
    return out + ("\n" if v.steps else "")


def _collect(a: Analysis) -> str:
    """Collect items quote the bundle (error_file paths, artifact names): a fenced block."""
    if not a.verdict.collect:
        return ""
    return "**Collect**\n\n" + markdown_block(list(a.verdict.collect), 300) + "\n"


def _symptoms(a: Analysis) -> str:
    symptoms = a.verdict.symptoms
    if not symptoms:
        return ""
    items = "".join(f"- {markdown_text(f.summary, 200)}\n" for f in symptoms[:8])
    return f"<details><summary>Symptoms ({len(symptoms)})</summary>\n\n{items}\n</details>\n\n"
