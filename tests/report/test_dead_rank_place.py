"""Audit 13 M3: an `unknown` verdict is placed at the rank that died, not at the survivor whose
traceback is only its peer ending.  REAL: fixtures/lab/audit13/peer_ends/make.sh kill1 -- two torchrun
nodes, rank 1 SIGKILLs itself mid all_reduce; rank 0 prints gloo's 'Connection reset by peer' and exits
1.  Each node's agent prints its own "Root Cause (first observed failure)": node0's names rank 0
(exitcode 1), node1's rank 1 (exitcode -9, SIGKILL)."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

from postmortem.report import markdown, terminal
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_KILL1 = ROOT / "fixtures/lab/audit13/peer_ends/kill1"


def _render(a) -> str:
    out = io.StringIO()
    terminal.render(a, out)
    return out.getvalue()


def test_unknown_verdict_is_placed_at_the_killed_rank_not_the_survivor():
    a = analyze(_KILL1)
    assert a.verdict.cause == "unknown", a.verdict.trace
    assert a.verdict.launcher_root is not None and a.verdict.launcher_root.rank == 1, a.verdict.trace
    assert a.verdict.launcher_root.signal == "SIGKILL"
    assert terminal.failing_rank(a) == 1
    text = _render(a)
    assert "where: host localhost, rank 1, pid 21734" in text, text
    assert "Stack of a rank that lost its peer" in text and "Failing stack" not in text, text
    assert terminal.status_line(a, None).endswith("on rank 1")
    assert "**rank** 1" in markdown.render(a)


def test_near_miss_only_the_survivors_log_stays_at_the_survivor(tmp_path):
    """Only node0's log: its launcher names rank 0, the rank that printed the reset; no other rank's
    death is in the bundle, so nothing moves the place."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(_KILL1 / "node0_torchrun.log", bundle / "node0_torchrun.log")
    a = analyze(bundle)
    assert a.verdict.cause == "unknown"
    assert a.verdict.launcher_root is not None and a.verdict.launcher_root.rank == 0
    assert terminal.failing_rank(a) == 0
    assert "Failing stack" in _render(a)
