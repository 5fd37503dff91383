"""A collective timeout beside the job's memory cgroup reading `under_oom 1` (signals.toml
cgroup.under_oom_during_hang; cgroup-v1/memory.rst "OOM Control").  Real bundle:
fixtures/validation30/lab-b/lab12-node1-container-oom-kill-disabled-rank-frozen-at-memcg-limit-hang
(node 1's container at its 700 MB limit with oom_kill_disable 1: its rank sleeps in the charge path,
node 0 times out in the allreduce)."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers import parse_text
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_CASE = ROOT / "fixtures/validation30/lab-b/lab12-node1-container-oom-kill-disabled-rank-frozen-at-memcg-limit-hang/bundle"
_MEMCG = "node1_container_memcg.txt"


def _copy(tmp_path: Path, edit=None, drop: tuple[str, ...] = ()) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for p in _CASE.iterdir():
        if p.name in drop:
            continue
        text = p.read_text(encoding="utf-8")
        (bundle / p.name).write_text(edit(p.name, text) if edit else text, encoding="utf-8")
    return bundle


def test_the_oom_control_transcript_gives_under_oom_of_its_group():
    path = _CASE / _MEMCG
    result = parse_text(path.name, path.read_text(encoding="utf-8").splitlines())
    got = [(f.name, f.value, f.text) for f in result.sink.facts if f.name.startswith("cgroup.")]
    assert got == [("cgroup.under_oom", 1, "under_oom 1 in /sys/fs/cgroup/memory")], got


def test_a_timeout_beside_the_jobs_group_under_oom_is_host_memory(tmp_path):
    v = analyze(_copy(tmp_path)).verdict
    assert v.cause == "host_oom", (v.cause, v.summary)
    assert any(t.startswith("cgroup-held-back: the job's memory cgroup was under OOM") for t in v.trace), v.trace


def test_the_same_group_not_under_oom_is_no_sign(tmp_path):
    """Near miss: the same bundle with the flag down (a group at its limit that reclaimed in time)."""
    bundle = _copy(tmp_path, lambda name, text: text.replace("under_oom 1", "under_oom 0") if name == _MEMCG else text)
    v = analyze(bundle).verdict
    assert v.cause != "host_oom", (v.cause, v.summary)
    assert not any("under OOM" in t for t in v.trace), v.trace


def test_another_group_under_oom_beside_one_that_is_not_is_not_the_jobs(tmp_path):
    """Near miss: two groups listed, one under OOM, the job's lines naming neither: whose is unknown."""
    other = ("$ cat /sys/fs/cgroup/memory/system.slice/other.service/memory.oom_control\n"
             "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    bundle = _copy(tmp_path, lambda name, text: text + other if name == _MEMCG else text)
    v = analyze(bundle).verdict
    assert v.cause != "host_oom", (v.cause, v.summary)
    assert any("which is the job's is not known" in t for t in v.trace), v.trace


def test_under_oom_without_a_hang_is_no_failure(tmp_path):
    """Near miss: node 1's files alone, no timeout in the bundle."""
    bundle = _copy(tmp_path, drop=("node0.console.log", "node1.console.log"))
    v = analyze(bundle).verdict
    assert v.cause != "host_oom", (v.cause, v.summary)
