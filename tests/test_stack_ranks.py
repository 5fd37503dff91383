"""py-spy names a process, not a rank (`Process P: ...`): the stack takes the rank the bundle's
other lines give that pid (here torchrun's failure table: `rank : 1 (local_rank: 1)` beside
`exitcode : 1 (pid: P)`).  REAL: fixtures/lab/pyspy_pid_rank/make.sh (py-spy 0.4.3 dumps both gloo
workers while rank 1 sleeps in load_shard and rank 0 waits in all_reduce; rank 1 then raises)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from postmortem import stacks as stacklib
from postmortem.run import analyze

BUNDLE = Path(__file__).resolve().parents[1] / "fixtures/lab/pyspy_pid_rank/bundle"


def _pid_in_table(rank: int) -> int:
    table = (BUNDLE / "torchrun.log").read_text(encoding="utf-8")
    m = re.search(rf"rank\s+: {rank} \(local_rank: {rank}\)\n\s+exitcode\s+: -?\d+ \(pid: (\d+)\)", table)
    return int(m.group(1))


def test_pyspy_stacks_take_the_rank_of_their_pid():
    a = analyze(BUNDLE)
    got = {s.pid: stacklib.rank_of(s) for s in a.case.stacks if s.origin == "py-spy"}
    assert got == {_pid_in_table(0): 0, _pid_in_table(1): 1}
    main = stacklib.main_stacks(a.case.stacks)
    assert main[1].frames[0].function == "load_shard" and main[0].frames[0].function == "all_reduce"


def test_without_the_table_no_rank_is_guessed(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for f in BUNDLE.glob("pyspy-*.txt"):
        shutil.copy(f, bundle / f.name)
    a = analyze(bundle)
    assert [stacklib.rank_of(s) for s in a.case.stacks if s.origin == "py-spy"] == [None, None]
