"""evaluate() rows carry an unknown verdict's lean, so a sweep can say what its abstentions leaned to
(tools/sweep_score.py prints leaning right / wrong / none)."""
import json

from conftest import FIXTURES
from postmortem.evaluate import evaluate


def _case(root, name, truth_cause, log):
    case = root / name
    (case / "bundle").mkdir(parents=True)
    (case / "truth.json").write_text(json.dumps({"category": "config", "cause": truth_cause}), encoding="utf-8")
    (case / "bundle" / "train.log").write_bytes(log)
    return case


def test_rows_carry_the_lean_of_an_unknown_verdict_and_none_for_a_claim(tmp_path):
    killed = (FIXTURES / "launcher" / "lightning_child_kill.log").read_bytes()
    _case(tmp_path, "a-lightning-kill", "host_oom", killed)
    claimed = (FIXTURES / "corpus" / "shm-nccl-k8s-ci-08" / "bundle" / "nccl.log").read_bytes()
    _case(tmp_path, "b-shm", "shm_exhausted", claimed)
    rows = {r["case"]: r for r in evaluate([tmp_path])["cases"]}
    assert rows["a-lightning-kill"]["cause"] == "unknown" and rows["a-lightning-kill"]["leaning"] == "host_oom"
    assert rows["b-shm"]["cause"] == "shm_exhausted" and rows["b-shm"]["leaning"] == ""
