"""The hang views on the crash lab's Flight Recorder bundles: the HTML grid per process group,
the stack-group lines, and the one-paragraph summary in the terminal and Markdown."""
import io
import re
from pathlib import Path

from postmortem.report import collectives_view, html, markdown, terminal
from postmortem.run import analyze

BUNDLES = Path(__file__).resolve().parents[2] / "fixtures" / "bundles"


def test_desync_grid_marks_the_rank_and_cell():
    a = analyze(BUNDLES / "lab-flightrec-desync")
    view = collectives_view.build(a)
    grid = view.grids[0]
    assert grid.columns[-1] == "#6 all_reduce"
    odd = {r.rank: r for r in grid.rows if r.note}
    assert list(odd) == [1] and odd[1].note == "desync"
    assert odd[1].cells[-1].state == "mismatch" and odd[1].cells[-1].label == "broadcast"
    page = html.render(a)
    assert 'class="frgrid"' in page and 'st st-mismatch' in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)


def test_straggler_stacks_group_and_summaries_name_the_rank():
    a = analyze(BUNDLES / "lab-flightrec-hang-stacks")
    view = collectives_view.build(a)
    row3 = next(r for r in view.grids[0].rows if r.rank == 3)
    assert row3.note == "behind" and row3.cells[-1].state == "not-arrived"
    assert [(s.ranks, s.activity) for s in view.stack_lines][:2] == [("0-2", "a collective"), ("3", "data loading")]
    text = collectives_view.summary(a)
    assert "never arrived: rank 3" in text and "rank 3 in fr_hang.load_batch (data loading)" in text
    md = markdown.render(a)
    assert "**Collectives**" in md and "never arrived\\: rank 3" in md   # Markdown-escaped colon
    out = io.StringIO()
    terminal.render(a, out=out)
    assert "Collectives" in out.getvalue()


def test_no_dumps_no_hang_section():
    a = analyze(BUNDLES / "lab-torchrun-oom-cgroup")
    assert not collectives_view.build(a).grids
    assert 'id="hang"' not in html.render(a)
