"""Terminal output with rich: a compact verdict panel, the evidence, the head of the timeline.

Honours NO_COLOR and non-TTY output (rich does both), and strips escape sequences
found in logs so a hostile log line cannot drive the terminal.
"""
from __future__ import annotations

import sys
from typing import TextIO

from postmortem.model import Analysis, ArtifactStatus, Category
from postmortem.report.text import short, strip_escapes
from postmortem.timeline import sort_key

COLORS = {Category.CONFIG: "yellow", Category.COMMS: "cyan", Category.HARDWARE: "red", Category.UNKNOWN: "magenta"}


def render(a: Analysis, out: TextIO | None = None, quiet: bool = False, timeline_rows: int = 12) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    console = Console(file=out or sys.stdout, highlight=False, soft_wrap=False)
    v = a.verdict
    color = COLORS[v.category]
    head = (f"[bold {color}]{v.category.value.upper()}[/] · [bold]{v.cause}[/] · confidence {v.confidence:.2f}\n"
            f"{escape(strip_escapes(v.summary))}")
    body = [head]
    if not quiet:
        body.append("")
        body.append(escape(v.explanation))
    if v.remediation:
        body.append("\n[bold]Fix[/]")
        body.extend(f"  • {escape(r)}" for r in v.remediation[:4])
    if v.next_steps:
        body.append("[bold]Confirm with[/]")
        body.extend(f"  $ {escape(s)}" for s in v.next_steps[:4])
    if v.collect:
        body.append("[bold]Collect[/]")
        body.extend(f"  • {escape(s)}" for s in v.collect[:8])
    if v.counter:
        body.append("[bold]Counter-evidence[/]")
        body.extend(f"  • {escape(c)}" for c in v.counter)
    console.print(Panel("\n".join(body), title=f"postmortem · {escape(a.case.name)}", border_style=color))

    if v.root and v.root.evidence:
        console.print("[bold]Evidence[/]")
        for r in v.root.evidence[:8]:
            console.print(f"  [dim]{escape(r.describe())}[/]  {escape(short(r.text or ''))}")
    if v.symptoms and not quiet:
        console.print(f"[bold]Symptoms[/] ({len(v.symptoms)})")
        for f in v.symptoms[:6]:
            console.print(f"  • {escape(short(f.summary, 140))}")

    problems = [x for x in a.case.artifacts if x.status is not ArtifactStatus.OK or x.message]
    if problems:
        console.print("[bold]Artifact problems[/]")
        for x in problems[:20]:
            console.print(f"  [dim]{escape(x.path)}[/] {x.status.value}: {escape(short(x.message, 140))}")
    if quiet:
        return
    events = sorted((e for e in a.case.events if e.severity.value in ("warning", "error", "fatal")), key=sort_key)
    if events:
        table = Table(title="Timeline (warnings and errors, first rows)", show_lines=False, expand=False)
        for col in ("time", "basis", "source", "what"):
            table.add_column(col, overflow="fold")
        for e in events[:timeline_rows]:
            at = e.when.at.strftime("%Y-%m-%d %H:%M:%S") if e.when and e.when.at else "—"
            basis = e.when.basis.value if e.when else "order-only"
            table.add_row(at, basis, escape(e.ref.describe()), escape(short(e.text, 100)))
        console.print(table)
