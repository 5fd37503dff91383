"""libfabric's EFA provider aborting on an endpoint error it could not report (prov/rxr/src/rxr.h
rxr_eq_write_error: 'Unable to write to EQ: %s. err: %s (%zd) prov_errno: %s (%zd) %s:%d' then
abort()): a failure inside the network transport under aws-ofi-nccl, weak (a peer that went away
gives an endpoint error too).  Real line: fixtures/validation24/gh2/efa-libfabric-rxr-eq-error-fork-dataloader-03."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_EFA = ROOT / "fixtures/validation24/gh2/efa-libfabric-rxr-eq-error-fork-dataloader-03/bundle/stderr.txt"


def _analysis(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "stderr.txt").write_text(text, encoding="utf-8")
    return analyze(bundle)


def test_the_provider_abort_leans_to_the_network(tmp_path):
    a = _analysis(tmp_path, _EFA.read_text(encoding="utf-8"))
    (e,) = [e for e in a.case.events if e.kind == "msg.libfabric_efa_eq_abort"]
    assert (e.data.get("error"), e.data.get("prov_errno")) == ("Input/output error", "-114")
    v = a.verdict
    assert v.cause == "unknown"   # one weak reading
    assert (v.alternatives[0].cause, v.alternatives[0].signal) == ("nccl_network", "msg.libfabric_efa_eq_abort")


def test_an_error_the_provider_did_report_is_not_the_abort(tmp_path):
    """Near miss: the provider's warning before it writes the error to the EQ (the write that succeeds
    hands the error to the caller: no abort)."""
    a = _analysis(tmp_path, "libfabric:1234:1707218868:efa:ep_ctrl:rxr_eq_write_error():1030<warn> Writing error Input/output error to EQ.\n")
    assert not [e for e in a.case.events if e.kind == "msg.libfabric_efa_eq_abort"]


def test_the_later_releases_report_is_read_by_its_own_lines():
    """Near miss: 'Libfabric EFA provider has encountered an internal error:' with its errors on the
    next lines (prov/efa efa_eq_write_error) is read by those lines (an ENOMEM posting receive
    buffers: the memlock limit), not as this abort. Real: validation22 efa-libfabric-enomem-post-rx-buffers-memlock-65536-07."""
    a = analyze(ROOT / "fixtures/validation22/efa-libfabric-enomem-post-rx-buffers-memlock-65536-07/bundle")
    assert not [e for e in a.case.events if e.kind == "msg.libfabric_efa_eq_abort"]
    assert a.verdict.alternatives[0].cause == "memlock_limit", a.verdict.alternatives[:1]
