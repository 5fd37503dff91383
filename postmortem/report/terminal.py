"""Terminal output with rich: the verdict, the failing process and its top frames, what to
do, the evidence, the head of the timeline, and a last line `verdict · report: PATH`.

No escape code is written when NO_COLOR is set or the output is not a terminal.  Every
bundle-derived string (log lines, file, host and bundle names) goes through
text.terminal_text, and everything is printed as rich Text objects, never as markup, so
a hostile log line can neither drive the terminal nor style itself.  Commands are
printed with soft wrapping: a terminal may fold them visually, but no line break is ever
inserted into one, so a copied command pastes whole.
"""
from __future__ import annotations

import errno
import os
import re
import sys
from typing import TextIO

from postmortem.model import Analysis, ArtifactStatus, Category, Ref, Stack
from postmortem.report.text import code_spans, terminal_text

TYPE_CHECKING = False
if TYPE_CHECKING:   # imported where used: a quiet run (one line) needs none of the timeline views
    from postmortem.report import timeline_view

COLORS = {Category.CONFIG: "yellow", Category.COMMS: "cyan", Category.HARDWARE: "red", Category.UNKNOWN: "magenta"}
SEVERITY_STYLE = {"fatal": "bold red", "error": "red", "warning": "yellow"}
TOP_FRAMES = 5
MAX_EVIDENCE = 8


def _console(out: TextIO | None):
    """Colour only on a terminal and only without NO_COLOR (https://no-color.org): with
    color_system=None rich writes no escape code at all, bold included."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits with status 1 here; the CLI turns a gone reader into a quiet 141.
            raise BrokenPipeError(errno.EPIPE, "stdout closed")

    stream = out or sys.stdout
    plain = bool(os.environ.get("NO_COLOR")) or not _is_tty(stream)
    return _Console(file=stream, highlight=False, soft_wrap=False, emoji=False, markup=False,
                   color_system=None if plain else "auto", force_terminal=None if plain else True)


def _plain_line(a: Analysis, out: TextIO | None, report: str | None) -> bool:
    """`-q` without colour and with no artifact error is one line that rich would print as
    it stands: write it without importing rich (startup time).  False: nothing written."""
    stream = out or sys.stdout
    line = status_line(a, report)
    if (os.environ.get("NO_COLOR") or not _is_tty(stream)) and line.isprintable() \
            and not _problems(a, errors_only=True):
        stream.write(line + "\n")
        return True
    return False


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _text(*parts: tuple[str, str] | str):
    """A rich Text from (string, style) parts; plain strings unstyled.  Never markup."""
    from rich.text import Text

    t = Text()
    for part in parts:
        if isinstance(part, tuple):
            t.append(*part)
        else:
            t.append(part)
    return t


def _bullet(console, content) -> None:
    """`  • text` with wrapped lines indented under the text, not under the bullet."""
    from rich.table import Table

    if isinstance(content, str):
        content = _text(content)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("  •", content)
    console.print(grid)


def _knowledge(line: str, style: str = "bold"):
    """Knowledge text with its `code` spans styled instead of showing raw backticks."""
    return _text(*[(p, style) if is_code else p for p, is_code in code_spans(line)])


def headline(a: Analysis) -> str:
    """The cause's title and what the signal said, once each (no id, no repetition)."""
    v = a.verdict
    title = v.title or v.cause
    summary = v.summary.removeprefix(f"{title}: ") if v.title else v.summary
    return title if not summary or summary == title else f"{title}: {summary}"


def status_line(a: Analysis, report: str | None) -> str:
    """The last line, as pytest and ruff end: verdict, then where the report is."""
    v = a.verdict
    line = f"{v.category.value.upper()} {v.cause} ({v.confidence:.2f})"
    rank = failing_rank(a)
    if rank is not None:
        line += f" on rank {rank}"
    if report:
        line += f" · report: {report}"
    return terminal_text(line, 400)


def _root_process(a: Analysis) -> tuple[int | None, int | None]:
    """(rank, pid) of the root's cited lines, where they name one."""
    global _last_root_process
    if _last_root_process is not None and _last_root_process[0] is a:   # asked several times per report
        return _last_root_process[1]
    cited = {(r.path, r.line, r.offset) for r in (a.verdict.root.evidence if a.verdict.root else ())}
    paths = {path for path, _, _ in cited}
    events = [e for e in a.case.events if e.ref.path in paths and (e.ref.path, e.ref.line, e.ref.offset) in cited]
    ranks = [e.rank for e in events if e.rank is not None]
    pids = [e.pid or e.data.get("pid") for e in events if e.pid or e.data.get("pid")]
    found = (ranks[0] if ranks else None), (int(pids[0]) if pids and str(pids[0]).isdecimal() else None)
    if a.verdict.root is None:
        found = _dead_rank(a) or found
    _last_root_process = (a, found)
    return found


def _dead_rank(a: Analysis) -> tuple[int, int | None] | None:
    """With no root (an `unknown` verdict): the rank the launcher's root cause names, when other
    ranks' own errors are their peer ending (a close or reset, registry death 'peer') and it is not
    one of them -- the survivors' tracebacks are the fallout of its death (audit 13 M3)."""
    from postmortem.classify.launcher_root import fallout_ranks

    launcher = a.verdict.launcher_root
    if launcher is None or launcher.rank is None or _blamed_ranks(a):
        return None
    survivors = fallout_ranks(a.case)
    if not survivors or launcher.rank in survivors:
        return None
    return launcher.rank, launcher.pid


_last_root_process: tuple[Analysis, tuple[int | None, int | None]] | None = None


def crash_time(a: Analysis) -> str | None:
    """When the first failure happened by a log's own clock (never a file time)."""
    from postmortem.triage.work import crash_time as of

    return of(a)


def _blamed_ranks(a: Analysis) -> tuple[int, ...]:
    """The ranks the root blames by name; with no root (an `unknown` verdict), the ranks a
    finding without a cause of its own names -- Flight Recorder's "the others waited for rank N"
    says who held the job up even when nothing says why."""
    root = a.verdict.root
    if root is not None:
        return root.culprit_ranks
    return next((f.culprit_ranks for f in a.verdict.symptoms if f.culprit_ranks), ())


def failing_rank(a: Analysis) -> int | None:
    """The rank the root blames by name (a straggler, the rank behind in a hang), else the rank its
    cited lines name, else the failing stack's rank."""
    blamed = _blamed_ranks(a)
    if blamed:
        return blamed[0]
    rank, _ = _root_process(a)
    if rank is not None:
        return rank
    s = failing_stack(a)
    return s.rank if s is not None else None


def _is_the_roots(a: Analysis, s: Stack) -> bool:
    rank, pid = _root_process(a)
    return not ((rank is not None and s.rank is not None and rank != s.rank)
                or (pid is not None and s.pid is not None and pid != s.pid))


def other_stack_title(a: Analysis) -> str:
    """The title of a stack shown although it is not the failing process's own."""
    if a.verdict.root is None and _dead_rank(a):
        return "Stack of a rank that lost its peer (the rank that died left none)"
    return "Stack of another process (the root's left none)"


def failing_stack(a: Analysis) -> Stack | None:
    from postmortem import stacks

    try:
        # The rank the root blames (a straggler, the rank behind in a hang) first: its stack says
        # what held the job up; the others only wait.
        culprits = _blamed_ranks(a)
        if culprits:
            main = stacks.main_stacks(a.case.stacks)   # per rank, the main thread of a hang dump
            blamed = [main[r] for r in culprits if r in main]
            if blamed:
                return blamed[0]
            blamed = [s for s in a.case.stacks if s.rank in culprits]
            if blamed:
                return stacks.crashing(blamed, a.case.events)
        # The root's own process next: a folder of unrelated cores has one crashing stack each.
        own = [s for s in a.case.stacks if _is_the_roots(a, s) and (s.pid is not None or s.rank is not None)]
        if own and any(_root_process(a)):
            return stacks.crashing(own, a.case.events)
        return stacks.crashing(a.case.stacks, a.case.events)
    except Exception:  # noqa: BLE001 - a nicety: the verdict is printed without it
        return None


def render(a: Analysis, out: TextIO | None = None, quiet: bool = False, timeline_rows: int = 12,
           report: str | None = None) -> None:
    if quiet and _plain_line(a, out, report):
        return
    console = _console(out)
    if quiet:
        _artifact_problems(console, a, errors_only=True)
        console.print(_text((status_line(a, report), "bold")), soft_wrap=True)
        return
    _verdict_panel(console, a)
    _failing(console, a)
    _todo(console, a)
    from postmortem.report import timeline_view

    cited = a.verdict.root.evidence if a.verdict.root else ()
    view = timeline_view.build(a, cited)
    _evidence(console, cited, view)
    _hang(console, a)
    _counter(console, a)
    _symptoms(console, a)
    _artifact_problems(console, a)
    _timeline_head(console, view, timeline_rows)
    console.print(_text((status_line(a, report), "bold " + COLORS[a.verdict.category])), soft_wrap=True)


def _verdict_panel(console, a: Analysis) -> None:
    from rich.panel import Panel

    v = a.verdict
    color = COLORS[v.category]
    head = _text((v.category.value.upper(), f"bold {color}"), " · ", (v.title or v.cause, "bold"),
                 f" · confidence {v.confidence:.2f}")
    body = [head]
    summary = headline(a).removeprefix(v.title or "\0").removeprefix(": ")
    if summary and summary != v.title:
        body.append(_text(terminal_text(summary, 600)))
    where = _where(a)
    if where:
        body.append(_text(("where: ", "dim"), terminal_text(where, 300)))
    if v.explanation:
        body += [_text(""), _text((v.explanation, "dim"))]
    from rich.console import Group

    console.print(Panel(Group(*body), title=_text(f"postmortem · {terminal_text(a.case.name, 80)}"),
                        border_style=color))


def _where(a: Analysis) -> str:
    """Host, rank, pid and crash time of the failing process, as far as the bundle says."""
    v = a.verdict
    s = failing_stack(a)
    parts = []
    host = (s.host if s and _is_the_roots(a, s) else None) or (a.hosts[0] if len(a.hosts) == 1 else None)
    if host:
        parts.append(f"host {host}")
    rank = failing_rank(a)
    if rank is not None:
        parts.append(f"rank {rank}")
    if s is not None and _is_the_roots(a, s):
        parts += [f"{name} {value}" for name, value in (("pid", s.pid), ("tid", s.tid)) if value is not None]
    elif _root_process(a)[1] is not None:
        parts.append(f"pid {_root_process(a)[1]}")
    crashed = crash_time(a)
    if crashed:
        parts.append("at " + re.sub(r"\.\d+", "", crashed).replace("T", " "))
    return ", ".join(parts)


def _failing(console, a: Analysis) -> None:
    """The crashing stack's top frames, as coredumpctl prints them."""
    from postmortem.report.stacks_view import describe_frame

    s = failing_stack(a)
    if s is None or not s.frames:
        return
    who = ", ".join(f"{n} {v}" for n, v in (("rank", s.rank), ("host", s.host), ("pid", s.pid), ("tid", s.tid))
                    if v is not None)
    from postmortem import stacks

    root = a.verdict.root
    if root is not None and root.culprit_ranks:
        title = ("Stack of the rank that held the job up" if stacks.rank_of(s) in root.culprit_ranks
                 else "Stack of a rank that waited (the rank that held the job up left none)")
    else:
        title = "Failing stack" if _is_the_roots(a, s) else other_stack_title(a)
    console.print(_text((title, "bold"), f" ({terminal_text(who, 120)}) " if who else " ",
                        (f"{s.origin}, {terminal_text(s.ref.describe(), 100)}", "dim")))
    if s.title:
        console.print(_text("  ", terminal_text(s.title, 200)))
    for i, f in enumerate(s.frames[:TOP_FRAMES]):
        console.print(_text(f"  #{i} ", terminal_text(describe_frame(f), 200)))
    if len(s.frames) > TOP_FRAMES:
        console.print(_text((f"  … {len(s.frames) - TOP_FRAMES} more frames in the HTML report", "dim")))


def _todo(console, a: Analysis) -> None:
    v = a.verdict
    if v.remediation:
        console.print(_text(("Fix", "bold")))
        for line in v.remediation[:4]:
            _bullet(console, _knowledge(line))
    if v.commands or v.steps:
        console.print(_text(("Confirm with", "bold")))
        for command in v.commands[:4]:
            # Knowledge text, but one command is one line: never wrapped by us.
            console.print(_text("  $ ", (command, "bold")), soft_wrap=True)
        for step in v.steps[:3]:
            _bullet(console, _knowledge(step))
    if v.collect:
        console.print(_text(("Collect", "bold")))
        for line in v.collect[:8]:
            _bullet(console, terminal_text(line, 300))


def evidence_lines(cited: tuple[Ref, ...], view: timeline_view.TimelineView | None = None) -> list[tuple[str, str, int]]:
    """(where, text, count) per distinct cited line, in citation order: the same text
    cited several times is listed once with its count and its first place."""
    from postmortem.report import timeline_view

    seen: dict[str, list] = {}
    for r in cited:
        # A byte offset in a core has no line text: the event decoded from it stands in.
        row = view.row_of_ref.get(timeline_view.ref_key(r)) if view else None
        text = (r.text or (row.first.text if row else "")).strip()
        key = text or r.describe()
        if key in seen:
            seen[key][2] += 1
        else:
            seen[key] = [r.describe(), text, 1]
    return [tuple(x) for x in seen.values()]


def _evidence(console, cited, view: timeline_view.TimelineView) -> None:
    lines = evidence_lines(cited, view)
    if not lines:
        return
    console.print(_text(("Evidence", "bold")))
    for where, text, count in lines[:MAX_EVIDENCE]:
        console.print(_text("  ", (terminal_text(where, 120), "dim"), "  ", terminal_text(text, 200),
                            (f"  ×{count}", "bold") if count > 1 else ""))
    if len(lines) > MAX_EVIDENCE:
        console.print(_text((f"  … {len(lines) - MAX_EVIDENCE} more in the HTML report", "dim")))


def _hang(console, a: Analysis) -> None:
    """Flight Recorder and all-rank stacks in one paragraph (report/collectives_view.py)."""
    from postmortem.report import collectives_view

    text = collectives_view.summary(a)
    if text:
        console.print(_text(("Collectives", "bold")))
        console.print(_text("  ", terminal_text(text, 1200)))


def _counter(console, a: Analysis) -> None:
    v = a.verdict
    if v.cause == "unknown":
        return
    console.print(_text(("Counter-evidence", "bold"), "" if v.counter_evidence else ": none found"))
    for c in v.counter_evidence:
        _bullet(console, terminal_text(c, 300))
    if v.launcher_root is not None:
        console.print(_text(("Launcher's root cause", "bold"), " (weighed, not taken)"))
        _bullet(console, terminal_text(v.launcher_root.note, 400))


def _symptoms(console, a: Analysis) -> None:
    v = a.verdict
    if v.symptoms:
        console.print(_text(("Symptoms", "bold"), f" ({len(v.symptoms)})"))
        for f in v.symptoms[:6]:
            _bullet(console, terminal_text(f.summary, 140))


def is_problem(x) -> bool:
    """An artifact worth telling the user about: not read, or read with a warning.  An
    empty file that is fine to be empty (status ok) is not a problem."""
    return x.status is not ArtifactStatus.OK or bool(x.message and x.message != "empty file")


def _problems(a: Analysis, errors_only: bool = False) -> list:
    return [x for x in a.case.artifacts if is_problem(x) and (not errors_only or x.status is ArtifactStatus.ERROR)]


def _artifact_problems(console, a: Analysis, errors_only: bool = False) -> None:
    problems = _problems(a, errors_only)
    if problems:
        console.print(_text(("Artifact problems", "bold")))
        for x in problems[:20]:
            console.print(_text("  ", (terminal_text(x.path, 120), "dim"), f" {x.status.value}: ",
                                terminal_text(x.message, 140)))
        if len(problems) > 20:
            console.print(_text(f"  … and {len(problems) - 20} more (see the HTML report)"))


def _timeline_head(console, view: timeline_view.TimelineView, limit: int) -> None:
    """The job's rows that matter (the root, warnings and errors) around ROOT, in timeline
    order; context outside the job (kernel history ...) folded into one line each."""
    from rich.table import Table

    from postmortem.report import timeline_view

    rows, before, after = timeline_view.rows_around_root(view, limit)
    for why, n in view.folded.items():
        console.print(_text((f"  {terminal_text(why, 80)}: {n} event(s), folded (never root or symptom; "
                             "see the HTML report)", "dim")))
    if not rows:
        return
    table = Table(title="Timeline (the job: root, warnings and errors; ≈ = inferred time)", expand=False)
    where_texts = [terminal_text(r.first.ref.describe(), 60) for r in rows]
    table.add_column("when", no_wrap=True)
    table.add_column("×", justify="right", no_wrap=True)
    # Cells wrap between words; a word too long for its cell is cut with … (never folded).
    table.add_column("where", overflow="ellipsis", min_width=min(26, max(map(len, where_texts))), max_width=30)
    table.add_column("what", overflow="ellipsis", min_width=20)
    for row, where in zip(rows, where_texts):
        t = timeline_view.time_cell(row.first)
        when = ("≈" if t.approx else "") + t.text[:19] if t.iso else "—"
        basis = t.basis + (f" {t.plus_minus}" if t.plus_minus else "")
        style = "bold" if row.is_root else SEVERITY_STYLE.get(row.severity.value, "")
        what = ("ROOT " if row.is_root else "") + terminal_text(row.text, 100)
        table.add_row(f"{when}\n{basis}", str(row.count), where, what, style=style)
    if before:
        console.print(_text((f"  … {before} earlier rows in the HTML report", "dim")))
    console.print(table)
    if after > 0:
        console.print(_text((f"  … {after} more rows in the HTML report", "dim")))


def write(a: Analysis, out: TextIO, options) -> None:
    """The registry's interface (postmortem.report.RENDERERS)."""
    render(a, out=out, quiet=options.quiet, report=options.report)
