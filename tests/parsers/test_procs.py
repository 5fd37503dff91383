"""procps `ps` tables (parsers/procs.py): REAL tables from fixtures/lab/held_waits (make.sh, ps_shapes.sh)
and a lab bundle."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers import parse_text

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
SHAPES = ROOT / "lab" / "held_waits" / "output" / "ps_shapes"


def _parse(path: Path):
    return parse_text(path.name, path.read_text(encoding="utf-8").splitlines())


def _tasks(path: Path) -> list[dict]:
    result = _parse(path)
    assert not result.sink.problems
    return [f.value for f in result.sink.facts if f.name == "proc.task"]


def test_a_forest_table_gives_each_task_state_wait_and_parent():
    rows = _tasks(SHAPES / "ps_forest.txt")
    assert [(r["stat"], r["wchan"]) for r in rows] == [("S", "do_wait"), ("T", "do_signal_stop")]
    assert rows[1]["ppid"] == rows[0]["pid"] and rows[1]["cmd"] == "sleep 300"   # the forest's \_ is not the command


def test_ps_l_reads_its_s_column_and_keeps_the_cut_wchan():
    rows = _tasks(SHAPES / "ps_l.txt")
    assert [(r["stat"], r["wchan"], r["cmd"]) for r in rows] == [("S", "do_wai", "bash"), ("T", "do_sig", "sleep")]


def test_a_table_without_wchan_is_not_read():
    assert _tasks(SHAPES / "ps_nowchan.txt") == []


def test_a_lab_table_with_elapsed_before_wchan():
    rows = _tasks(ROOT / "validation23" / "lab-a" / "lab5-scorer-pipe-deadlock-hang" / "bundle" / "ps.txt")
    assert [r["wchan"] for r in rows] == ["hrtimer_nanosleep", "do_wait", "anon_pipe_write", "futex_do_wait"]
    assert rows[2]["ppid"] == rows[1]["pid"] and rows[2]["cmd"].endswith("/tmp/tmp6vuaap8p.tsv")


def test_a_frozen_task_row_is_read_by_both_parsers():
    # a ps row in the freezer's wait is cgroup_state's per-task frozen state as well as a task row
    result = _parse(ROOT / "validation23" / "lab-c" / "lab5-node1-container-paused-freezer" / "bundle" / "node1_ps.txt")
    names = [f.name for f in result.sink.facts]
    assert "cgroup.frozen" in names and "proc.task" in names


def test_a_thread_table_gives_the_main_threads_row_only():
    # ps -L: one row per thread; a second thread asleep (hrtimer_nanosleep) is not the process's wait
    rows = _tasks(SHAPES / "ps_threads.txt")
    assert [(r["pid"], r["wchan"]) for r in rows] == [(rows[0]["pid"], "anon_pipe_read")]
