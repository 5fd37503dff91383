"""Flight Recorder dumps: real ones from the crash lab (fixtures/lab/torchrun_flightrec.sh,
fixtures/lab/flightrec_formats.sh), and hostile or damaged ones generated here at test time."""
from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from postmortem import collectives
from postmortem.model import ArtifactStatus
from postmortem.parsers import flightrec
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"
STRAGGLER = BUNDLES / "lab-flightrec-straggler" / "bundle" / "flightrec"
DESYNC = BUNDLES / "lab-flightrec-desync" / "bundle" / "flightrec"
FORMATS = ROOT / "fixtures" / "lab" / "output" / "lab-flightrec-formats" / "bundle"


def read(path: Path) -> flightrec.RankTrace:
    return flightrec.read(path.read_bytes(), path.name)


# ------------------------------------------------------------------ real dumps

def test_real_pickle_dump_fields_and_completion_from_pg_status():
    t = read(STRAGGLER / "nccl_trace_rank_0")
    assert (t.version, t.rank, t.problems) == ("2.10", 0, [])
    entries = list(t.entries())
    assert [e.seq for e in entries] == [1, 2, 3, 4, 5, 6]
    assert {(e.backend, e.op) for e in entries} == {("gloo", "all_reduce")}
    # gloo leaves state "scheduled"; pg_status says 5 completed, so only #6 is open
    assert {e.state for e in entries} == {"scheduled"}
    assert [e.completed for e in entries] == [True] * 5 + [False]
    last = entries[-1]
    assert last.shape.in_sizes == ((8,),) and last.shape.in_dtypes == ("Float",)
    assert [f.function for f in last.frames][:3] == ["all_reduce", "wrapper", "sync_gradients"]
    assert last.created_ns and last.created_ns > entries[0].created_ns
    assert t.pg_ranks and max(t.pg_ranks.values(), key=len) == (0, 1, 2, 3)


def test_rank_comes_from_the_file_name_as_torch_names_it():
    assert flightrec.rank_from_name("flightrec/nccl_trace_rank_12") == 12
    assert flightrec.rank_from_name("dumps/fr_trace_rank3.json") == 3
    assert flightrec.rank_from_name("x/rank7/trace.pkl") == 7
    assert flightrec.rank_from_name("x/trace.pkl") is None


def test_json_and_pickle_of_the_same_run_agree():
    for rank in (0, 1):
        p = read(FORMATS / f"nccl_trace_rank_{rank}")
        j = read(FORMATS / f"nccl_trace_rank_{rank}.json")
        assert p.rank == j.rank == rank
        assert [(e.seq, e.op, e.shape) for e in p.entries()] == [(e.seq, e.op, e.shape) for e in j.entries()]
        ops = [e.op for e in p.entries()]
        assert ops[:3] == ["all_reduce"] * 3 and "broadcast" in ops and "all_gather" in ops
        assert all(e.frames for e in p.entries()) and not any(e.frames for e in j.entries())
        # JSON writes 0 for "no time yet": read as None, not as 1970
        assert all(e.started_ns is None for e in j.entries())


def test_sniffing_takes_both_formats_and_leaves_logs_alone():
    from postmortem import bundle
    assert bundle.sniff((STRAGGLER / "nccl_trace_rank_0").read_bytes()[:8192]) == "pickle"
    assert bundle.sniff((FORMATS / "nccl_trace_rank_0.json").read_bytes()[:8192]) == "flightrec-json"
    assert bundle.sniff(b'{"level": "info", "msg": "entries loaded"}\n') == "text"


# ------------------------------------------------------------------ hostile and damaged input

class _WritesAFile:
    """Generated at test time: a pickle whose loading would write `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (exec, (f"open({str(self.path)!r}, 'w').write('code ran')",))


def test_malicious_pickle_runs_no_code(tmp_path):
    canary = tmp_path / "canary"
    payload = pickle.dumps({"version": "2.10", "entries": [_WritesAFile(canary)]}, protocol=2)
    with pytest.raises(flightrec.DumpError, match="refused"):
        flightrec.load(payload)
    assert not canary.exists()
    # the same bytes through the whole pipeline, as a file named like a dump
    b = tmp_path / "bundle"
    b.mkdir()
    (b / "nccl_trace_rank_0").write_bytes(payload)
    a = analyze(b)
    art = next(x for x in a.case.artifacts if x.path == "nccl_trace_rank_0")
    assert art.status is ArtifactStatus.ERROR and "nothing in it was run" in art.message
    assert not canary.exists()
    # the payload is live: an ordinary unpickler would have run it
    pickle.loads(payload)
    assert canary.read_text() == "code ran"


def test_truncated_dump_gets_a_message(tmp_path):
    data = (STRAGGLER / "nccl_trace_rank_0").read_bytes()
    for cut in (len(data) // 2, len(data) - 1, 3):
        with pytest.raises(flightrec.DumpError, match="truncated|damaged"):
            flightrec.read(data[:cut], "nccl_trace_rank_0")
    (tmp_path / "nccl_trace_rank_0").write_bytes(data[: len(data) // 2])
    a = analyze(tmp_path)
    assert "truncated" in a.case.artifacts[0].message


def test_unknown_version_is_read_with_a_note():
    dump = flightrec.load((STRAGGLER / "nccl_trace_rank_1").read_bytes())
    dump["version"] = "9.0"
    t = flightrec.read(pickle.dumps(dump, protocol=2), "nccl_trace_rank_1")
    assert any("newer than" in p for p in t.problems) and len(t) == 6
    dump["version"] = "garbage"
    t = flightrec.read(pickle.dumps(dump, protocol=2), "nccl_trace_rank_1")
    assert any("unknown Flight Recorder version" in p for p in t.problems)


def test_odd_shapes_do_not_break_the_reader():
    odd = {"version": "2.10", "entries": [
        {"profiling_name": "nccl:all_reduce", "collective_seq_id": "7", "input_sizes": "nope",
         "frames": [1, {"name": ["x"]}], "state": None, "time_created_ns": -5, "process_group": 3},
        {"no_profiling_name": True}, "text", None]}
    t = flightrec.read(pickle.dumps(odd, protocol=2), "rank0.pkl")
    assert len(t) == 1 and any("skipped" in p for p in t.problems)
    e = t.entry(0)
    assert e.seq == 7 and e.shape.in_sizes == () and e.created_ns is None
    for bad in (pickle.dumps([1, 2]), pickle.dumps({"a": 1}), b"\x80\x02}q\x00.", b"{not json"):
        with pytest.raises(flightrec.DumpError):
            flightrec.read(bad, "rank0")
    deep = b"\x80\x02" + b"]" * 200_000 + b"." 
    with pytest.raises(flightrec.DumpError):
        flightrec.read(deep, "rank0")


def test_dumps_of_another_job_and_duplicate_ranks_are_left_out(tmp_path):
    for f in STRAGGLER.iterdir():
        shutil.copy(f, tmp_path / f.name)
    other = tmp_path / "other_job"
    other.mkdir()
    shutil.copy(FORMATS / "nccl_trace_rank_0", other / "nccl_trace_rank_0")   # a 2-rank job
    shutil.copy(DESYNC / "nccl_trace_rank_3", other / "fr_rank_3")           # same shape of job, second rank 3
    traces = [read(p) for p in sorted(tmp_path.rglob("*")) if p.is_file()]
    m = collectives.match(traces)
    assert len(m.traces) == 4
    assert any("another job" in n for n in m.notes)
    assert any("second dump of rank 3" in n for n in m.notes)
    g = m.groups[0]
    assert [b.rank for b in g.behind] == [2] and g.waiting == (0, 1, 3)


# ------------------------------------------------------------------ cross-rank matching

def test_matching_names_the_rank_behind_and_the_desync():
    g = collectives.match([read(p) for p in STRAGGLER.iterdir()]).groups[0]
    assert (g.frontier, g.last_all_completed, g.waiting) == (6, 5, (0, 1, 3))
    assert [(b.rank, b.last_seq) for b in g.behind] == [(2, 5)]
    assert g.rows[-1].ranks("not-arrived") == [2] and g.rows[-1].ranks("waiting") == [0, 1, 3]
    d = collectives.match([read(p) for p in DESYNC.iterdir()]).groups[0]
    assert [(x.seq, x.rank) for x in d.desyncs] == [(6, 1)]
    assert d.desyncs[0].got.startswith("broadcast") and d.desyncs[0].expected.startswith("all_reduce")
    assert d.desyncs[0].ref.record == "entries[5]"


def test_fast_and_careful_readers_agree_on_real_dumps():
    for path in [*STRAGGLER.iterdir(), *FORMATS.iterdir()]:
        raw = flightrec.load(path.read_bytes())
        statuses = flightrec._pg_status(raw.get("pg_status"))
        fast = flightrec.RankTrace(path.name, 0, "", "")
        careful = flightrec.RankTrace(path.name, 0, "", "")
        assert flightrec._fill_fast(fast, raw["entries"], 0, statuses)
        flightrec._fill(careful, raw["entries"], 0, statuses)
        assert list(fast.entries()) == list(careful.entries())


def test_a_snapshot_without_a_hang_claims_nothing():
    """An on-demand dump always has a collective in flight; without a timeout, a watchdog dump
    or a death, that is not a hang and no cause is claimed from it."""
    a = analyze(FORMATS.parent)
    assert a.verdict.cause == "unknown"
    assert any("a snapshot, not a hang" in line for line in a.verdict.trace)
