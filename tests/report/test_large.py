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


def test_json_of_fifty_thousand_events_is_bounded_and_counts_what_it_leaves_out():
    import json

    from postmortem.report import jsonout

    a = report_bench.synthetic_analysis(50_000)
    doc = json.loads(jsonout.render(a))
    listed = doc["timeline"]
    assert len(listed) <= jsonout.MAX_TIMELINE_EVENTS
    assert doc["timeline_omitted"] == 50_000 - len(listed) > 0
    # every row keeps its full count and its first events; the cited root line is listed
    assert sum(r["count"] for r in doc["timeline_rows"]) == 50_000
    root = a.verdict.root.evidence[0]
    assert any(e["source"] == root.path and e["line"] == root.line for e in listed)
    per_row: dict = {}
    for e in listed:
        key = (e["kind"], re.sub(r"0x[0-9a-fA-F]+|\d+", "#", e["text"])[:300])
        per_row[key] = per_row.get(key, 0) + 1
    assert max(per_row.values()) <= jsonout.MAX_EVENTS_PER_ROW + 1
    assert doc["timeline_rows_omitted"] == 0
    assert jsonout.to_dict(a)["timeline_omitted"] == doc["timeline_omitted"]


def test_processes_merged_into_one_lane_share_one_mark_per_row():
    """Thousands of ranks printing the same WARN: one span in the merged lane, not a dot each."""
    a = report_bench.synthetic_analysis(50_000)
    view = timeline_view.build(a)
    keys = [(m.row.number, m.lane, m.band) for m in view.marks]
    assert len(keys) == len(set(keys))
    assert sum(m.count for m in view.marks if m.row.kept_always) == sum(
        r.count for r in view.rows if r.kept_always)


def test_streamed_json_writes_an_empty_list_as_a_list():
    """A bundle with no stacks and no facts: the streamed JSON still says `[]` for them
    (an empty streamed list once came out as the repr of its Python object)."""
    import json

    from postmortem import run
    from postmortem.report import jsonout

    analysis = run.analyze(ROOT / "fixtures" / "xid" / "xid_public.txt")
    assert not analysis.case.stacks and not analysis.case.facts
    doc = json.loads(jsonout.render(analysis))
    assert doc["stacks"] == [] and doc["facts"] == []
    assert doc == json.loads(json.dumps(jsonout.to_dict(analysis), default=str))


def test_masked_texts_is_the_mask_of_each_text():
    """rows.masked_texts masks each digit pattern once (a 0 like any digit where no `x` can
    start a hex literal); the result is _MASK.sub of every text, whatever digits, zeros,
    hex literals or non-ASCII digits it holds."""
    import random

    from postmortem.report import rows

    rng = random.Random(17)
    alphabet = "0123456789xXabcdefABCDEF :/_-.\u0660\u0661é"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(20000)]
    texts += [f"node{r // 8:03d}:{10000 + r}:{10007 + r} NCCL INFO 0x{r * 977:x} x0 00x1 {r}" for r in range(600)]
    assert rows.masked_texts(texts) == [rows._MASK.sub("#", t)[:rows._TEXT_CUT] for t in texts]
