"""A GPU lost from the bus beside a measured thermal excursion (rule thermal-before-bus-loss,
sign gpu.thermal_before_bus_loss): the thermal event is the root, Xid 79 its consequence -- only
when the thermal reading names the lost GPU and is timed before the loss (audit 8 H3).

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


def test_an_untimed_snapshot_naming_no_gpu_is_not_the_bus_losss_cause():
    # audit 8 H3: the stored case's slowdown line names no GPU and has no time (the truth.json says the
    # two snippets come from different runs): it cannot say the lost GPU overheated first.  The bus loss
    # stays the claim; the thermal line is one weak sign (read once, not also as the rule's strong one).
    v = analyze(CASE).verdict
    assert not _fired(v), v.trace
    assert v.cause == "gpu_fell_off_bus", v.trace
    assert any(line.startswith("resolve: gpu_thermal_power support 0.50") for line in v.trace), v.trace
    # ... and the reading it cannot place keeps the bus loss's own root open: no confident claim
    assert any("whether the GPU overheated before it fell off the bus is not known" in t for t in v.trace), v.trace
    assert v.confidence < 0.8, v.confidence


def test_another_gpus_slowdown_does_not_explain_a_bus_loss(tmp_path):
    # audit 8 probe a3: the first Xid 79 line of validation20 akash-4090-xid79-recurring-cordoned-02 (GPU a1:00,
    # dmesg -T) beside the stored case's nvidia-smi lines (GPU 06:00 per its truth.json), both verbatim
    xid = (ROOT / "fixtures/validation20/akash-4090-xid79-recurring-cordoned-02/bundle/dmesg.txt").read_text(
        encoding="utf-8").splitlines()
    line = next(x for x in xid if "Xid (PCI:0000:a1:00): 79" in x)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "dmesg.txt").write_text(line + "\n", encoding="utf-8")
    (bundle / "nvidia-smi.txt").write_text((CASE / "nvidia-smi.txt").read_text(encoding="utf-8"), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v), v.trace
    assert (v.category, v.cause) == ("hardware", "gpu_fell_off_bus"), v.trace


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
