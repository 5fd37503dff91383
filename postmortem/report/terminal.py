"""Terminal output with rich: a compact verdict panel, the evidence, the head of the timeline.

No escape code is written when NO_COLOR is set or the output is not a terminal, and
escape sequences found in logs are stripped (text.py) so a hostile log line cannot
drive the terminal.  Bundle text goes through `_safe` (strip + rich markup escape)
before it reaches any markup string.
"""
from __future__ import annotations

import os
import sys
from typing import TextIO

from postmortem.model import Analysis, ArtifactStatus, Category
from postmortem.report import timeline_view
from postmortem.report.text import short

COLORS = {Category.CONFIG: "yellow", Category.COMMS: "cyan", Category.HARDWARE: "red", Category.UNKNOWN: "magenta"}
SEVERITY_STYLE = {"fatal": "bold red", "error": "red", "warning": "yellow"}


def _safe(text: str, width: int = 1000) -> str:
    from rich.markup import escape

    return escape(short(text or "", width))


def _console(out: TextIO | None):
    """Colour only on a terminal and only without NO_COLOR (https://no-color.org): with
    color_system=None rich writes no escape code at all, bold included."""
    from rich.console import Console

    stream = out or sys.stdout
    plain = bool(os.environ.get("NO_COLOR")) or not _is_tty(stream)
    return Console(file=stream, highlight=False, soft_wrap=False, emoji=False,
                   color_system=None if plain else "auto", force_terminal=None if plain else True)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def render(a: Analysis, out: TextIO | None = None, quiet: bool = False, timeline_rows: int = 12) -> None:
    console = _console(out)
    _verdict_panel(console, a, quiet)
    cited = a.verdict.root.evidence[:8] if a.verdict.root else ()
    view = timeline_view.build(a, cited)
    _evidence(console, cited, view)
    _hang(console, a)
    if not quiet:
        _symptoms(console, a)
    _artifact_problems(console, a)
    if not quiet:
        _timeline_head(console, view, timeline_rows)


def _verdict_panel(console, a: Analysis, quiet: bool) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    v = a.verdict
    color = COLORS[v.category]
    # Knowledge text (explanation, fix, commands) is ours but may hold '[': escape it for rich.
    body = [f"[bold {color}]{v.category.value.upper()}[/] · [bold]{escape(v.cause)}[/] · confidence {v.confidence:.2f}",
            _safe(v.summary)]
    if not quiet and v.explanation:
        body += ["", escape(v.explanation)]
    sections = (("Fix", "•", v.remediation[:4]), ("Confirm with", "$", v.commands[:4]), ("", "•", v.steps[:3]),
                ("Collect", "•", v.collect[:8]))
    for title, bullet, lines in sections:
        if lines:
            if title:
                body.append(f"[bold]{title}[/]")
            body.extend(f"  {bullet} {escape(line)}" for line in lines)
    body.append("[bold]Counter-evidence[/]")
    if v.counter:
        body.extend(f"  • {_safe(c, 300)}" for c in v.counter)
    else:
        body.append("  none found")
    console.print(Panel("\n".join(body), title=f"postmortem · {_safe(a.case.name, 80)}", border_style=color))


def _evidence(console, cited, view: timeline_view.TimelineView) -> None:
    if not cited:
        return
    console.print("[bold]Evidence[/]")
    for r in cited:
        # A byte offset in a core has no line text: the event decoded from it stands in.
        row = view.row_of_ref.get(timeline_view.ref_key(r))
        text = r.text or (row.first.text if row else "")
        console.print(f"  [dim]{_safe(r.describe(), 120)}[/]  {_safe(text, 200)}")


def _hang(console, a: Analysis) -> None:
    """Flight Recorder and all-rank stacks in one paragraph (report/collectives_view.py)."""
    from postmortem.report import collectives_view

    text = collectives_view.summary(a)
    if text:
        console.print("[bold]Collectives[/]")
        console.print(f"  {_safe(text, 1200)}")


def _symptoms(console, a: Analysis) -> None:
    v = a.verdict
    if v.symptoms:
        console.print(f"[bold]Symptoms[/] ({len(v.symptoms)})")
        for f in v.symptoms[:6]:
            console.print(f"  • {_safe(f.summary, 140)}")


def _artifact_problems(console, a: Analysis) -> None:
    problems = [x for x in a.case.artifacts if x.status is not ArtifactStatus.OK or x.message]
    if problems:
        console.print("[bold]Artifact problems[/]")
        for x in problems[:20]:
            console.print(f"  [dim]{_safe(x.path, 120)}[/] {x.status.value}: {_safe(x.message, 140)}")
        if len(problems) > 20:
            console.print(f"  … and {len(problems) - 20} more (see the HTML report)")


def _timeline_head(console, view: timeline_view.TimelineView, limit: int) -> None:
    """The job's rows that matter (the root, warnings and errors) around ROOT, in timeline
    order; context outside the job (kernel history ...) folded into one line each."""
    from rich.table import Table

    rows, before, after = timeline_view.rows_around_root(view, limit)
    for why, n in view.folded.items():
        console.print(f"  [dim]{_safe(why, 80)}: {n} event(s), folded (never root or symptom; see the HTML report)[/]")
    if not rows:
        return
    table = Table(title="Timeline (the job: root, warnings and errors; ≈ = inferred time)", expand=False)
    table.add_column("when", no_wrap=True)
    table.add_column("×", justify="right")
    table.add_column("where", overflow="fold", max_width=26)
    table.add_column("what", overflow="fold")
    for row in rows:
        t = timeline_view.time_cell(row.first)
        when = ("≈" if t.approx else "") + t.text[:19] if t.iso else "—"
        basis = t.basis + (f" {t.plus_minus}" if t.plus_minus else "")
        style = "bold" if row.is_root else SEVERITY_STYLE.get(row.severity.value, "")
        what = ("ROOT " if row.is_root else "") + _safe(row.text, 100)
        table.add_row(f"{when}\n{basis}", str(row.count), _safe(row.first.ref.describe(), 60), what, style=style)
    if before:
        console.print(f"  [dim]… {before} earlier rows in the HTML report[/]")
    console.print(table)
    if after > 0:
        console.print(f"  [dim]… {after} more rows in the HTML report[/]")