"""Launcher lines: real torchrun 2.13 output made here (fixtures/launcher/make_fixtures.sh) and
lines quoted in public reports (fixtures/launcher/SOURCE.md)."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.grammar import load
from postmortem.parsers import parse_text
from postmortem.parsers.launcher import FAMILIES, signal_of_exitcode

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "launcher"


def _parse(name: str):
    path = FIXTURES / name
    return parse_text(name, path.read_text(encoding="utf-8").splitlines())


def _events(result, kind: str):
    return [e for e in result.sink.events if e.kind == kind]


def test_grammar_builds_strict_for_every_family():
    for start, _ in FAMILIES:
        load("launcher", start=start, strict=True)


@pytest.mark.parametrize("code,signal", [(-7, "SIGBUS"), (-9, "SIGKILL"), (-11, "SIGSEGV"), (-6, "SIGABRT"),
                                         (-15, "SIGTERM"), (1, None), (0, None)])
def test_signal_of_exitcode(code, signal):
    assert signal_of_exitcode(code) == signal


@pytest.mark.parametrize("name,exitcode,signal", [
    ("torchrun_sigbus.log", -7, "SIGBUS"),
    ("torchrun_sigsegv.log", -11, "SIGSEGV"),
    ("torchrun_sigkill.log", -9, "SIGKILL"),
    ("torchrun_exception.log", 1, None),
    ("torchrun_sigbus_short.log", -7, "SIGBUS"),
])
def test_torchrun_root_cause_and_peer(name, exitcode, signal):
    result = _parse(name)
    assert result.unclaimed == 0
    assert not result.sink.problems
    failed = _events(result, "launcher.child_failed")
    assert len(failed) == 2
    peer, root = failed
    assert (peer.rank, peer.data["local_rank"], peer.data["exitcode"], peer.data["signal"]) == (0, 0, -15, "SIGTERM")
    assert peer.data["root"] is False
    assert root.data["root"] is True
    assert (root.rank, root.data["local_rank"], root.host) == (1, 1, "localhost")
    assert root.data["exitcode"] == exitcode and root.data.get("signal") == signal
    assert root.stamp.wall.year == 2026 and root.stamp.year_known
    assert root.ref.text.lstrip().startswith("exitcode")
    # the agent's own one-liners agree with the table
    (exit_line,) = _events(result, "launcher.exit")
    assert exit_line.pid == root.pid and exit_line.data["exitcode"] == exitcode
    (sigterm,) = _events(result, "launcher.sigterm")
    assert sigterm.pid == peer.pid and sigterm.data["signal"] == "SIGTERM"


def test_table_read_by_the_launcher_parser_alone():
    """Header and banner: in a full parse the traceback parser may take them (it ends the agent's traceback)."""
    from postmortem.parsers.base import Line, Sink
    from postmortem.parsers.launcher import LauncherParser

    lines = (FIXTURES / "torchrun_sigbus.log").read_text(encoding="utf-8").splitlines()
    sink = Sink()
    parser = LauncherParser("torchrun_sigbus.log", sink)
    claimed = [n for n, text in enumerate(lines, 1) if parser.feed(Line("t", n, text, text))]
    parser.finish()
    # lines 3-6: torchrun's start banner (the first opens the job's window)
    assert claimed == [3, 4, 5, 6, 13, 14, *range(31, 53)]
    assert [e.kind for e in sink.events] == ["launcher.start", "launcher.sigterm", "launcher.exit", "launcher.failed",
                                             "launcher.child_failed", "launcher.child_failed"]
    assert {e.data["script"] for e in sink.events[4:]} == {"crash_worker.py"}
    assert [e.data["root"] for e in sink.events[4:]] == [False, True]


def test_glog_stamp_has_no_year_and_carries_agent_pid():
    result = _parse("torchrun_sigbus.log")
    (sigterm,) = _events(result, "launcher.sigterm")
    assert sigterm.stamp.year_known is False
    assert (sigterm.stamp.wall.month, sigterm.stamp.wall.day) == (11, 29)
    assert sigterm.data["agent_pid"] == 8717
    assert sigterm.stamp.resolution_s == pytest.approx(1e-3)


def test_record_traceback_is_kept_with_the_entry():
    result = _parse("torchrun_record_exception.log")
    assert result.unclaimed == 0
    root = [e for e in _events(result, "launcher.child_failed") if e.data["root"]][0]
    assert root.data["exception"] == "ValueError: boom from rank 1"
    assert root.data["error_file"].endswith("/error.json")
    assert "raise ValueError" in root.data["traceback"]


def test_spawn_process_exited_and_terminating():
    result = _parse("spawn_abort.log")
    (term,) = _events(result, "launcher.sigterm")
    assert term.pid == 9484 and term.data["launcher"] == "spawn"
    # the ProcessExitedException line ends a traceback: in a full parse the traceback parser
    # takes it, so read it alone here
    (line,) = [t for t in (FIXTURES / "spawn_abort.log").read_text().splitlines() if "ProcessExitedException: process" in t]
    (exit_event,) = _events(parse_text("x", [line]), "launcher.exit")
    assert exit_event.data["signal"] == "SIGABRT" and exit_event.data["local_rank"] == 1


def test_shell_job_status_lines():
    result = _parse("shell_deaths.log")
    assert result.unclaimed == 0
    exits = _events(result, "launcher.exit")
    assert [e.data["signal"] for e in exits] == [
        "SIGSEGV", "SIGKILL", "SIGABRT", "SIGBUS", "SIGBUS", "SIGSEGV", "SIGSEGV", "SIGBUS"]
    assert [e.data["core_dumped"] for e in exits] == [False, False, False, False, True, True, False, False]
    assert exits[0].pid == 9510 and exits[0].data["script_line"] == 3
    assert exits[6].data["script"] == "bash"
    assert exits[7].pid is None  # dash prints the bare strsignal text


def test_public_samples():
    result = _parse("public_samples.txt")
    assert result.unclaimed == 0
    kinds = [e.kind for e in result.sink.events if e.kind.startswith("launcher.")]
    assert kinds.count("launcher.sigterm") == 5
    assert kinds.count("launcher.oom_kill") == 3
    # five CANCELLED lines, one of them from `slurmstepd-localhost:` (no pdsh host prefix)
    assert kinds.count("launcher.cancelled") == 5
    by_line = {e.ref.line: e for e in result.sink.events if e.kind.startswith("launcher.")}
    assert by_line[2].stamp.wall.year == 2024 and by_line[2].pid == 270
    assert by_line[6].data["exitcode"] == -11 and by_line[6].data["signal"] == "SIGSEGV"
    assert by_line[6].data["local_rank"] == 1
    assert (by_line[7].rank, by_line[7].pid, by_line[7].host, by_line[7].data["signal"]) == (0, 636815, "fl98", "SIGSEGV")
    assert by_line[8].data["tasks"] == "1,3" and by_line[8].data["signal"] == "SIGABRT"
    assert by_line[9].rank == 0 and by_line[9].data["step"] == "527812.0"  # `0: ` srun label
    assert by_line[12].data["oom"] is True and by_line[12].rank == 4
    assert by_line[15].data["count"] == 2
    assert by_line[17].pid == 8156 and by_line[17].data["signal"] == "SIGKILL"
    assert by_line[21].data["scope"] == "job"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=12))
def test_arbitrary_text_never_raises(lines):
    result = parse_text("fuzz.txt", lines)
    assert not [p for p in result.sink.problems if p.startswith("launcher")]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "Failures:", "[0]:",
    "  time      : 2026-11-29_08:28:35", "  exitcode  : -7 (pid: 1)  (SIGBUS)", "  traceback : x",
    "    deeper", "  ", "", "=====================", "Root Cause (first observed failure):",
    "Bus error (core dumped)", "srun: error: n1: task 0: Killed",
]), max_size=20))
def test_table_fragments_never_raise(lines):
    result = parse_text("frag.txt", lines)
    assert not [p for p in result.sink.problems if p.startswith("launcher")]


@pytest.mark.parametrize("name,signal", [("subprocess_sigkill.log", "SIGKILL"), ("subprocess_sigbus.log", "SIGBUS"),
                                         ("subprocess_sigsegv.log", "SIGSEGV")])
def test_python_subprocess_launcher_child_died_of_a_signal(name, signal):
    """CPython's CalledProcessError for a negative returncode (Lib/subprocess.py __str__:
    "Command '%s' died with %r."), raised by a launcher that runs the job with
    subprocess.run(check=True) -- real output (fixtures/launcher/subprocess_launch.py)."""
    result = _parse(name)
    (exit_line,) = _events(result, "launcher.exit")
    assert exit_line.data["launcher"] == "subprocess"
    assert exit_line.data["signal"] == signal
    assert "subprocess_launch" not in exit_line.data["command"] and "-c" in exit_line.data["command"]
    assert exit_line.ref.text.startswith("subprocess.CalledProcessError: Command '[")


def test_python_subprocess_nonzero_exit_is_no_death_by_signal():
    """A plain non-zero status ("returned non-zero exit status 1.") is an exit, not a signal."""
    line = "subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status 1."
    result = parse_text("stderr.txt", [line])
    assert not _events(result, "launcher.exit")


@pytest.mark.parametrize("name,signal", [("lightning_child_kill.log", "SIGKILL"), ("lightning_child_bus.log", "SIGBUS")])
def test_lightning_observer_reports_a_local_rank_killed_by_a_signal(name, signal):
    """Lightning's _ChildProcessObserver (lightning/fabric/strategies/launchers/subprocess_script.py):
    "[rank: 1] Child process with PID N terminated with code -9. ..." -- Popen's negative code is the
    signal; the prefix is the local rank.  Real output (fixtures/launcher/lightning_child_killed.py)."""
    result = _parse(name)
    (exit_line,) = _events(result, "launcher.exit")
    assert exit_line.data["launcher"] == "lightning"
    assert exit_line.data["signal"] == signal
    assert exit_line.data["local_rank"] == 1 and exit_line.pid > 0


def test_lightning_observer_line_after_a_logger_prefix_and_a_plain_exit_code():
    """A logging prefix before the message is skipped; a positive code is an exit, no signal."""
    line = ("[2025-01-02 10:00:00,000][lightning.fabric.strategies.launchers.subprocess_script][INFO] - "
            "[rank: 3] Child process with PID 812 terminated with code 1. Forcefully terminating all other processes")
    (exit_line,) = _events(parse_text("stderr.txt", [line]), "launcher.exit")
    assert exit_line.data["exitcode"] == 1 and "signal" not in exit_line.data
    assert exit_line.data["local_rank"] == 3 and exit_line.pid == 812
