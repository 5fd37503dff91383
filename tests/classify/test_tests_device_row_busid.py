"""nccl-tests' device row read when the bus is the device's whole PCI address: nccl-tests prints
'[0x%02x]' (prop.pciBusID), forks that print cudaDeviceGetPCIBusId / hipDeviceGetPCIBusId print
'[0000:2f:00.0]' (rccl-tests; mscclpp's test harness).  Real lines:
fixtures/validation22/rocm-2x-mi100-ddp-rccl-allreduce-hang-iommu-not-passthrough-17 (rccl-tests
all_reduce_perf on two MI100s of one host, quoted in a public ROCm issue: the header and the
device rows, then nothing -- the silent-collective-hang reading, weak)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_RCCL = ROOT / "fixtures/validation22/rocm-2x-mi100-ddp-rccl-allreduce-hang-iommu-not-passthrough-17/bundle/all_reduce_perf-stdout.txt"


def _analysis(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "all_reduce_perf-stdout.txt").write_text(text, encoding="utf-8")
    return analyze(bundle)


def test_rccl_tests_rows_with_the_whole_bus_address_are_device_rows(tmp_path):
    a = _analysis(tmp_path, _RCCL.read_text(encoding="utf-8"))
    rows = [e for e in a.case.events if e.kind == "msg.nccl_tests_device"]
    assert [(e.rank, e.data.get("bus")) for e in rows] == [(0, "0000:2f:00.0"), (1, "0000:03:00.0")]
    v = a.verdict
    assert v.cause == "unknown"   # one weak reading
    assert (v.alternatives[0].cause, v.alternatives[0].signal) == ("nccl_p2p", "hang.nccltests_silent")


def test_a_row_whose_bracket_is_no_bus_address_is_not_read(tmp_path):
    """Near miss: a bracket holding something else than a bus (a hostname, a word) is no device row."""
    text = _RCCL.read_text(encoding="utf-8").replace("[0000:2f:00.0]", "[gpu-a]").replace("[0000:03:00.0]", "[gpu-b]")
    a = _analysis(tmp_path, text)
    assert not [e for e in a.case.events if e.kind == "msg.nccl_tests_device"]
    assert not a.verdict.alternatives or a.verdict.alternatives[0].signal != "hang.nccltests_silent"
