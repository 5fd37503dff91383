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


def test_a_rank_deadlocked_on_its_own_childs_pipe_is_no_claim_from_one_dump(monkeypatch):
    # 30 s of silence and one dump (audit 11 H4): a snapshot.  Past the floor, rank 1 idle in backward is
    # still no wait: nothing in the bundle says the job ran on CPU (audit 11 L1), so no rank is seen waiting
    for name in ("deadlock-1", "http-1"):
        v = _verdict(LAB / name)
        assert v.cause == "unknown", v.trace
        assert "stacks.rank_blocked_in_own_wait" not in _signs(v)
    _floor_zero(monkeypatch)
    v = _verdict(LAB / "deadlock-1")
    assert v.cause == "unknown" and not {s for s in _signs(v) if s.startswith("stacks.")}, v.trace


def test_a_rank_in_a_plain_frame_of_its_own_only_leans():
    # socket.recv() and a time.sleep() polling loop are C calls py-spy does not show: the rank's
    # innermost frame is the job's own line, which says nothing of what it waited for
    for name in ("socket-1", "poll-1"):
        v = _verdict(LAB / name)
        assert v.cause == "unknown", (name, v.trace)
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
    assert hang._silence(case) is None
    assert hang._silence(analyze(LAB / "deadlock-1").case) is not None


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


def test_a_stalled_job_across_hosts_leans_to_the_path_its_ss_shows_losing(monkeypatch):
    # make_blackhole.sh: node 1 drops everything from node 0 after step 20; past the floor, the two nodes'
    # launchers say the job spans hosts, and the connection losing segments is its path (a lean)
    _floor_zero(monkeypatch)
    v = _verdict(LAB / "blackhole-1")
    assert v.cause == "unknown", v.trace
    assert "net.tcp_segments_lost" in _signs(v), v.trace


def test_the_same_collective_needs_every_worker_dumped(tmp_path):
    # one node's dump missing: the other node's rank may be anywhere -- not the whole job
    from postmortem.classify.rules import hang

    b = tmp_path / "blackhole-1"
    shutil.copytree(LAB / "blackhole-1", b)
    (b / "node1_pyspy.txt").unlink()
    case = analyze(b).case
    pid = next(s.pid for s in case.stacks if s.origin == "py-spy")
    one = {0: hang._Position("all_reduce", "", "", False, None, "py-spy")}
    one[0].pid = pid
    assert not hang._whole_job(case, one)


LOOP_GUARD = ROOT / "validation28" / "lab-d" / "lab10-switch-loop-guard-blocks-node1-port-midrun-hang" / "bundle"
BRIDGE = ROOT / "system" / "bridge_port_disabled"


def test_a_bridge_port_disabled_with_carrier_discards_what_the_stalled_job_sent(monkeypatch):
    # the switch's `bridge link` shows swp2 'state disabled' with LOWER_UP (its loop guard stopped it) beside
    # swp1 forwarding on the same bridge (so the bridge is up), a job across two nodes that hung: a lean
    # (60 s of silence and one dump is a snapshot: audit 11 H4; past the floor, one weak path sign)
    assert "net.path_discards" not in _signs(_verdict(LOOP_GUARD))
    _floor_zero(monkeypatch)
    v = _verdict(LOOP_GUARD)
    assert "net.path_discards" in _signs(v), v.trace
    assert v.confidence < 0.8


def test_a_disabled_port_without_carrier_is_not_a_discarding_port(tmp_path, monkeypatch):
    _floor_zero(monkeypatch)
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


def test_the_job_path_is_healthy_only_by_its_hosts_ss():
    # audit 11 H2: the `ss -tin` of both nodes at a straggler (fixtures/lab/stopped_vs_slow straggler-1:
    # the nodes' connections to each other established, nothing lost or unacknowledged) shows the path
    # healthy; under a token-bucket shaper (slow_tbf-1) or a DROP (blackhole-1) it does not
    from postmortem.classify.rules import interfaces

    slow = ROOT / "lab" / "stopped_vs_slow" / "output"
    assert "between the job's hosts" in interfaces.path_healthy(analyze(slow / "straggler-1").case)
    assert interfaces.path_healthy(analyze(slow / "slow_tbf-1").case) == ""
    assert interfaces.path_healthy(analyze(LAB / "blackhole-1").case) == ""
    assert interfaces.path_healthy(analyze(LAB / "deadlock-1").case) == ""   # no ss at all


def test_local_ranks_come_from_the_teardown_order_only_at_a_stall(tmp_path):
    from postmortem.classify.rules import hang

    assert hang._local_ranks(analyze(LAB / "http-1").case) == {18240: 0, 18243: 1}
    # without the stop from outside (no stall: a worker may have died before the teardown and
    # shifted the order) the pids stay unnamed
    b = _copy(tmp_path, "deadlock-1")
    log = b / "torchrun.log"
    log.write_text("".join(line for line in log.read_text().splitlines(True) if "death signal" not in line))
    assert all("local rank" not in f.summary for f in _verdict(b).alternatives)


# ---- round 11 audit (H2, H3, H4, M3, L1, L2): the auditor's REAL probes, fixtures/lab/audit11 (README) ----
AUDIT = ROOT / "lab" / "audit11"


def _floor_zero(monkeypatch):
    """As if the silence had lasted past threshold.stall_floor_s: the readings behind the stall are tested."""
    from postmortem.classify.rules import hang

    real = hang.LIMIT

    class _Limits:
        def __getattr__(self, name):
            return 0 if name == "stall_floor_s" else getattr(real, name)

    monkeypatch.setattr(hang, "LIMIT", _Limits())


def test_a_healthy_job_stopped_in_an_unlogged_phase_is_no_hang():
    # H4: stopped 15 s into a 40 s evaluation (in a child, in-process) while rank 1 waits in a barrier --
    # one dump cannot tell slow from stuck: a lean only, never "it hung", never a claim
    from postmortem.classify.rules import hang

    for name in ("healthy-ckpt-eval", "healthy-eval-inproc"):
        r = analyze(AUDIT / name / "bundle")
        v = r.verdict
        assert v.cause == "unknown", (name, v.trace)
        assert hang._stall(r.case) == []
        assert not {"stacks.rank_blocked_in_own_wait", "stacks.rank_running_elsewhere"} & _signs(v), v.trace
        assert any("the silence alone is no hang" in t for t in v.trace), v.trace
        assert not any("it hung" in t for t in v.trace)


def test_the_stall_floor_holds_for_the_earlier_stall_fixtures():
    # 30 s of silence after lines 0.3 s apart: the same silence a 40 s evaluation gives -- a snapshot now
    from postmortem.classify.rules import hang

    for name in ("deadlock-1", "http-1", "blackhole-1"):
        case = analyze(LAB / name).case
        assert hang._silence(case) is not None and hang._stall(case) == [], name


def test_a_second_dump_with_the_same_frames_makes_the_silence_a_hang(tmp_path):
    # make.sh redump: the deadlock dumped twice, 20 s apart, the same frames both times: the ranks did not move
    from postmortem.classify.rules import hang

    case = analyze(LAB / "redump-1").case
    assert hang._dumps_unmoved(case) and hang._stall(case) != []
    # the first dumps alone: 30 s of silence is below the floor, a snapshot
    b = _copy(tmp_path, "redump-1")
    for f in b.glob("py-spy_pid*-2.txt"):
        f.unlink()
    case = analyze(b).case
    assert not hang._dumps_unmoved(case) and hang._stall(case) == []
    # a second dump that differs (rank 1's second dump in place of rank 0's): it moved, no hang
    src = LAB / "redump-1"
    moved = tmp_path / "moved"
    shutil.copytree(src, moved)
    zero, one = sorted(p.name for p in src.glob("py-spy_pid*-2.txt"))
    text = (src / one).read_text()
    pid0, pid1 = zero.split("pid")[1].split("-")[0], one.split("pid")[1].split("-")[0]
    (moved / zero).write_text(text.replace(pid1, pid0))
    assert not hang._dumps_unmoved(analyze(moved).case)


def test_an_own_wait_is_strong_only_beside_a_healthy_path(monkeypatch):
    # H2: a rank waiting for its child (or a socket reply) while the others wait in a collective: the
    # fault that holds the wait may hold the collectives -- without `ss` of the job's path it only leans
    _floor_zero(monkeypatch)
    v = _verdict(AUDIT / "healthy-ckpt-eval" / "bundle")
    assert "stacks.rank_blocked_in_own_wait" not in _signs(v), v.trace
    assert "stacks.rank_elsewhere" in _signs(v)
    assert any("shows the job's path healthy" in t for t in v.trace), v.trace
    assert v.cause == "unknown"


def test_a_losing_connection_between_the_jobs_hosts_is_the_jobs_path(monkeypatch):
    # H2: the gloo pair between the two nodes listens on ephemeral ports no log names; both addresses are
    # local addresses of the bundle's two `ss` captures, so it is the job's path -- and not healthy
    from postmortem.classify.rules import interfaces

    _floor_zero(monkeypatch)
    r = analyze(AUDIT / "netfault-upload-child-ss" / "bundle")
    assert interfaces.path_healthy(r.case) == ""
    assert any(t.startswith("tcp-connection-losses: TCP connection 10.224.0.1:44149") for t in r.verdict.trace), r.verdict.trace
    assert r.verdict.category != "config"


def test_a_port_of_a_bridge_that_is_down_is_no_discarding_port(monkeypatch):
    # H3: br9 is down (listed without UP), so the kernel disabled its port with carrier: no path reading;
    # the loop-guard switch's disabled port beside a forwarding port of the same bridge still is one
    from postmortem.classify.rules.interfaces import PathDiscards

    _floor_zero(monkeypatch)
    v = _verdict(AUDIT / "desync-group-bridge" / "bundle")
    assert "net.path_discards" not in _signs(v), v.trace
    assert v.category != "comms"
    assert any("is not shown up" in t for t in v.trace), v.trace
    trace: list[str] = []
    assert [f.value["name"] for f, _, _ in PathDiscards()._ports(analyze(LOOP_GUARD).case, trace)] == ["swp2"]


def test_path_readings_and_the_same_collective_need_a_job_across_hosts(tmp_path, monkeypatch):
    # H3 (b, c): a torchrun --standalone job (one launcher) crosses no network: the disabled port of an UP
    # bridge (the loop guard's lines) beside it is not its path, and its ranks in one call are no transport stall
    from postmortem.classify.rules import hang, interfaces

    _floor_zero(monkeypatch)
    b = tmp_path / "bundle"
    shutil.copytree(AUDIT / "desync-group-bridge" / "bundle", b)
    (b / "host_net.txt").write_text((LOOP_GUARD / "switch_bridge_link.txt").read_text())
    r = analyze(b)
    assert not interfaces._spans_hosts(r.case)
    assert "net.path_discards" not in _signs(r.verdict) and "stacks.all_in_one_collective" not in _signs(r.verdict)
    assert any("nothing says the job spans hosts" in t for t in r.verdict.trace), r.verdict.trace
    assert r.verdict.category != "comms"


def test_one_nodes_launcher_is_not_the_whole_job(monkeypatch):
    # M3: node 0's log and dumps of a 3-rank job (node 1's rank hung): its launcher tore down its own two
    # workers only -- every dumped worker is not every rank of the job
    from postmortem.classify.rules import hang

    _floor_zero(monkeypatch)
    r = analyze(AUDIT / "half-job-view3" / "bundle")
    assert hang._stall(r.case)
    workers = sorted(e.pid for e in hang.events_of(r.case, (hang.KIND.launcher_sigterm,)))
    assert len(workers) == 2 and sorted(s.pid for s in r.case.stacks if s.origin == "py-spy") == workers
    where = {i: hang._Position("the gradient all-reduce of backward (DDP)", "", "", False, None, "py-spy")
             for i in range(2)}
    for i, pid in enumerate(workers):
        where[i].pid = pid
    assert not hang._whole_job(r.case, where)
    assert "stacks.all_in_one_collective" not in _signs(r.verdict)
    assert r.verdict.category != "comms"
    # both nodes' launchers, every worker dumped, as many as the ranks named: the whole job
    bh = analyze(LAB / "blackhole-1").case
    pids = sorted(e.pid for e in hang.events_of(bh, (hang.KIND.launcher_sigterm,)))
    fake = {i: hang._Position("all_reduce", "", "", False, None, "py-spy") for i in range(2)}
    for i, pid in enumerate(pids):
        fake[i].pid = pid
    assert hang._whole_job(bh, fake)


def test_a_cpu_job_is_read_from_positive_evidence():
    # L1: no NCCL line is no proof of a CPU job (a CUDA job without NCCL_DEBUG prints none); a gloo
    # line is (the gloo timeout of validation22 lab4-midrun-blackhole-timeout)
    from postmortem.classify.rules import hang

    assert not hang._cpu_only(analyze(LAB / "deadlock-1").case)
    gloo = ROOT / "validation22" / "lab4-midrun-blackhole-timeout" / "bundle"
    assert hang._cpu_only(analyze(gloo).case)


def test_a_hang_without_a_timeout_names_no_timeout():
    # L2: a claim on a job that hung with no timeout in the bundle takes the cause's without_timeout wording
    from postmortem.knowledge import load

    k = load()
    for cause in ("straggler_timeout", "nccl_timeout"):
        w = k.causes[cause].without_timeout
        assert w is not None and "timed out" not in w.title.lower(), cause
        assert not any("Raise the process-group timeout" in r for r in w.remediation)
        assert not any("report the timeout" in s for s in w.steps)
