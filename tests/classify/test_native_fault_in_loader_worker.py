"""A fault in the job's own native code inside a DataLoader worker is a DataLoader worker crash: torch's
_worker_loop installs DataLoader.cpp's handler_SIGSEGV/SIGBUS/SIGFPE (libtorch_python) in the worker
only, so a crashed stack that passes through one of them is a worker's (signals.toml
app.native_fault_in_loader_worker).  Real lines: the lab crash that motivated it (validation30 lab12,
gdb of the worker's core) and, as the near miss, a rank's own process aborting in the job's code
(fixtures/lab/output/lab-stack-smash, made by fixtures/lab/stack_smash.sh): still app_error."""
from __future__ import annotations

from pathlib import Path

from postmortem.classify.rules.app import _loader_worker_stack
from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
TOKENIZE = FIX / "validation30/lab-c/lab12-loader-worker-tokenize-thread-pool-nonreentrant-native-tok-segv-core/bundle"
SMASH = FIX / "lab/output/lab-stack-smash/own/bundle"


def test_a_loader_workers_fault_in_the_jobs_tokenizer_is_a_dataloader_worker_crash():
    a = analyze(TOKENIZE)
    v = a.verdict
    assert (v.category.value, v.cause) == ("config", "dataloader_worker_crash"), v.trace
    core = next(s for s in a.case.stacks if s.origin == "gdb" and s.crashed)
    assert _loader_worker_stack(core)
    assert any("the crashed process is a DataLoader worker" in t for t in v.trace), v.trace


def test_a_ranks_own_process_aborting_in_the_jobs_code_stays_app_error():
    a = analyze(SMASH)
    assert a.verdict.cause == "app_error", a.verdict.trace
    assert not any(_loader_worker_stack(s) for s in a.case.stacks)
