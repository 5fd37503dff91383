"""Audit 11 fixes (h11-fixb).  M1: an errno that names no path is not "the path the job passed"
(signals.toml app.exception_argument_error path_named, path_errno_not_raised_in), and an ENOENT
from creating a multiprocessing semaphore is a /dev/shm that is not there
(shm.missing_in_shared_memory).  REAL: fixtures/lab/audit11/no-devshm (the auditor's probe run)
and fixtures/lab/output lab-rank-raises-ckpt (fixtures/lab/rank_raises.sh)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
NO_DEVSHM = ROOT / "fixtures/lab/audit11/no-devshm/bundle"
CKPT = ROOT / "fixtures/lab/output/lab-rank-raises-ckpt/console.log"


def test_a_semaphore_that_cannot_be_created_for_want_of_dev_shm_is_shared_memory_not_the_jobs_path():
    text = (NO_DEVSHM / "train.log").read_text(encoding="utf-8")
    assert "FileNotFoundError: [Errno 2] No such file or directory\n" in text and "synchronize.py" in text
    v = analyze(NO_DEVSHM).verdict
    assert (v.category, v.cause) == ("config", "shm_permissions")
    assert v.root.signal == "shm.missing_in_shared_memory"
    assert "synchronize.py" in v.root.summary and "/dev/shm" in v.root.summary
    assert not any(f.signal == "app.exception_argument_error" for f in (v.root, *v.alternatives, *v.symptoms))


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "console.log").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


def test_the_same_enoent_without_the_semaphore_frames_is_no_shared_memory_reading(tmp_path):
    # Edited at test time: the probe's traceback with the two synchronize.py frames cut (the
    # exception then raised in multiprocessing/context.py): no semaphore was being created.
    lines = (NO_DEVSHM / "train.log").read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if "synchronize.py" in ln)
    last = next(i for i, ln in enumerate(lines) if ln.startswith("FileNotFoundError"))
    v = _verdict(tmp_path, "".join(lines[:first] + lines[last:]))
    assert v.cause != "shm_permissions"
    assert not (v.root is not None and v.root.signal == "app.exception_argument_error")


def test_an_enoent_that_names_no_path_is_not_the_jobs_path(tmp_path):
    # Edited at test time: torch.load's FileNotFoundError under the job's load_checkpoint with its
    # filename cut -- an errno without a name is a call whose name the job never chose.
    text = CKPT.read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if "FileNotFoundError: [Errno 2] No such file or directory: '" in ln)
    v = _verdict(tmp_path, text.replace(line, line.split(": '", 1)[0]))
    assert v.cause != "app_error" or v.confidence < 0.35
    assert not (v.root is not None and v.root.signal == "app.exception_argument_error")
    # ... while the unedited line, naming the checkpoint path, is still the job's side
    assert analyze_text(tmp_path, text).root.signal == "app.exception_argument_error"


def analyze_text(tmp_path: Path, text: str):
    bundle = tmp_path / "unedited"
    bundle.mkdir()
    (bundle / "console.log").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


# ---- L5: the kernel's silence weighs on the SIGKILL read as the kernel's OOM kill, not on what
# read the memory itself (a user-space killer -- systemd-oomd, earlyoom, the kubelet -- logs no
# kernel line).  REAL: fixtures/bundles/lab-flightrec-sigkill (whole kernel log, no OOM line) and the
# memory reading of fixtures/validation10/deepspeed-offload-host-oom-06 (deepspeedai/DeepSpeed#4571).
SIGKILL = ROOT / "fixtures/bundles/lab-flightrec-sigkill/bundle"
DEEPSPEED = ROOT / "fixtures/validation10/deepspeed-offload-host-oom-06/bundle"


def _findings(verdict):
    return [f for f in (verdict.root, *verdict.alternatives, *verdict.symptoms) if f is not None]


def test_the_kernels_silence_weighs_on_the_kernel_reading_only():
    from postmortem.classify.counter_evidence import kernel_log_without_oom_kill

    killed = analyze(SIGKILL)
    kernel_reading = [f for f in _findings(killed.verdict) if f.signal == "sigkill.exit"]
    memory = [f for f in _findings(analyze(DEEPSPEED).verdict) if f.signal == "memory.high_then_death"]
    assert len(kernel_reading) == 1 and len(memory) == 1
    trace: list[str] = []
    alone = kernel_log_without_oom_kill(killed.case, trace, kernel_reading)["host_oom"][0]
    both = kernel_log_without_oom_kill(killed.case, trace, kernel_reading + memory)["host_oom"][0]
    assert alone == 0.4
    # support 1-(1-.25)(1-.5) = .625 -> 1-(1-.1)(1-.5) = .55: the memory reading keeps its weight
    assert 0.85 < both < 0.9
    assert kernel_log_without_oom_kill(killed.case, trace, memory) == {}   # no kernel reading to weigh on

