"""PyTorch's own checks of the job's misuse (pytorch catalog family "misuse",
tools/catalogs/gen_pytorch.py): one such line is a strong app_error sign.  The lines are real:
fixtures/lab/output/lab-torch-misuse-lines/lines.txt, made by fixtures/lab/torch_misuse_lines.sh
with torch 2.13.0.  Near misses are real lines of other causes that must not read as misuse."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.knowledge import catalog as C
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
LINES = (ROOT / "fixtures/lab/output/lab-torch-misuse-lines/lines.txt").read_text(encoding="utf-8").splitlines()
EXPECTED = ["pt.anomaly_nan_output", "pt.optim_state_group_size", "pt.optim_state_group_count",
            "pt.ddp_variable_ready_twice"]


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "stderr.txt").write_text(text + "\n", encoding="utf-8")
    return analyze(bundle).verdict


def test_the_lab_made_one_line_per_check():
    assert len(LINES) == len(EXPECTED)


@pytest.mark.parametrize("i", range(len(EXPECTED)), ids=EXPECTED)
def test_each_real_misuse_line_is_read_by_its_catalog_entry(i):
    m = C.match_message(LINES[i], ("pytorch",))
    assert m is not None and m.entry.id == EXPECTED[i], LINES[i]
    assert m.cause == "app_error" and m.strength == "specific"


@pytest.mark.parametrize("i", range(len(EXPECTED)), ids=EXPECTED)
def test_a_misuse_line_alone_claims_the_jobs_code(tmp_path, i):
    v = _verdict(tmp_path, LINES[i])
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert v.confidence >= 0.5


# Near misses, real lines of other causes with nearby words:
NEAR_MISSES = [
    # torch's CUDA caching allocator (a gpu_oom, not the job's misuse); corpus oom-gpu-* form
    ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
     "14.23 GiB already allocated; 4.75 MiB free; 14.53 GiB reserved in total by PyTorch)", "gpu_oom"),
    # torch.load of a truncated checkpoint file (torch/serialization.py): not a state dict that fails to fit
    ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory", None),
    # anomaly mode's warning that precedes the error names no NaN (torch/autograd/graph.py, lab3 run)
    ("UserWarning: Error detected in PowBackward0. Traceback of forward call that caused the error:", None),
]


@pytest.mark.parametrize("line,cause", NEAR_MISSES, ids=["cuda-oom", "truncated-checkpoint", "anomaly-warning"])
def test_near_misses_are_not_read_as_misuse(tmp_path, line, cause):
    m = C.match_message(line, ("pytorch",))
    assert m is None or m.entry.subsystem != "misuse"
    if cause is not None:
        assert _verdict(tmp_path, line).cause == cause
