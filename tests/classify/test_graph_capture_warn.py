"""NCCL's refusal of a CUDA graph capture, read from its source (misc/strongstream.cc
ncclCudaGetCapturingGraph, v2.18.6-v2.30.7): the WARN 'NCCL cannot be captured in a graph if either
it wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.' is printed when
`CUDART_VERSION < 11030 || driver < 11030` and the stream is being captured -- NCCL's build or the
driver predates graph capture.  Two readings, so weak (gen_nccl.py EITHER_OF_TWO): nccl_version_old
first.  Real line: fixtures/validation23/gh/vllm-qwen14b-tp2-nccl-2-19-3-cuda11-0-graph-capture-04
(vLLM with an NCCL 2.19.3+cuda11.0 wheel)."""
from __future__ import annotations

from pathlib import Path

from postmortem.knowledge import catalog
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_VLLM = ROOT / "fixtures/validation23/gh/vllm-qwen14b-tp2-nccl-2-19-3-cuda11-0-graph-capture-04/bundle/stderr.txt"


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "stderr.txt").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


def test_the_refused_capture_leans_to_an_nccl_too_old(tmp_path):
    v = _verdict(tmp_path, _VLLM.read_text(encoding="utf-8"))
    assert v.cause == "unknown"   # the line names two versions that may be too old: weak
    assert v.alternatives and v.alternatives[0].cause == "nccl_version_old", v.alternatives[:1]


def test_the_reading_is_the_catalog_entry_weakly():
    m = catalog.match_nccl(_VLLM.read_text(encoding="utf-8").strip())
    assert m is not None and (m.cause, m.strength) == ("nccl_version_old", "subsystem"), m


def test_the_other_strongstream_warns_stay_context():
    """Near miss: the same file's graph bookkeeping WARNs say nothing of a version."""
    m = catalog.match_nccl("host:1:2 [0] misc/strongstream.cc:250 NCCL WARN Stream is not being captured by the expected graph.")
    assert m is not None and m.cause == "context", m
