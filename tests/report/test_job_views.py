"""Views centred on the job (issue 14): the terminal's timeline and the HTML chart."""
from __future__ import annotations

import io
import re
from pathlib import Path

from postmortem.report import html, svg, terminal, timeline_view
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parent.parent.parent
STRAGGLER = ROOT / "fixtures/bundles/lab-torchrun-straggler-timeout/bundle"
OOM = ROOT / "fixtures/bundles/lab-torchrun-oom-cgroup/bundle"


def test_terminal_shows_the_jobs_rows_and_folds_the_history():
    a = analyze(STRAGGLER)
    out = io.StringIO()
    terminal.render(a, out=out)
    text = out.getvalue()
    table = text[text.index("Timeline"):]
    assert "ROOT" in table
    assert "segfault" not in table, "other programs' segfaults from before the job are folded"
    assert re.search(r"kernel history before the job: \d+ event\(s\), folded", text)


def test_rows_around_root_keep_the_root_in_view():
    view = timeline_view.build(analyze(OOM))
    rows, before, after = timeline_view.rows_around_root(view, 3)
    assert any(r.is_root for r in rows) and len(rows) <= 3
    assert not any(r.context for r in rows)


def test_chart_default_range_is_the_job_window_with_the_root():
    a = analyze(STRAGGLER)
    view = timeline_view.build(a)
    layout = svg.layout(view)
    band = layout.bands[0]
    assert band.t1 - band.t0 < 60, "the job lasted ~16 s; the kernel history spans 17 min"
    root = [d for d in band.dots if d.is_root]
    assert root and all(layout.plot_left <= d.x <= layout.plot_right for d in root)
    history = svg.history_layout(view)
    assert history is not None and history.bands[0].t0 < band.t0 - 60
    page = html.render(a)
    assert 'class="fold history"' in page and "kernel history before the job:" in page
    assert 'data-zoom="job"' in page and "data-t=" in page


def test_one_lane_per_process_in_the_chart():
    a = analyze(OOM)
    layout = svg.layout(timeline_view.build(a))
    labels = [lane.full_label for band in layout.bands for lane in band.lanes if band.name == "placed"]
    for pid, rank in ((24649, 0), (24650, 1)):
        mine = [l for l in labels if f"pid {pid}" in l or f"rank {rank}" in l]
        assert mine == [f"localhost · rank {rank} · pid {pid}"]
