"""A row's ranks/hosts/sources and the artifacts list are cut at MAX_LIST_ENTRIES, the rest
counted, and nothing the verdict cites is cut.  The bundle is generated at test time (hostile
input, marked as such): 200 `nccl_rank*.log` files of real-format NCCL INFO lines (the way
bench/scale_bench.py builds them), one real NET/IB completion error on rank 171."""
from __future__ import annotations

import importlib.util
import json
import sys

from postmortem.report import jsonout
from postmortem.report.rows import digest, timeline_rows
from postmortem.run import Options, analyze
from tests.report.reports import ROOT

sys.path.insert(0, str(ROOT / "bench"))
_spec = importlib.util.spec_from_file_location("scale_bench", ROOT / "bench" / "scale_bench.py")
scale_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale_bench)

RANKS = 200


def test_many_rank_files_cut_lists_at_the_bound_and_keep_what_is_cited(tmp_path, monkeypatch):
    monkeypatch.setattr(scale_bench, "BAD_RANK", 171)
    bundle = tmp_path / "generated_hostile_ranks"
    scale_bench.build_ranks(bundle, RANKS, 30)
    a = analyze(bundle, Options())
    doc = json.loads(jsonout.render(a))
    n = jsonout.MAX_LIST_ENTRIES
    assert RANKS > n

    cited = {r.path for f in [a.verdict.root, *a.verdict.symptoms, *a.verdict.alternatives] if f for r in f.evidence}
    assert "nccl_rank171.log" in cited     # the verdict cites the IB error's rank
    culprits = {r for f in [a.verdict.root, *a.verdict.symptoms] if f for r in f.culprit_ranks}

    full = timeline_rows(digest(a.case.events))
    listed = doc["timeline_rows"]
    assert len(full) == len(listed) and doc["timeline_rows_omitted"] == 0
    cut_rows = 0
    for whole, row in zip(full, listed):
        assert row["count"] == whole["count"] and row["text"] == whole["text"]
        for key in ("ranks", "hosts", "sources"):
            kept = row[key]
            assert kept[:n] == whole[key][:n]                      # the first N, in order
            assert set(kept) <= set(whole[key])
            assert row.get(key + "_omitted", 0) == len(whole[key]) - len(kept)
            if len(whole[key]) <= n:
                assert kept == whole[key] and key + "_omitted" not in row
            else:
                assert len(kept) < len(whole[key])
        assert cited & set(whole["sources"]) <= set(row["sources"])   # a cited source never cut
        assert culprits & set(whole["ranks"]) <= set(row["ranks"])
        cut_rows += "sources_omitted" in row
    assert cut_rows > 0
    # the cited rank-171 file is past the first N somewhere, and kept there
    assert any("nccl_rank171.log" not in whole["sources"][:n] and "nccl_rank171.log" in row["sources"]
               for whole, row in zip(full, listed) if "nccl_rank171.log" in whole["sources"])

    paths = [x["path"] for x in doc["artifacts"]]
    assert len(a.case.artifacts) >= RANKS
    assert paths[:n] == [x.path for x in a.case.artifacts[:n]]
    assert cited <= set(paths)
    assert doc["artifacts_omitted"] == len(a.case.artifacts) - len(paths) > 0
    assert list(doc)[list(doc).index("artifacts") + 1] == "artifacts_omitted"


def test_lists_within_the_bound_get_no_new_fields():
    rows = [{"ranks": list(range(jsonout.MAX_LIST_ENTRIES)), "hosts": ["h"], "sources": ["a.log"], "count": 1}]
    assert jsonout.bounded_row(rows[0], None) is rows[0]
    kept, omitted = jsonout.cut_list(list(range(100)), {90})
    assert kept == list(range(jsonout.MAX_LIST_ENTRIES)) + [90] and omitted == 100 - jsonout.MAX_LIST_ENTRIES - 1


def test_html_rank_ranges_of_scattered_ranks_are_cut_and_counted():
    from postmortem.report import html

    assert html.bounded_ranges([0, 1, 2, 3, 5]) == "0-3,5"
    text = html.bounded_ranges(range(0, 8192, 2))           # every other rank: no run to fold
    assert len(text) <= html.MAX_RANGES_CHARS + 20 and text.endswith(",… (4096 ranks)")
    assert text.startswith("0,2,4,6")
