"""Rules that read measured GPU health (nvidia-smi)."""
from __future__ import annotations

import re

from postmortem.classify.rules.base import Rule, _bad, _num, events_of, sign_finding
from postmortem.knowledge.registry import KIND, LIMIT, SIGN

# GPU health counters from `nvidia-smi -q` / the nvidia-smi table: name pattern -> (sign, why).
GPU_HEALTH = (
    (re.compile(r"gpu\.\d+\.ecc_uncorrected$"), SIGN.gpu_ecc_uncorrected, "uncorrectable ECC errors counted"),
    (re.compile(r"gpu\.\d+\.remapped_rows_failure$"), SIGN.gpu_remapped_rows_failure, "row remapping failed"),
    (re.compile(r"gpu\.\d+\.remapped_rows_uncorrectable$"), SIGN.gpu_remapped_rows_uncorrectable,
     "rows remapped after uncorrectable errors"),
    (re.compile(r"gpu\.\d+\.smi_error$"), SIGN.gpu_smi_error, "nvidia-smi cannot read the GPU"),
)

class GpuHealth(Rule):
    """What nvidia-smi measured: uncorrectable ECC counts, failed row remapping, a GPU
    nvidia-smi can no longer read, temperatures at the throttle point."""

    id = "gpu-health"

    def findings(self, case, k, trace):
        out = []
        for pattern, sign, why in GPU_HEALTH:
            hits = [f for f in case.facts if pattern.match(f.name) and _bad(f.value)]
            if hits:
                where = ", ".join(f"{f.name}={f.value} ({f.ref.describe()})" for f in hits[:4])
                trace.append(f"{self.id}: {why}: {where}")
                out.append(sign_finding(k, sign, self.id, f"nvidia-smi: {why}: {where}", [],
                                        "nvidia-smi", extra_refs=tuple(f.ref for f in hits[:8])))
        hot = [f for f in case.facts if re.match(r"gpu\.\d+\.temp_c$", f.name) and _num(f.value) >= LIMIT.hot_gpu_c]
        if hot:
            where = ", ".join(f"{f.name}={f.value} C ({f.ref.describe()})" for f in hot[:4])
            trace.append(f"{self.id}: GPU at {LIMIT.hot_gpu_c:.0f} C or more: {where}")
            out.append(sign_finding(k, SIGN.gpu_hot, self.id, f"GPU temperature at the throttle point: {where}",
                                    [], "thermal", extra_refs=tuple(f.ref for f in hot[:8])))
        return out


class ThermalBeforeBusLoss(Rule):
    """A GPU that fell off the bus (Xid 79, NVRM 'GPU has fallen off the bus', NVML's lost
    device) in a bundle that also measured a GPU over its thermal limit: NVML's thermal
    slowdown reasons (HW Thermal Slowdown: temperature too high; SW Thermal Slowdown: GPU or
    memory temperature above its maximum operating temperature; HW Power Brake: the supply
    asserted the brake) or a temperature at the slowdown point.  NVIDIA's Xid table lists a
    thermal issue among the causes of Xid 79, and a GPU that overheats or loses power drops
    off the bus: the loss is the consequence, the thermal or power event the root.  Two
    independent observations (the driver's loss of the device; NVML's thermal state), not
    one failure read twice.  Not when the two name different GPUs, nor when the thermal
    reading was taken after the device was gone (nvidia-smi cannot read a lost GPU)."""

    id = "thermal-before-bus-loss"

    def findings(self, case, k, trace):
        params = SIGN.gpu_thermal_before_bus_loss.params
        lost = [e for e in events_of(case, (KIND.kernel_fell_off_bus, KIND.msg_gpu_fell_off_bus, KIND.msg_nvml_gpu_lost))]
        lost += [e for e in events_of(case, KIND.kernel_xid) if e.data.get("code") in params["bus_loss_xids"]]
        if not lost:
            return []
        hot_events = events_of(case, KIND.msg_gpu_thermal_slowdown)
        hot_facts = [f for f in case.facts if _GPU_TEMP.match(f.name) and _num(f.value) >= LIMIT.hot_gpu_c]
        if not hot_events and not hot_facts:
            return []
        first_lost = min((e.when.at for e in lost if e.when and e.when.at), default=None)
        after = [e for e in hot_events if first_lost and e.when and e.when.at and e.when.at > first_lost]
        hot_events = [e for e in hot_events if e not in after]
        if not hot_events and not hot_facts:
            trace.append(f"{self.id}: the thermal readings come after the GPU was lost")
            return []
        lost_pci = {_bus(e.data.get("pci") or e.data.get("gpu")) for e in lost} - {""}
        buses = {f.name.split(".")[1]: f.value for f in case.facts if _GPU_BUS.match(f.name)}
        hot_pci = {_bus(buses.get(f.name.split(".")[1])) for f in hot_facts} - {""}
        if lost_pci and hot_pci and not lost_pci & hot_pci:
            trace.append(f"{self.id}: the lost GPU ({sorted(lost_pci)}) is not the hot one ({sorted(hot_pci)})")
            return []
        refs = tuple(f.ref for f in hot_facts[:2])
        what = (" ".join(hot_events[0].text.split())[:120] + f" ({hot_events[0].ref.describe()})" if hot_events
                else f"{hot_facts[0].name}={hot_facts[0].value} C ({hot_facts[0].ref.describe()})")
        summary = (f"the GPU fell off the bus ({lost[0].ref.describe()}) and the bundle measured a GPU over its "
                   f"thermal limit: {what}; NVIDIA lists a thermal issue among the causes of Xid 79 -- the "
                   "overheating (or power brake) is the root, the bus loss its consequence")
        trace.append(f"{self.id}: bus loss at {lost[0].ref.describe()}, thermal state {what}")
        return [sign_finding(k, SIGN.gpu_thermal_before_bus_loss, self.id, summary, hot_events[:2] + lost[:2],
                             "thermal-bus-loss", extra_refs=refs)]


_GPU_TEMP = re.compile(r"gpu\.[^.]+\.temp_c$")
_GPU_BUS = re.compile(r"gpu\.[^.]+\.bus_id$")


def _bus(value) -> str:
    """'PCI:0000:06:00', '0000:06:00.0', '00000000:06:00.0' -> '06:00' (bus:device), '' when none."""
    m = re.search(r"([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.\d)?\s*$", str(value or ""))
    return f"{m.group(1)}:{m.group(2)}".lower() if m else ""
