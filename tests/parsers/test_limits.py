"""/proc/PID/limits (proclimits.py) and the memory cgroup as `collect` writes it (cgroup.py):
real files from fixtures/system/limits/make.sh and the crash lab bundles."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.grammar import load
from postmortem.parsers import parse_text

ROOT = Path(__file__).resolve().parents[2]
LIMITS = ROOT / "fixtures" / "system" / "limits"
BUNDLES = ROOT / "fixtures" / "bundles"


def _read(path: Path, name: str | None = None):
    result = parse_text(name or path.name, path.read_text(encoding="utf-8").splitlines())
    assert not result.sink.problems
    return result


def _facts(result) -> dict:
    return {f.name: f.value for f in result.sink.facts}


@pytest.mark.parametrize("name", ["proclimits", "cgroup"])
def test_grammar_builds_strict(name):
    assert load(name, strict=True) is not None


def test_proc_limits_gives_soft_and_hard_limits_in_bytes():
    result = _read(LIMITS / "proc_limits_low.txt", "proc_limits.txt")
    facts = _facts(result)
    assert facts["ulimit.nofile"] == 1024 and facts["ulimit.nofile_hard"] == 4096
    assert facts["ulimit.memlock"] == 65536 and facts["ulimit.memlock_hard"] == 65536
    assert facts["ulimit.virtual"] == "unlimited"
    assert facts["ulimit.core"] == 0 and facts["ulimit.core_hard"] == "unlimited"
    assert result.unclaimed == 0 and "proclimits" in result.parsers
    memlock = next(f for f in result.sink.facts if f.name == "ulimit.memlock")
    assert memlock.unit == "B" and memlock.ref.line == 10 and "Max locked memory" in memlock.ref.text


def test_proc_limits_of_the_lab_fd_case_shows_its_1024():
    facts = _facts(_read(BUNDLES / "lab-fd-limit-dataloader/bundle/proc_limits.txt"))
    assert facts["ulimit.nofile"] == 1024 and facts["ulimit.memlock"] == 8 << 20


def test_cgroup_v1_read_for_a_pid_after_an_oom_kill():
    result = _read(LIMITS / "cgroup_memory_v1_pid_oom.txt", "cgroup_memory.txt")
    facts = _facts(result)
    assert isinstance(facts["cgroup.reader"], int) and facts["cgroup.path_v1"] == "/pmfix-limits"
    assert facts["cgroup.memory_max_bytes"] == 64 << 20
    assert facts["cgroup.memory_peak_bytes"] == 64 << 20
    assert facts["cgroup.oom_kill"] == 1 and facts["cgroup.under_oom"] == 0
    assert result.unclaimed == 0


def test_cgroup_v1_no_limit_figure_is_unlimited():
    # the lab's fd case ran in the host's own group: limit_in_bytes 9223372036854771712
    facts = _facts(_read(BUNDLES / "lab-fd-limit-dataloader/bundle/cgroup_memory.txt"))
    assert facts["cgroup.memory_max_bytes"] == "unlimited" and facts["cgroup.reader"] == "self"
    assert facts["cgroup.oom_kill"] == 0


def test_cgroup_v2_lines():
    """This host mounts the memory controller on v1 only, so no v2 file could be made here:
    these lines are CONSTRUCTED at test time in collect's `FILE: LINE` form from the keys
    Linux's Documentation/admin-guide/cgroup-v2.rst lists for memory.events (not a real output)."""
    d = "/sys/fs/cgroup/kubepods.slice/pod1/cri-containerd-1.scope"
    lines = ["# /proc/4242/cgroup memory (v1): None", "# /proc/4242/cgroup v2: /kubepods.slice/pod1/cri-containerd-1.scope",
             f"{d}/memory.max: 2147483648", f"{d}/memory.high: max", f"{d}/memory.current: 2147000000",
             f"{d}/memory.peak: 2147483648", f"{d}/memory.swap.max: max",
             *(f"{d}/memory.events: {key} {n}" for key, n in
               (("low", 0), ("high", 0), ("max", 41), ("oom", 3), ("oom_kill", 2), ("oom_group_kill", 0))),
             f"{d}/memory.events.local: oom_kill 0"]
    result = parse_text("cgroup_memory.txt", lines)
    facts = _facts(result)
    assert facts["cgroup.reader"] == 4242 and "cgroup.path_v1" not in facts
    assert facts["cgroup.memory_max_bytes"] == 2 << 30
    assert facts["cgroup.oom_kill"] == 2 and facts["cgroup.oom"] == 3 and facts["cgroup.max_hits"] == 41
    assert facts["cgroup.oom_kill_local"] == 0
    assert result.unclaimed == 0


def test_hostile_lines_are_declined_not_raised():
    """Generated at test time: a figure too big for any machine, and lines shaped almost right."""
    lines = ["/sys/fs/cgroup/x/memory.max: " + "9" * 400, "Max open files " + "1" * 300 + "  5  files",
             "/sys/fs/cgroup/x/memory.events: oom_kill -1", "Max open files            ten   5   files",
             "# /proc/../cgroup v2: /"]
    result = parse_text("cgroup_memory.txt", lines)
    assert not result.sink.problems
    limit = [f.value for f in result.sink.facts if f.name == "cgroup.memory_max_bytes"]
    assert limit in ([], ["unlimited"])
    assert not any(f.name == "cgroup.oom_kill" for f in result.sink.facts)
    assert not any(f.name == "ulimit.nofile" for f in result.sink.facts)
