"""Hangs without a timeout (round 11, h11-hangs): the job's progress lines stopped, it was stopped
from outside, and dumps of its workers say which rank held it up and doing what.  The bundles
are REAL: fixtures/lab/hang_stall/make.sh (torchrun, gloo, torch 2.13 CPU, py-spy) and
make_blackhole.sh (two network namespaces, an iptables DROP mid-run)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
LAB = ROOT / "lab" / "hang_stall" / "output"


def _verdict(bundle: Path):
    return analyze(bundle).verdict


def _signs(v) -> set[str]:
    """The registered signs of the verdict's findings, and those a claim rests on (the resolve line:
    a second finding of the root's cause is counted there, not listed)."""
    out = set()
    for f in ([v.root] if v.root else []) + list(v.alternatives) + list(v.symptoms):
        out.add(f.signal)
        out.update(f.signs)
    for t in v.trace:
        if "independent weak signs:" in t:
            out.update(x.strip() for x in t.split("independent weak signs:", 1)[1].split(","))
    return out


def _copy(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(LAB / name, dst)
    return dst


def test_a_rank_deadlocked_on_its_own_childs_pipe_held_the_job():
    v = _verdict(LAB / "deadlock-1")
    assert v.cause == "straggler_timeout", v.trace
    assert v.root.signal == "stacks.rank_blocked_in_own_wait"
    assert 0.35 <= v.confidence < 0.8
    # the blocked worker is named by its pid (the bundle does not say its rank), with its frame and caller
    assert "pid 14285 (local rank 0 by torchrun's teardown order)" in v.root.summary
    assert "Popen._try_wait" in v.root.summary
    assert "train_hang.py:46" in v.root.summary
    assert v.root.culprit_ranks == ()
    assert any("stopped from outside" in t for t in v.trace)


def test_a_rank_blocked_in_an_http_request_without_timeout_held_the_job():
    v = _verdict(LAB / "http-1")
    assert v.cause == "straggler_timeout", v.trace
    assert v.root.signal == "stacks.rank_blocked_in_own_wait"
    assert "SocketIO.readinto" in v.root.summary and "network reply" in v.root.summary


def test_a_rank_in_a_plain_frame_of_its_own_only_leans():
    # socket.recv() and a time.sleep() polling loop are C calls py-spy does not show: the rank's
    # innermost frame is the job's own line, which says nothing of what it waited for
    for name in ("socket-1", "poll-1"):
        v = _verdict(LAB / name)
        assert v.cause == "unknown", (name, v.trace)
        assert "stacks.rank_elsewhere" in _signs(v), (name, v.trace)
        assert "stacks.rank_blocked_in_own_wait" not in _signs(v)


def test_a_healthy_job_stopped_while_it_ran_is_no_hang():
    # dumped and stopped ~1 s after a progress line (lines every ~0.3 s): no stall, no reading
    v = _verdict(LAB / "healthy-1")
    assert v.cause == "unknown"
    assert not {s for s in _signs(v) if s.startswith("stacks.")}, v.trace


def test_without_the_stop_from_outside_the_dumps_are_a_snapshot(tmp_path):
    # the same deadlock with torchrun's 'Received 15 death signal' line removed: nothing says the
    # job was alive and stopped from outside, so the dumps only lean (a second dump decides)
    b = _copy(tmp_path, "deadlock-1")
    log = b / "torchrun.log"
    log.write_text("".join(line for line in log.read_text().splitlines(True) if "death signal" not in line))
    v = _verdict(b)
    assert v.cause == "unknown", v.trace
    assert "stacks.rank_blocked_in_own_wait" not in _signs(v)


def test_a_worker_death_before_the_stop_is_no_stall(tmp_path):
    # a worker's SIGKILL record before the stop (the real line of fixtures/bundles/lab-torchrun-oom-cgroup
    # train.log, a day earlier, spliced in): the job did not hang alive, a rank died -- the death is the story
    b = _copy(tmp_path, "deadlock-1")
    kill = next(line for line in (ROOT / "bundles" / "lab-torchrun-oom-cgroup" / "bundle" / "train.log")
                .read_text().splitlines(True) if "failed (exitcode: -9)" in line)
    log = b / "torchrun.log"
    lines = log.read_text().splitlines(True)
    at = next(i for i, line in enumerate(lines) if "death signal" in line)
    log.write_text("".join(lines[:at] + [kill] + lines[at:]))
    from postmortem.classify.rules import hang

    case = analyze(b).case
    assert hang._stall(case) == []
    assert hang._stall(analyze(LAB / "deadlock-1").case) != []


def test_backward_is_a_wait_only_without_nccl(tmp_path):
    # under NCCL a main thread idles in backward while device threads compute: not read as the
    # gradient all-reduce, so no rank is seen waiting and nothing is claimed.  The NCCL line is a
    # real one (fixtures/validation22 lab4 bundles print it under NCCL_DEBUG=INFO).
    b = _copy(tmp_path, "deadlock-1")
    (b / "nccl.log").write_text("vm:14286:14286 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n")
    v = _verdict(b)
    assert "stacks.rank_blocked_in_own_wait" not in _signs(v), v.trace


def test_group_setup_waits_are_no_transport_reading():
    # all four ranks in new_group after the ranks disagreed on the groups (a desync over a healthy
    # network): every rank in one call, but a set-up call -- not read as a stuck collective
    case = ROOT / "validation26" / "lab-a" / "lab8-eval-subgroup-created-on-members-only-hang" / "bundle"
    v = _verdict(case)
    assert "stacks.all_in_one_collective" not in _signs(v), v.trace
    assert v.category != "comms"


def test_every_rank_in_the_same_collective_at_a_stall_leans_to_the_transport():
    # make_blackhole.sh: node 1 drops everything from node 0 after step 20; both workers idle in
    # backward (the gradient all-reduce), every worker the launchers tore down is dumped
    v = _verdict(LAB / "blackhole-1")
    assert v.cause == "unknown", v.trace
    lean = [f for f in v.alternatives if f.signal == "stacks.all_in_one_collective"]
    assert lean and lean[0].cause == "nccl_timeout", v.trace
    assert "did not complete" in lean[0].summary


def test_the_same_collective_needs_every_worker_dumped(tmp_path):
    # one node's dump missing: the other node's rank may be anywhere -- no reading
    b = tmp_path / "blackhole-1"
    shutil.copytree(LAB / "blackhole-1", b)
    (b / "node1_pyspy.txt").unlink()
    v = _verdict(b)
    assert "stacks.all_in_one_collective" not in _signs(v), v.trace


LOOP_GUARD = ROOT / "validation28" / "lab-d" / "lab10-switch-loop-guard-blocks-node1-port-midrun-hang" / "bundle"
BRIDGE = ROOT / "system" / "bridge_port_disabled"


def test_a_bridge_port_disabled_with_carrier_discards_what_the_stalled_job_sent():
    # the switch's `bridge link` shows swp2 'state disabled' with LOWER_UP (its loop guard stopped it),
    # beside a job that hung with every rank in the gradient all-reduce: two independent weak signs
    v = _verdict(LOOP_GUARD)
    assert v.category == "comms", v.trace
    assert "net.path_discards" in _signs(v) and "stacks.all_in_one_collective" in _signs(v)
    assert v.confidence < 0.8


def test_a_disabled_port_without_carrier_is_not_a_discarding_port(tmp_path):
    # the same bundle with the real lines of a port the bridge disabled because its link went down
    # (fixtures/system/bridge_port_disabled/make.sh): that is the link-down reading's, not this one
    b = tmp_path / "bundle"
    shutil.copytree(LOOP_GUARD, b)
    (b / "switch_bridge_link.txt").write_text((BRIDGE / "disabled-nocarrier.txt").read_text())
    v = _verdict(b)
    assert "net.path_discards" not in _signs(v)
    assert not any(t.startswith("path-discards: switch port swp2") for t in v.trace), v.trace
    (b / "switch_bridge_link.txt").write_text((BRIDGE / "disabled-carrier.txt").read_text())
    v = _verdict(b)
    assert "net.path_discards" in _signs(v)
    assert any(t.startswith("path-discards: switch port swp2") for t in v.trace), v.trace


def test_a_network_read_beside_a_failing_network_only_leans(tmp_path):
    # the http-1 hang with the `ss -tin` of make_blackhole.sh beside it (a connection with data in
    # flight and segments marked lost): the fault that holds the collectives may hold the read too
    b = _copy(tmp_path, "http-1")
    shutil.copy(LAB / "blackhole-1" / "node1_ss_tin.txt", b / "ss_tin.txt")
    v = _verdict(b)
    assert "stacks.rank_blocked_in_own_wait" not in _signs(v), v.trace
    assert any("not read as its own wait" in t for t in v.trace)
    # a child process's wait is no network read: deadlock-1 beside the same lines still claims
    b = _copy(tmp_path, "deadlock-1")
    shutil.copy(LAB / "blackhole-1" / "node1_ss_tin.txt", b / "ss_tin.txt")
    assert _verdict(b).root.signal == "stacks.rank_blocked_in_own_wait"


def test_the_deadlocked_workers_fix_is_the_pipe_not_the_timeout():
    v = _verdict(LAB / "deadlock-1")
    assert v.remediation and "communicate()" in v.remediation[0], v.remediation


def test_local_ranks_come_from_the_teardown_order_only_at_a_stall(tmp_path):
    from postmortem.classify.rules import hang

    assert hang._local_ranks(analyze(LAB / "http-1").case) == {18240: 0, 18243: 1}
    # without the stop from outside (no stall: a worker may have died before the teardown and
    # shifted the order) the pids stay unnamed
    b = _copy(tmp_path, "deadlock-1")
    log = b / "torchrun.log"
    log.write_text("".join(line for line in log.read_text().splitlines(True) if "death signal" not in line))
    assert all("local rank" not in f.summary for f in _verdict(b).alternatives)
