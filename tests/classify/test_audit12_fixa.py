"""Audit 12 fixes (h12-fixa).

M1: an exception the job raises `from` (or while handling) an earlier one of the same chain is
read with that chain (rules/base.py chain_links): when an earlier link is set aside -- fallout, a
communication error, another cause's message -- the wrapper is the job's report of that failure,
neither app.exception_in_own_code nor a death of its own (counter_evidence.crashed_peer).  A chain
whose earlier link is the job's own error still reads app_error.

M2: CPython's MemoryError and numpy's _ArrayMemoryError are memory refused (messages.toml
python_memory_error, host_oom, weak), made a claim by the limit the bundle shows (`ulimit -v`:
rule memory-limit-set), never the job's own code.

REAL: fixtures/lab/audit12 netfault-wrapped, mem-np-alloc, mem-py-alloc (the auditor's probe runs)
and own-value, key-value, key-value-ctx (fixtures/lab/audit12/chain_nearmiss.sh)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from postmortem.knowledge import load
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures/lab/audit12"
DIRECT = "The above exception was the direct cause of the following exception:"
DURING = "During handling of the above exception, another exception occurred:"


def _findings(v):
    return [f for f in (v.root, *v.alternatives, *v.symptoms) if f is not None]


def _bundle(tmp_path: Path, text: str) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "torchrun.log").write_text(text, encoding="utf-8")
    return bundle


# ------------------------------------------------------------------ M1: a chain's wrapper

def test_a_wrapper_raised_from_a_gloo_timeout_is_not_the_jobs_own_failure():
    bundle = LAB / "netfault-wrapped/bundle"
    text = (bundle / "torchrun.log").read_text(encoding="utf-8")
    assert DIRECT in text and "TrainingError: step 37: gradient sync failed" in text
    v = analyze(bundle).verdict
    assert v.cause != "app_error" and v.category.value != "config"
    assert not any(f.cause == "app_error" for f in _findings(v))
    # the wrapper is no death of its own either: the peers' timeouts are not set aside as fallout
    assert not any("died of TrainingError" in line for line in v.trace)
    assert any(line.startswith("collective-timeout: every rank") for line in v.trace)


def test_the_same_wrapper_raised_while_handling_the_timeout_is_not_either(tmp_path):
    # Edited at test time: `raise TrainingError(...)` without `from` (CPython prints the implicit
    # __context__ marker instead)
    text = (LAB / "netfault-wrapped/bundle/torchrun.log").read_text(encoding="utf-8")
    v = analyze(_bundle(tmp_path, text.replace(DIRECT, DURING))).verdict
    assert v.cause != "app_error" and not any(f.cause == "app_error" for f in _findings(v))


def test_the_wrapper_without_its_chain_is_still_the_jobs_own_code(tmp_path):
    # Edited at test time: each rank's first traceback (gloo's timeout) and the marker cut, the
    # TrainingError's own traceback kept -- nothing shows what it wrapped: the chain is what decides
    text = (LAB / "netfault-wrapped/bundle/torchrun.log").read_text(encoding="utf-8")
    chain_head = re.compile(r"\[rank(\d)\]: Traceback \(most recent call last\):\n(?:.*\n)*?\[rank\1\]: "
                            + re.escape(DIRECT) + r"\n\n")
    text = chain_head.sub("", text)
    assert "Timed out waiting" not in text and "TrainingError: step 37" in text
    v = analyze(_bundle(tmp_path, text)).verdict
    assert (v.cause, v.root.signal) == ("app_error", "app.exception_in_own_code")


@pytest.mark.parametrize("probe", ["own-value", "key-value", "key-value-ctx"])
def test_the_jobs_own_error_alone_or_chained_onto_its_own_error_is_still_app_error(probe):
    bundle = LAB / probe / "bundle"
    text = (bundle / "torchrun.log").read_text(encoding="utf-8")
    assert ("KeyError: 'cosine_restarts'" in text) == (probe != "own-value")
    assert (DIRECT in text) == (probe == "key-value") and (DURING in text) == (probe == "key-value-ctx")
    v = analyze(bundle).verdict
    assert (v.category.value, v.cause) == ("config", "app_error")
    assert v.root.signal == "app.exception_in_own_code" and v.confidence >= 0.7
    assert "chain_job.py" in v.root.summary


# ------------------------------------------------------------------ M2: MemoryError

@pytest.mark.parametrize("probe,line", [
    ("mem-np-alloc", "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 2.00 GiB"),
    ("mem-py-alloc", "[rank0]: MemoryError\n"),
])
def test_memory_error_under_ulimit_v_is_memory_not_the_jobs_code(probe, line):
    bundle = LAB / probe / "bundle"
    assert line in (bundle / "torchrun.log").read_text(encoding="utf-8")
    assert "(kbytes, -v) 1500000" in (bundle / "ulimit.txt").read_text(encoding="utf-8")
    v = analyze(bundle).verdict
    assert (v.category.value, v.cause) == ("config", "host_oom") and v.confidence >= 0.35
    # two independent signs: the exception line and the limit beside it (ulimit.txt)
    assert "resolve: host_oom rests on 2 independent weak signs: msg.python_memory_error, memory.limit_set" in v.trace
    assert any(e.path == "ulimit.txt" for e in v.root.evidence) or any(
        line.startswith("memory-limit-set: ulimit -v 1500000 (ulimit.txt") for line in v.trace)
    assert not any(f.cause == "app_error" for f in _findings(v))


def test_memory_error_without_a_limit_in_the_bundle_only_leans_to_memory(tmp_path):
    # The probe's console alone (ulimit.txt left out): one weak sign, no claim -- and no app_error
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(LAB / "mem-py-alloc/bundle/torchrun.log", bundle)
    v = analyze(bundle).verdict
    assert v.cause == "unknown"
    assert any("leaning host_oom" in line for line in v.trace)
    assert not any(f.cause == "app_error" for f in _findings(v))


def test_the_memory_error_message_reads_the_exception_line_only():
    m = next(m for m in load().messages if m.id == "python_memory_error")
    for line in ("MemoryError", "MemoryError: ", "numpy.core._exceptions.MemoryError: Unable to allocate 3.28 GiB for an array",
                 "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 2.00 GiB for an array with shape (268435456,)"):
        assert m.regex.search(line), line
    for line in ("RuntimeError: Caught MemoryError in DataLoader worker process 1.",
                 "MemoryError: [Errno 12] Cannot allocate memory",   # python_enomem's
                 "WARNING retrying after MemoryError: batch halved", "MemoryErrors: 3"):
        assert not m.regex.search(line), line
