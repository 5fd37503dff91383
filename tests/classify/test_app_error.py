"""The job's own code (cause app_error), and what a claim needs: on real crashes made in
the lab (fixtures/lab/torchrun_app_error.sh, torchrun_rank_signals.sh) and real lines."""
from pathlib import Path

import pytest

from postmortem import knowledge
from postmortem.classify import classify, rules
from postmortem.knowledge import registry
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures/bundles"
K = knowledge.load()


def test_an_exception_in_the_job_s_code_is_the_root_and_the_peer_s_connection_error_its_fallout():
    a = analyze(BUNDLES / "lab-torchrun-app-exception/bundle")
    v = a.verdict
    assert v.cause == "app_error" and v.category.value == "config"
    assert "rank 1" in v.root.summary and "IndexError" in v.root.summary and "label_of (rank_crash.py:64)" in v.root.summary
    assert v.root.evidence[0].path == "train.log" and "IndexError" in v.root.evidence[0].text
    # rank 0's 'Connection closed by peer' is read as rank 1's process ending (its orderly close,
    # messages.toml peer_closed_connection), never as a rival network cause
    assert any(e.kind == "msg.peer_closed_connection" for e in a.case.events)
    assert "nccl_network" not in {f.cause for f in v.alternatives + v.symptoms}


def test_the_peer_s_connection_error_is_never_read_as_the_job_s_own_exception():
    case = analyze(BUNDLES / "lab-torchrun-app-exception/bundle").case
    (f,) = rules.AppError().findings(case, K, [])
    assert "Connection closed" not in f.evidence[0].text and "rank 1" in f.summary


def test_a_segfault_under_the_job_s_own_frames_is_app_error():
    v = analyze(BUNDLES / "lab-torchrun-app-sigsegv/bundle").verdict
    assert v.cause == "app_error" and "SIGSEGV" in v.root.summary and "read_null" in v.root.summary


def test_an_exception_a_known_message_reads_is_that_cause_not_app_error():
    # CUDA OOM raised as a RuntimeError: the message pattern's cause (gpu_oom) owns the line.
    case = analyze(ROOT / "fixtures/corpus/oom-gpu-paramsync-returnn-02/bundle").case
    assert not [f for f in rules.AppError().findings(case, K, []) if "out of memory" in f.summary]


def test_a_device_side_assert_line_is_the_job_s_code():
    sample = next(m.sample for m in K.messages if m.id == "cuda_device_assert")
    assert next(m for m in K.messages if m.id == "cuda_device_assert").cause == "app_error"
    assert "Assertion" in sample


@pytest.fixture
def legacy(monkeypatch):
    """The policy before issue 13 §4 (signals.toml weak_sign_alone_claims = 1): kept as a knob."""
    monkeypatch.setitem(registry.LIMIT.__dict__["_by_name"], "weak_sign_alone_claims", 1.0)


def test_one_weak_sign_is_unknown_leaning_the_cause():
    # DeepSpeed's "exits with return code = -9" and nothing else: the OOM killer is only a guess
    v = analyze(ROOT / "fixtures/validation14/host-oom-deepspeed-rc-9-anomalygpt-01/bundle").verdict
    assert v.cause == "unknown" and "leaning host_oom" in v.summary and v.collect


def test_two_independent_weak_signs_still_claim():
    # mlock's ENOMEM in the log and the 8 MiB limit measured beside it (an exception and its own
    # traceback are one sign since audit 5 H4: tests/classify/test_audit5.py).
    v = analyze(BUNDLES / "lab-mlock-ctypes-enomem/bundle").verdict
    assert v.cause == "memlock_limit"
    assert any("2 independent weak signs" in t for t in v.trace)


def test_one_weak_sign_above_the_threshold_is_unknown_and_names_what_to_collect():
    # The watchdog's ranks time out and the others are silent (timeout.silent_ranks, 0.50): a
    # straggler is likely, but a silent rank may also be dead or missing from the bundle.
    v = analyze(ROOT / "fixtures/validation5/tokenize-store-socket-timeout-chatglm2-09/bundle").verdict
    assert v.cause == "unknown" and "leaning straggler_timeout" in v.summary
    assert any("one weak sign (timeout.silent_ranks)" in t for t in v.trace) and v.collect


def test_the_legacy_policy_still_marks_a_single_weak_sign_claim_tentative(legacy):
    v = analyze(ROOT / "fixtures/corpus/multi-tokenize-timeout-04/bundle").verdict   # strong enough: no mark
    assert not any("tentative" in t for t in v.trace)
    v = analyze(ROOT / "fixtures/validation5/tokenize-store-socket-timeout-chatglm2-09/bundle").verdict
    assert v.cause == "straggler_timeout" and any(t.startswith("resolve: tentative") for t in v.trace) and v.collect


def test_the_claim_threshold_applies_to_the_reported_confidence():
    # SIGKILL alone is one weak sign (0.25, below the threshold), and its rival of another
    # category would lower the reported figure further: unknown, leaning host_oom.
    v = analyze(ROOT / "fixtures/lab/output/lab-torchrun-sigkill/bundle").verdict
    assert v.cause == "unknown" and "leaning host_oom" in v.summary
