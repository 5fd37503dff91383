"""A GPU lost from the bus beside a measured thermal excursion (rule thermal-before-bus-loss,
sign gpu.thermal_before_bus_loss): the thermal event is the root, Xid 79 its consequence.

Real lines only: the development case validation24/gh rtx3080-training-xid79-gddr6x-heat-soak
(kaievns/gpu-node docs/lessons/xid79-gddr6x-heat-soak.md) as stored; the Xid 79 line of
NVIDIA/open-gpu-kernel-modules#1151 ('Key log -- Xid 79 with zero precursor'); and a healthy
`nvidia-smi -q` 'Clocks Event Reasons' block of an RTX A6000 published in
ObrienlabsDev/machine-learning (search index id 27338299639), every reason 'Not Active'."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "fixtures" / "validation24" / "gh" / "rtx3080-training-xid79-gddr6x-heat-soak-sw-thermal-slowdown-04" / "bundle"

XID79 = "May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
HEALTHY_REASONS = """    Clocks Event Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
"""


def _fired(verdict) -> bool:
    return any(line.startswith("thermal-before-bus-loss: bus loss") for line in verdict.trace)


def test_xid79_after_sw_thermal_slowdown_is_the_thermal_event():
    v = analyze(CASE).verdict
    assert _fired(v), v.trace
    assert v.cause == "gpu_thermal_power", v.trace
    assert any("gpu_fell_off_bus" in line and "explained by gpu_thermal_power" in line for line in v.trace)


def test_xid79_beside_a_healthy_clocks_event_block_stays_a_bus_loss(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "dmesg.txt").write_text(XID79, encoding="utf-8")
    (bundle / "nvidia-smi.txt").write_text(HEALTHY_REASONS, encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v)
    assert v.cause == "gpu_fell_off_bus", v.trace


def test_a_thermal_slowdown_without_a_lost_gpu_claims_nothing(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "nvidia-smi.txt").write_text((CASE / "nvidia-smi.txt").read_text(encoding="utf-8"), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v)
    assert v.cause == "unknown", v.trace      # one weak sign: a lean at most
