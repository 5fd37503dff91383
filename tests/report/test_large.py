"""Big bundles stay small: rows are collapsed, every root, warning and error row is kept,
and the rest is capped with a visible note.  (bench/report_bench.py runs the 1,000,000
event version and prints timings.)"""
from __future__ import annotations

import importlib.util
import re

from postmortem.report import html, timeline_view
from tests.report.reports import ROOT

_spec = importlib.util.spec_from_file_location("report_bench", ROOT / "bench" / "report_bench.py")
report_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report_bench)


def test_fifty_thousand_events_stay_small_and_keep_every_severe_row():
    a = report_bench.synthetic_analysis(50_000)
    view = timeline_view.build(a)
    page = html.render(a)
    assert len(page.encode()) < 5_000_000
    assert view.cut_rows > 0 and f"{view.cut_rows} more info rows not shown" in page
    severe_shapes = {timeline_view.shape(e) for e in a.case.events if e.severity.value in ("warning", "error", "fatal")}
    kept_severe = [r for r in view.rows if r.severity.value in ("warning", "error", "fatal")]
    assert len(kept_severe) == len(severe_shapes)
    assert sum(1 for r in view.rows if r.is_root) == 1
    assert 'class="root-ring"' in page
    assert len(re.findall(r'<tr id="row-', page)) == len(view.rows)
    assert len(view.lanes) <= timeline_view.MAX_LANES + 1
