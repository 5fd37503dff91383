"""The job's own story (issue 14): its window, its processes, one event per kernel line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from postmortem.report import jsonout
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parent.parent
BUNDLES = ROOT / "fixtures" / "bundles"


def _cited(v) -> list:
    out = list(v.root.evidence) if v.root else []
    for f in v.symptoms:
        out.extend(f.evidence)
    return out


def test_the_jobs_own_oom_kill_is_the_root_not_an_earlier_runs():
    """lab-torchrun-oom-cgroup: the kernel log also holds an earlier run's kill of pid 14842."""
    a = analyze(BUNDLES / "lab-torchrun-oom-cgroup/bundle")
    v = a.verdict
    assert v.cause == "host_oom"
    texts = [r.text for r in _cited(v)]
    assert any("Killed process 24650" in t for t in texts)
    assert not any("14842" in t for t in texts)
    assert v.root.first_at.strftime("%H:%M:%S") == "08:40:19"
    # dmesg.txt + dmesg_T.txt: each kill counted once
    assert "Killed process 24650" in v.root.summary and "(×" not in v.root.summary   # one line, no repeat count
    kills = [e for e in a.case.events if e.kind == "kernel.oom_kill"]
    assert sorted(e.pid for e in kills) == [14842, 24650]
    assert all(e.data.get("copies") for e in kills)
    earlier = next(e for e in kills if e.pid == 14842)
    assert earlier.data["context"] == "kernel history before the job"
    assert any(n.startswith("job window from 2026-11-29T08:40:09") for n in a.timeline_notes)


def test_straggler_timeout_cites_nothing_from_the_kernel_history():
    a = analyze(BUNDLES / "lab-torchrun-straggler-timeout/bundle")
    v = a.verdict
    assert v.cause == "straggler_timeout"
    context = {(e.ref.path, e.ref.line) for e in a.case.events if e.data.get("context")}
    assert context, "the kernel log's segfaults of other programs are context"
    assert not any((r.path, r.line) in context for r in _cited(v))
    assert not any(r.path.startswith("dmesg") for r in _cited(v))


def test_one_lane_per_process():
    """pid 24650 (kernel, launcher) and rank 1 (`[rank1]:`, ChildFailedError) are one process."""
    a = analyze(BUNDLES / "lab-torchrun-oom-cgroup/bundle")
    doc = json.loads(jsonout.render(a))
    lanes = {ev["lane"] for ev in doc["timeline"] if ev["pid"] in (24649, 24650) or ev["rank"] in (0, 1)}
    assert lanes == {"localhost · rank 0 · pid 24649", "localhost · rank 1 · pid 24650"}


def test_each_kernel_line_once_with_two_copies(tmp_path):
    """The same bundle with and without dmesg_T.txt gives the same kernel events."""
    src = BUNDLES / "lab-torchrun-oom-cgroup/bundle"
    one = tmp_path / "one"
    shutil.copytree(src, one)
    (one / "dmesg_T.txt").unlink()
    both = analyze(src).case.events
    single = analyze(one).case.events
    kinds = lambda evs: sorted(e.kind for e in evs if e.kind.startswith("kernel."))  # noqa: E731
    assert kinds(both) == kinds(single)


def test_without_a_launcher_start_nothing_is_history(tmp_path):
    """A training log that begins late says nothing of when the job began: no window."""
    src = BUNDLES / "lab-torchrun-oom-cgroup/bundle"
    b = tmp_path / "b"
    b.mkdir()
    for name in ("dmesg.txt", "proc_stat_btime.txt"):
        shutil.copy(src / name, b / name)
    lines = (src / "train.log").read_text().splitlines()
    (b / "train.log").write_text("\n".join(l for l in lines if "torch/distributed/run.py" not in l) + "\n")
    a = analyze(b)
    assert not any(e.data.get("context") == "kernel history before the job" for e in a.case.events)


def _launcher_events(lines: list[str]):
    from postmortem.parsers.base import Line, Sink
    from postmortem.parsers.launcher import LauncherParser

    sink = Sink()
    parser = LauncherParser("t.log", sink)
    for n, text in enumerate(lines, 1):
        if parser.wants(Line("t.log", n, text, text)):
            parser.feed(Line("t.log", n, text, text))
    parser.finish()
    return sink.events


def test_only_start_lines_open_the_window():
    """torchrun's elastic/ modules also log mid-run (restarts): such a line first in a log
    tail must not open the job's window there."""
    mid_run = ("I1129 08:40:19.828000 24576 torch/distributed/elastic/agent/server/api.py:712] "
               "[default] Worker group FAILED. 3/3 attempts left; will restart worker group")
    assert not [e for e in _launcher_events([mid_run]) if e.kind == "launcher.start"]
    banner = "W1129 08:40:09.251000 24576 torch/distributed/run.py:874] *****************************************"
    (start,) = [e for e in _launcher_events([banner, banner]) if e.kind == "launcher.start"]
    assert start.data["agent_pid"] == 24576 and start.data["launcher"] == "torchrun"


def test_deepspeed_start_and_spawned_lines():
    """DeepSpeed's launcher logs with `[asctime] [LEVEL] [file:line:func] msg` (deepspeed/utils/logging.py);
    these two lines follow launch.py's f-strings (`WORLD INFO DICT: ...`, `process N spawned with command: ...`)."""
    events = _launcher_events([
        "[2023-07-20 15:45:10,101] [INFO] [launch.py:145:main] WORLD INFO DICT: {'localhost': [0, 1]}",
        "[2023-07-20 15:45:10,202] [INFO] [launch.py:253:main] process 3966 spawned with command: "
        "['/usr/bin/python', '-u', 'train.py', '--local_rank=1']",
    ])
    kinds = [e.kind for e in events]
    assert kinds == ["launcher.start", "launcher.spawned"]
    spawned = events[1]
    assert spawned.pid == 3966 and spawned.data["local_rank"] == 1


def test_ray_job_submit_opens_and_closes_the_window():
    """fixtures/launcher/ray_job_submit_public.log: Ray's own RayJob quick-start output."""
    lines = (ROOT / "fixtures/launcher/ray_job_submit_public.log").read_text().splitlines()
    events = _launcher_events(lines)
    starts = [e for e in events if e.kind == "launcher.start"]
    ends = [e for e in events if e.kind == "launcher.finished"]
    assert [e.ref.line for e in starts] == [3] and starts[0].data["launcher"] == "ray"
    assert [(e.ref.line, e.data["status"], e.data["job"]) for e in ends] == [(22, "succeeded", "rayjob-sample-5ntcr")]
    assert ends[0].stamp.wall.isoformat() == "2023-08-21T17:08:46.040000"


def test_window_ends_at_ray_and_slurm_end_lines(tmp_path):
    """The window closes at `ray job submit`'s final status, and at slurmstepd's CANCELLED AT
    (a line quoted in fixtures/launcher/public_samples.txt, from hafs-community/HAFS#101)."""
    from postmortem import job

    assert {"launcher.finished", "launcher.cancelled"} <= set(job.END_KINDS)
    b = tmp_path / "b"
    b.mkdir()
    shutil.copy(ROOT / "fixtures/launcher/ray_job_submit_public.log", b / "ray.log")
    a = analyze(b)
    assert any(n.startswith("job window from 2023-08-21T17:08:23.727") and "to 2023-08-21T17:08:46.040" in n
               and "ray.log:22" in n for n in a.timeline_notes)
    cancelled = "slurmstepd: error: *** STEP 3495064.0 ON orion-01-01 CANCELLED AT 2021-10-27T19:35:36 ***"
    (event,) = [e for e in _launcher_events([cancelled]) if e.kind == "launcher.cancelled"]
    assert event.stamp.wall.isoformat() == "2021-10-27T19:35:36"


def test_container_and_host_pids_of_one_process_are_one_lane():
    """lab-pidns-straggler: torchrun ran in its own pid namespace, so its log names ranks by the
    inner pids 5 and 6 while the host-side py-spy dumps name 25482/25483-style host pids;
    collect's pid_ns.txt (NSpid) pairs them, and each process gets one lane."""
    bundle = BUNDLES / "lab-pidns-straggler/bundle"
    pairs = {}
    for line in (bundle / "pid_ns.txt").read_text().splitlines():
        outer, *inner = [int(x) for x in line.split("NSpid:")[1].split()]
        pairs[inner[-1]] = outer
    a = analyze(bundle)
    assert a.verdict.cause == "straggler_timeout" and a.verdict.root.culprit_ranks == (0,)
    doc = json.loads(jsonout.render(a))
    lanes = {e["lane"] for e in doc["timeline"] if e["rank"] is not None or e["pid"] in pairs.values()}
    for rank, inner in ((0, 5), (1, 6)):
        host = pairs[inner]
        assert f"localhost · rank {rank} · pid {host}" in lanes
        assert not any(lane.endswith(f"pid {inner}") for lane in lanes)
        own = [e for e in doc["timeline"] if e["pid"] == host]
        assert any(e["data"].get("ns_pid") == inner for e in own)           # torchrun's lines, merged
        assert any(e["source"].startswith("py-spy/") for e in own) or any(
            s["pid"] == host for s in doc["stacks"])                          # py-spy's, host pid
    # without pid_ns.txt the same process has two lanes: the pairs are what merges them
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "b"
        shutil.copytree(bundle, copy)
        (copy / "pid_ns.txt").unlink()
        doc2 = json.loads(jsonout.render(analyze(copy)))
        lanes2 = {e["lane"] for e in doc2["timeline"]}
        assert "localhost · rank 0 · pid 5" in lanes2 and f"localhost · pid {pairs[5]}" in lanes2


def test_pid_aliases_drop_an_inner_pid_two_namespaces_share():
    from postmortem import job
    from postmortem.model import Fact, Ref

    facts = [Fact("process.nspid", [100, 1], Ref("pid_ns.txt", 1)), Fact("process.nspid", [200, 1], Ref("pid_ns.txt", 2)),
             Fact("process.nspid", [101, 7], Ref("pid_ns.txt", 3)), Fact("process.nspid", [300], Ref("pid_ns.txt", 4))]
    assert job.pid_aliases(facts) == {7: 101}
