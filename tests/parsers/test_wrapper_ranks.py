"""torchrun's `[defaultN]:` prefix carries the LOCAL rank (`[${role_name}${local_rank}]:`,
torch/distributed/elastic/agent/server/local_elastic_agent.py); torch's own excepthook prefix
`[rankN]:` the GLOBAL one (distributed_c10d.py init_process_group).  Nested, the global wins."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers.wrappers import strip

LAB = (Path(__file__).resolve().parents[2] / "fixtures" / "validation25" / "lab-c"
       / "lab7-node1-link-down-midrun-emergency-save-fails" / "bundle")


def _line(name: str, needle: str) -> str:
    return next(line.rstrip("\n") for line in (LAB / name).read_text(encoding="utf-8").splitlines()
                if needle in line)


def test_torchs_global_rank_inside_torchruns_local_prefix_wins():
    # node 1 of a two-node job, one process each: local rank 0, global rank 1 (real lab line)
    text, rank, _, _ = strip(_line("node1.log", "Timed out waiting 30000ms"))
    assert rank == 1
    assert text.startswith("RuntimeError: ")


def test_torchruns_local_prefix_alone_still_gives_its_rank():
    # near miss: the same log's own step line, only torchrun's prefix (real lab line)
    text, rank, _, _ = strip(_line("node1.log", "rank 1 step 20"))
    assert rank == 0 and "rank 1 step 20" in text


def test_an_outer_global_rank_is_not_replaced():
    # near miss (generated, marked): torch's prefix outermost keeps its rank
    assert strip("[rank2]:[default0]: x")[1] == 2
