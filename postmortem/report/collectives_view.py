"""Hangs as the reports show them: the per-process-group grid (ranks x last collectives, from
the Flight Recorder dumps) and the all-rank stack groups, plus a one-paragraph summary for
the terminal and Markdown.  Everything is computed from the Analysis (collectives.match,
stacks.group_by_stack); nothing here reads the bundle."""
from __future__ import annotations

from dataclasses import dataclass

from postmortem import collectives, stacks
from postmortem.classify.rules.hang import activity
from postmortem.model import Analysis

MAX_GRID_RANKS = 64        # rows per group shown; past this the ranks that stand out, then a count
MAX_GROUPS = 8


@dataclass(frozen=True)
class GridCell:
    state: str                 # css class suffix: completed started waiting not-arrived no-dump before-window mismatch
    label: str                 # short text in the cell
    title: str                 # the entry, for the tooltip


@dataclass(frozen=True)
class GridRow:
    rank: int
    cells: list[GridCell]
    note: str                  # "behind", "desync", "no dump"


@dataclass(frozen=True)
class Grid:
    title: str
    summary: str
    columns: list[str]         # "#6 all_reduce"
    rows: list[GridRow]
    hidden_ranks: int


@dataclass(frozen=True)
class StackLine:
    ranks: str
    count: int
    where: str
    activity: str
    origin: str
    ref: str


@dataclass(frozen=True)
class HangView:
    grids: list[Grid]
    stack_lines: list[StackLine]
    notes: list[str]

    def __bool__(self) -> bool:
        return bool(self.grids or self.stack_lines)


def build(a: Analysis) -> HangView:
    m = collectives.match(collectives.traces_of(a.case.facts))
    grids = [_grid(g) for g in m.groups[:MAX_GROUPS]]
    groups = stacks.group_by_stack(a.case.stacks)
    lines = [StackLine(collectives._span(g.ranks), len(g.ranks), g.where, activity(g.frames), g.stacks[0].origin,
                       g.stacks[0].ref.describe()) for g in groups] if len(groups) >= 1 and _several_ranks(groups) else []
    return HangView(grids, lines, list(m.notes))


def _several_ranks(groups) -> bool:
    return sum(len(g.ranks) for g in groups) >= 2


def _grid(g: collectives.GroupMatch) -> Grid:
    columns = [f"#{r.seq} {r.op}" for r in g.rows]
    special = {b.rank: "behind" for b in g.behind}
    special.update({d.rank: "desync" for d in g.desyncs})
    special.update({r: "no dump" for r in g.missing_dumps})
    rows = []
    for i, rank in enumerate(g.ranks):
        cells = []
        for row in g.rows:
            c = row.cells[i]
            if c.mismatch:
                cells.append(GridCell("mismatch", c.entry.op if c.entry else "?", c.entry.describe() if c.entry else ""))
            else:
                cells.append(GridCell(c.state, _LABEL[c.state], c.entry.describe() if c.entry else _LABEL[c.state]))
        rows.append(GridRow(rank, cells, special.get(rank, "")))
    hidden = 0
    if len(rows) > MAX_GRID_RANKS:
        keep = [r for r in rows if r.note] + [r for r in rows if not r.note][: max(0, MAX_GRID_RANKS - len(special))]
        hidden = len(rows) - len(keep)
        rows = sorted(keep, key=lambda r: r.rank)
    return Grid(f"process group {g.pg}" + (f" ({g.desc})" if g.desc else ""), g.summary(), columns, rows, hidden)


_LABEL = {"completed": "done", "started": "started", "waiting": "waiting", "not-arrived": "—",
          "no-dump": "no dump", "before-window": "·"}


def summary(a: Analysis) -> str:
    """One paragraph: what the dumps and stacks say about a hang, or "" when there is nothing."""
    view = build(a)
    parts = [g.summary + "." for g in view.grids[:2]]
    if view.stack_lines:
        parts.append("Stacks: " + "; ".join(
            f"rank{'s' if s.count > 1 else ''} {s.ranks} in {s.where} ({s.activity})" for s in view.stack_lines[:4]) + ".")
    parts += [n + "." for n in view.notes[:2]]
    return " ".join(parts)
