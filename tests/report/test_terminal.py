"""Terminal output: no escape code without a colour terminal, and none from the logs ever."""
from __future__ import annotations

import io
import os
import shutil
from datetime import datetime, timezone

import pytest

from postmortem.report import terminal
from postmortem.report.text import strip_escapes
from postmortem.run import analyze
from tests.report.reports import BUNDLES, analysis

LOG_ESCAPES = ("\x1b]0;", "\x1b[2J", "\x1b[31mRED", "\x9b", "\x07", "\u202e")


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_non_tty_output_has_no_escape_codes(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    terminal.render(analysis("injection"), out=out)
    assert "\x1b" not in out.getvalue() and "\x9b" not in out.getvalue()
    assert "gpu_fell_off_bus" in out.getvalue()


def test_no_color_on_a_tty_has_no_escape_codes(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    out = FakeTTY()
    terminal.render(analysis("cores"), out=out)
    assert "\x1b" not in out.getvalue()


def test_colour_terminal_gets_colour_but_never_the_logs_escapes(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = FakeTTY()
    terminal.render(analysis("injection"), out=out)
    text = out.getvalue()
    assert "\x1b[" in text          # our own colours
    for seq in LOG_ESCAPES:
        assert seq not in text, repr(seq)


def test_timeline_head_marks_inferred_times_and_the_root(tmp_path):
    # The cores' times come from their files' mtimes: set them here, on a copy, to a known day.
    bundle = tmp_path / "cores"
    shutil.copytree(BUNDLES["cores"], bundle)
    day = datetime(2029, 3, 14, 9, 26, 53, tzinfo=timezone.utc).timestamp()
    for path in bundle.rglob("*"):
        os.utime(path, (day, day))
    out = io.StringIO()
    terminal.render(analyze(bundle), out=out)
    text = out.getvalue()
    assert "≈2029-03-14" in text and "ROOT" in text and "file-mtime" in text


def test_quiet_leaves_out_the_timeline():
    out = io.StringIO()
    terminal.render(analysis("cores"), out=out, quiet=True)
    assert "Timeline" not in out.getvalue()


def test_strip_escapes():
    line = "a\x1b[31mred\x1b[0m b\x1b]0;title\x07c \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x9b2J\x00d\u202ee\tf"
    assert strip_escapes(line) == "ared bc link 2Jde\tf"


# The rank each lab bundle's truth.json names as the one that held the job up (its "evidence").
BLAMED_RANK = {"lab-torchrun-straggler-timeout": 0, "lab-flightrec-straggler": 2,
               "lab-flightrec-hang-stacks": 3, "lab-flightrec-desync": 1, "lab-flightrec-sigkill": 1}


@pytest.mark.parametrize("case", sorted(BLAMED_RANK))
def test_status_line_names_the_rank_that_held_the_job_up_not_the_one_that_timed_out(case):
    bundle = BUNDLES["cores"].parent / "bundles" / case / "bundle"
    line = terminal.status_line(analyze(bundle), None)
    assert line.endswith(f" on rank {BLAMED_RANK[case]}"), line


def test_the_stack_shown_for_a_hang_is_the_blamed_ranks_main_thread():
    out = io.StringIO()
    terminal.render(analyze(BUNDLES["cores"].parent / "bundles" / "lab-flightrec-hang-stacks" / "bundle"), out=out)
    text = out.getvalue()
    assert "Stack of the rank that held the job up" in text and "pyspy/rank3" in text
    assert "Failing stack (rank 2)" not in text


@pytest.mark.parametrize("name", sorted(BUNDLES))
@pytest.mark.parametrize("report", [None, "reports/x.html", "reports/名前 · x.html"])
def test_quiet_plain_line_without_rich_is_what_rich_prints(name, report, monkeypatch):
    """`-q` on a pipe writes its one line without importing rich (startup time); the text is
    byte for byte what the rich console prints, artifact problems or not."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    fast, slow = io.StringIO(), io.StringIO()
    terminal.render(analysis(name), out=fast, quiet=True, report=report)
    monkeypatch.setattr(terminal, "_plain_line", lambda *args: False)
    terminal.render(analysis(name), out=slow, quiet=True, report=report)
    assert fast.getvalue() == slow.getvalue()


def test_quiet_one_line_bundle_does_not_import_rich(tmp_path):
    import subprocess
    import sys

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "nccl.log").write_text("node000:10000:10007 [0] NCCL INFO Bootstrap : Using eth1:10.0.0.1<0>\n")
    probe = ("import sys; from postmortem.cli import main; rc = main(sys.argv[1:]); "
             "print('rich' in sys.modules, 'jinja2' in sys.modules); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", probe, "analyze", str(tmp_path / "b"), "--html", "-", "-q"],
                       capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "NO_COLOR": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "False False"
