"""cgroup cpu / freezer / pids files (parsers/cgroup_state.py): real files from
fixtures/cgroup_state/make.sh (this machine's cgroup v1 kernel) and the lab bundles."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers import parse_text

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "fixtures" / "cgroup_state"


def _facts(path: Path) -> dict:
    result = parse_text(path.name, path.read_text(encoding="utf-8").splitlines())
    assert not result.sink.problems and result.unclaimed == 0
    return {f.name: f.value for f in result.sink.facts}


def test_cpu_files_after_a_header_give_quota_period_and_throttled_periods():
    starved = _facts(HERE / "cpu_starved.txt")
    assert starved["cgroup.cpu_quota_us"] == 5000 and starved["cgroup.cpu_period_us"] == 100000
    assert starved["cgroup.cpu_periods"] == 16 and starved["cgroup.cpu_throttled_periods"] == 15
    generous = _facts(HERE / "cpu_generous.txt")
    assert generous["cgroup.cpu_throttled_periods"] == 0 and generous["cgroup.cpu_periods"] == 15


def test_freezer_state_after_cat_and_in_grep_form():
    result = parse_text("freezer.txt", (HERE / "freezer.txt").read_text(encoding="utf-8").splitlines())
    assert [(f.name, f.value) for f in result.sink.facts] == [("cgroup.frozen", True), ("cgroup.frozen", False)]


def test_pids_limit_and_refusals_from_a_lab_bundle():
    facts = _facts(ROOT / "fixtures/validation23/lab-c/lab5-container-pids-limit-omp-threads/bundle/container_pids_cgroup.txt")
    assert facts["cgroup.pids_max"] == 24 and facts["cgroup.pids_max_hits"] == 4
    assert facts["cgroup.pids_group"] == "/pm5c-job2"   # v1: the path under the pids hierarchy's mount


def test_cgroup_v2_cpu_max_and_events():
    # cgroup-v2.rst: cpu.max is "$MAX $PERIOD"; cgroup.events holds "populated N" and "frozen N".
    # (Written at test time in the kernel's documented form: this host mounts cgroup v1.)
    lines = ["$ cat /sys/fs/cgroup/job/cpu.max", "max 100000", "/sys/fs/cgroup/job/cgroup.events:frozen 1",
             "/sys/fs/cgroup/job/pids.max:max"]
    result = parse_text("cg.txt", lines)
    facts = {f.name: f.value for f in result.sink.facts}
    assert facts == {"cgroup.cpu_quota_us": "unlimited", "cgroup.cpu_period_us": 100000, "cgroup.frozen": True,
                     "cgroup.pids_max": "unlimited", "cgroup.pids_group": "/job"}


def test_a_value_line_without_its_header_is_not_read():
    # near miss: "FROZEN" or a bare number alone names no file
    result = parse_text("x.txt", ["FROZEN", "24", "max 4"])
    assert not result.sink.facts


FREEZER_PS = ROOT / "fixtures/validation23/lab-c/lab5-node1-container-paused-freezer/bundle/node1_ps.txt"


def test_a_ps_row_waiting_in_the_freezer_is_a_frozen_task():
    result = parse_text("node1_ps.txt", FREEZER_PS.read_text(encoding="utf-8").splitlines())
    frozen = [(f.text, f.ref.line) for f in result.sink.facts if f.name == "cgroup.frozen"]
    # the state names its group (audit 8 H4: a listing of several groups is read per group)
    assert frozen == [("pid 16394 waits in refrigerator", 3), ("FROZEN in /sys/fs/cgroup/freezer/pm5c-node1", 7)]


def test_refrigerator_as_a_word_of_the_command_line_is_no_wait_channel():
    # generated at test time (hostile): the word in the command, after a path or last on the row
    lines = ["  PID  PPID STAT WCHAN  CMD", "55 1 Ss do_epoll_wait python /srv/refrigerator ok",
             "56 1 Ss do_epoll_wait python train.py refrigerator", "57 1 S refrigerator_x python"]
    facts = parse_text("ps.txt", lines).sink.facts
    assert not [f for f in facts if f.name == "cgroup.frozen"]
    # the rows are tasks with their own wait channel (parsers/procs.py), never the freezer's
    assert [f.value["wchan"] for f in facts if f.name == "proc.task"] == ["do_epoll_wait", "do_epoll_wait", "refrigerator_x"]


def test_a_value_longer_than_any_counter_is_said_not_dropped_silently():
    # audit 8 L7 -- deliberately hostile input generated at test time (no kernel prints a 20-digit
    # pids.max: its counters are 64-bit); near miss: the same line with the largest 19-digit value
    lines = ["/sys/fs/cgroup/x/pids.max: 99999999999999999999", "== /sys/fs/cgroup/cpu/x/cpu.stat", "nr_periods 123456789012345678901"]
    result = parse_text("cg_odd.txt", lines)
    assert len(result.sink.problems) == 2 and all("more than 19 digits" in p for p in result.sink.problems)
    ok = parse_text("cg_ok.txt", ["/sys/fs/cgroup/x/pids.max: 9223372036854775807"])
    assert not ok.sink.problems and [f.value for f in ok.sink.facts if f.name == "cgroup.pids_max"] == [9223372036854775807]
