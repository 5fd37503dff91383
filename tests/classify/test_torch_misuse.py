"""PyTorch's own checks of the job's misuse (pytorch catalog family "misuse",
tools/catalogs/gen_pytorch.py): one such line is a strong app_error sign, as is the collective
fingerprint check of TORCH_DISTRIBUTED_DEBUG=DETAIL (pt.collective_mismatch, c10d family).  The
lines are real: fixtures/lab/output/lab-torch-misuse-lines/lines.txt, made by
fixtures/lab/torch_misuse_lines.sh with torch 2.13.0.  Near misses are real lines of other causes.
The fingerprint check reads collective_desync, the cause id for ranks calling different
collectives (causes.toml; round 17), in the same category."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.knowledge import catalog as C
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
LINES = (ROOT / "fixtures/lab/output/lab-torch-misuse-lines/lines.txt").read_text(encoding="utf-8").splitlines()

# Each entry and a fixed part of the line the lab run printed for it (the order of
# fixtures/lab/programs/torch_misuse.py; the two-rank lines come in either order).
EXPECTED = [
    ("pt.anomaly_nan_output", "RuntimeError: Function 'LogBackward0' returned nan values"),
    ("pt.optim_state_group_size", "ValueError: loaded state dict contains a parameter group"),
    ("pt.optim_state_group_count", "ValueError: loaded state dict has a different number"),
    ("pt.ddp_variable_ready_twice", "RuntimeError: Expected to mark a variable ready only once."),
    ("pt.state_dict_load_errors", "RuntimeError: Error(s) in loading state_dict for Linear:"),
    ("pt.state_dict_size_mismatch", "\tsize mismatch for weight: copying a param"),
    ("pt.matmul_shapes", "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)"),
    ("pt.broadcast_shapes", "RuntimeError: The size of tensor a (4) must match"),
    ("pt.conv_channels", "RuntimeError: Given groups=1, weight of size [8, 3, 3, 3]"),
    ("pt.cat_sizes", "RuntimeError: Sizes of tensors must match except in dimension 0."),
    ("pt.target_out_of_bounds", "IndexError: Target 7 is out of bounds."),
    ("pt.no_grad_fn", "RuntimeError: element 0 of tensors does not require grad"),
    ("pt.backward_twice", "RuntimeError: Trying to backward through the graph a second time"),
    ("pt.inplace_modified", "RuntimeError: one of the variables needed for gradient computation"),
    ("pt.matmul_dtypes", "RuntimeError: expected m1 and m2 to have the same dtype"),
    ("pt.default_pg_not_initialized", "ValueError: Default process group has not been initialized"),
    ("pt.ddp_no_grad_params", "RuntimeError: DistributedDataParallel is not needed when a module"),
    ("pt.ddp_param_shape_mismatch", "RuntimeError: [1]: params[0] in this process with sizes [4, 6]"),
    ("pt.collective_mismatch", "RuntimeError: Detected mismatch between collectives on ranks. Rank 0"),
    ("pt.collective_mismatch", "RuntimeError: Detected mismatch between collectives on ranks. Rank 1"),
]
# entries whose cause is more specific than the job's own error
_CAUSE = {"pt.collective_mismatch": "collective_desync"}


def _line(start: str) -> str:
    found = [line for line in LINES if line.startswith(start)]
    assert found, f"the lab output should hold a line starting {start!r}"
    return found[0]


def _error(start: str) -> str:
    """The line with the exception line above it when it is a continuation (a tab-indented
    detail of load_state_dict's message), as a log shows it."""
    i = LINES.index(_line(start))
    while i > 0 and LINES[i].startswith("\t"):
        i -= 1
    return "\n".join(LINES[i:LINES.index(_line(start)) + 1])


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "stderr.txt").write_text(text + "\n", encoding="utf-8")
    return analyze(bundle).verdict


@pytest.mark.parametrize("eid,start", EXPECTED, ids=[f"{e}-{i}" for i, (e, _) in enumerate(EXPECTED)])
def test_each_real_misuse_line_is_read_by_its_catalog_entry(eid, start):
    m = C.match_message(_line(start), ("pytorch",))
    assert m is not None and m.entry.id == eid
    assert m.strength == "specific"
    assert m.cause == _CAUSE.get(eid, "app_error")


@pytest.mark.parametrize("eid,start", EXPECTED, ids=[f"{e}-{i}" for i, (e, _) in enumerate(EXPECTED)])
def test_a_misuse_line_alone_claims_its_cause(tmp_path, eid, start):
    v = _verdict(tmp_path, _error(start))
    assert (v.category.value, v.cause) == ("config", _CAUSE.get(eid, "app_error")), v.trace
    assert v.confidence >= 0.5


def test_the_peer_of_a_rank_that_failed_ddp_setup_only_saw_its_connection_close():
    # rank 0's side of the DDP model mismatch: gloo's 'Connection closed by peer', fallout
    peer = next(line for line in LINES if "Connection closed by peer" in line)
    m = C.match_message(peer, ("pytorch",))
    assert m is None or m.cause == "context"


# Near misses, real lines of other causes with nearby words:
NEAR_MISSES = [
    # torch's CUDA caching allocator (gpu_oom, not the job's misuse); the form of corpus oom-gpu-* lines
    ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
     "14.23 GiB already allocated; 4.75 MiB free; 14.53 GiB reserved in total by PyTorch)", "gpu_oom"),
    # torch.load of a truncated file (caffe2/serialize/inline_container.cc): not a state dict that fails to fit
    ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory", None),
    # anomaly mode's warning before the error names no NaN (torch/autograd/graph.py; lab3-nan-anomaly-restart)
    ("UserWarning: Error detected in PowBackward0. Traceback of forward call that caused the error:", None),
    # NCCL's own size check (a desync seen by NCCL, read by the NCCL catalog, not torch's misuse family)
    ("NCCL WARN Message truncated : received 2048 bytes instead of 1024", None),
]


@pytest.mark.parametrize("line,cause", NEAR_MISSES, ids=["cuda-oom", "truncated-checkpoint", "anomaly-warning",
                                                        "nccl-truncated"])
def test_near_misses_are_not_read_as_misuse(tmp_path, line, cause):
    m = C.match_message(line, ("pytorch",))
    assert m is None or m.entry.subsystem != "misuse"
    if cause is not None:
        assert _verdict(tmp_path, line).cause == cause


# autograd's engine (validate_outputs): a custom autograd.Function's backward returned a gradient of
# the wrong shape.  The real line of validation26's lab crash (a job's MaskedMean Function, torch
# 2.13.0; found after the eighth sweep's first-seen score).
_INVALID_GRADIENT = ROOT / ("fixtures/validation26/lab-a/lab8-rank1-masked-mean-backward-short-batch/bundle/"
                            "torchrun_logs")


def test_a_backward_returning_a_wrong_shaped_gradient_is_the_jobs_code(tmp_path):
    line = next(line for p in sorted(_INVALID_GRADIENT.rglob("stderr.log"))
                for line in p.read_text(encoding="utf-8").splitlines() if "invalid gradient" in line)
    m = C.match_message(line, ("pytorch",))
    assert m is not None and m.entry.id == "pt.backward_invalid_gradient" and m.cause == "app_error"
    v = _verdict(tmp_path, line)
    assert (v.category.value, v.cause) == ("config", "app_error")


def test_anomaly_modes_nan_line_from_the_same_engine_check_is_not_an_invalid_gradient():
    # the same function of the engine (validate_outputs) printing its NaN check: its own entry
    m = C.match_message(_line("RuntimeError: Function 'LogBackward0' returned nan values"), ("pytorch",))
    assert m is not None and m.entry.id == "pt.anomaly_nan_output"
