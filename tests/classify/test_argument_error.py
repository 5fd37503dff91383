"""app.exception_argument_error (signals.toml): a built-in argument error (TypeError, ValueError,
AttributeError, IndexError, KeyError) raised inside a library function that the job's own frame
called is the job's side failing -- strong; a RuntimeError through the same call chain, or an
argument error with no frame of the job's own, stays the weak app.exception.  Real tracebacks from
fixtures/validation25 (made by their make.sh); edits made at test time are marked."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_JSON = ROOT / "fixtures/validation25/lab-a/lab7-rank0-metrics-json-float32-typeerror/bundle/console.log"
_CKPT = (ROOT / "fixtures/validation25/lab-a/lab7-rank1-reads-best-ckpt-while-rank0-writes/bundle/"
         "torchrun-logs/none_cls9426u/attempt_0/1/stderr.log")


def _rank0_traceback() -> list[str]:
    lines = _JSON.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.endswith("[rank0]: Traceback (most recent call last):"))
    end = next(i for i, ln in enumerate(lines) if i > start and "TypeError: Object of type" in ln)
    return lines[start:end + 1]


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "console.log").write_text(text + "\n", encoding="utf-8")
    return analyze(bundle).verdict


def test_type_error_raised_in_json_called_from_the_jobs_frame_is_app_error(tmp_path):
    v = _verdict(tmp_path, "\n".join(_rank0_traceback()))
    assert (v.category, v.cause) == ("config", "app_error")
    assert v.root.signal == "app.exception_argument_error" and v.root.strength == "strong"
    assert "train_epoch_metrics.py:36" in v.root.summary     # the job's frame that called json


def test_the_same_error_without_a_frame_of_the_job_only_leans(tmp_path):
    # Edited at test time: the job's two frames (train_epoch_metrics.py) are cut out, so every
    # frame left is the standard library's.
    lines = _rank0_traceback()
    kept = [lines[0]] + lines[lines.index(next(ln for ln in lines if "json/__init__.py" in ln)):]
    v = _verdict(tmp_path, "\n".join(kept))
    assert v.cause == "unknown"


def test_a_runtime_error_through_the_jobs_frame_stays_a_lean(tmp_path):
    # Real: torch.load of a checkpoint another rank was still writing (RuntimeError from miniz):
    # libraries raise RuntimeError for their own state, so it is no argument error.
    text = _CKPT.read_text(encoding="utf-8")
    assert "RuntimeError: PytorchStreamReader failed" in text and "Traceback" in text
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "console.log").write_text(text + "\n", encoding="utf-8")
    a = analyze(bundle)
    # The exception itself stays the weak app.exception (no argument-error sign); since round 8 the
    # catalog reads miniz's missing central directory as a checkpoint cut short (pt.checkpoint_truncated,
    # tests/classify/test_config_round8.py): that reading, not the exception's type, is what claims it.
    from postmortem import knowledge
    from postmortem.classify import rules

    found = rules.AppError().findings(a.case, knowledge.load(), [])
    assert all(f.signal == "app.exception" for f in found), [f.signal for f in found]
    v = a.verdict
    assert v.cause != "app_error" or v.root.signal == "catalog.pt.checkpoint_truncated", v.trace
