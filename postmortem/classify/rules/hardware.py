"""Rules that read measured GPU health (nvidia-smi)."""
from __future__ import annotations

import re

from postmortem.classify.rules.base import Rule, _bad, _num, events_of, sign_finding
from postmortem.knowledge.registry import KIND, LIMIT, SIGN
from postmortem.model import Basis

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
    device) after a thermal excursion measured ON THAT GPU: NVML's thermal slowdown reasons
    (HW Thermal Slowdown: temperature too high; SW Thermal Slowdown: GPU or memory temperature
    above its maximum operating temperature; HW Power Brake: the supply asserted the brake).
    NVIDIA's Xid table lists a thermal issue among the causes of Xid 79, and a GPU that
    overheats or loses power drops off the bus: the loss is the consequence, the thermal or
    power event the root.

    The reading must name the lost GPU (the per-GPU block of `nvidia-smi -q` it sits in) and
    carry a time before the loss (a periodic query log, a journal line).  A snapshot with no
    time cannot say which came first: taken after the crash it cannot show the lost GPU at all
    (nvidia-smi cannot read a lost device), so a slowdown in it is another GPU's, or another
    boot's (audit 8 H3).  The slowdown line is one observation: this sign and the message
    pattern reading it add as one (signals.toml [failure."gpu.thermal_state"])."""

    id = "thermal-before-bus-loss"

    def findings(self, case, k, trace):
        lost, hot_events, named = thermal_before_loss(case)
        if not lost or not hot_events:
            return []
        if not named:
            lost_pci = {_bus(e.data.get("pci") or e.data.get("gpu")) for e in lost} - {""}
            trace.append(f"{self.id}: no thermal reading names the lost GPU ({', '.join(sorted(lost_pci)) or 'unnamed'}) "
                         "with a time before the loss: a snapshot is not read as its cause")
            return []
        what = " ".join(named[0].text.split())[:120] + f" ({named[0].ref.describe()}, GPU {_gpu_of(case, named[0])})"
        summary = (f"the GPU fell off the bus ({lost[0].ref.describe()}) after it reported a thermal slowdown: "
                   f"{what}; NVIDIA lists a thermal issue among the causes of Xid 79 -- the overheating (or power "
                   "brake) is the root, the bus loss its consequence")
        trace.append(f"{self.id}: bus loss at {lost[0].ref.describe()}, thermal state {what}")
        return [sign_finding(k, SIGN.gpu_thermal_before_bus_loss, self.id, summary, named[:2] + lost[:2],
                             "thermal-bus-loss")]


def thermal_before_loss(case) -> tuple[list, list, list]:
    """(bus-loss events, thermal slowdown lines, the slowdown lines that name a lost GPU and are
    timed before the first loss)."""
    params = SIGN.gpu_thermal_before_bus_loss.params
    lost = [e for e in events_of(case, (KIND.kernel_fell_off_bus, KIND.msg_gpu_fell_off_bus, KIND.msg_nvml_gpu_lost))]
    lost += [e for e in events_of(case, KIND.kernel_xid) if e.data.get("code") in params["bus_loss_xids"]]
    hot_events = events_of(case, KIND.msg_gpu_thermal_slowdown)
    if not lost or not hot_events:
        return lost, hot_events, []
    first_lost = min((e.when.at for e in lost if _timed(e)), default=None)
    lost_pci = {_bus(e.data.get("pci") or e.data.get("gpu")) for e in lost} - {""}
    before = [e for e in hot_events if first_lost is not None and _timed(e) and e.when.at < first_lost]
    return lost, hot_events, [e for e in before if _gpu_of(case, e) in lost_pci]


def _timed(e) -> bool:
    """A time that places the line (a printed or converted clock, not a file's mtime or order)."""
    return bool(e.when and e.when.at and e.when.basis not in (Basis.MTIME, Basis.ORDER_ONLY))


def _gpu_of(case, e) -> str:
    """The GPU a reading belongs to: a PCI address on its own line, else the `nvidia-smi -q`
    block it sits in (the nearest 'GPU 00000000:06:00.0' header above it in its file)."""
    own = _bus(_PCI_ON_LINE.search(e.text or "").group(0)) if _PCI_ON_LINE.search(e.text or "") else ""
    if own:
        return own
    headers = [f for f in case.facts if _GPU_BUS.match(f.name) and f.ref.path == e.ref.path
               and f.ref.line is not None and e.ref.line is not None and f.ref.line < e.ref.line]
    return _bus(max(headers, key=lambda f: f.ref.line).value) if headers else ""


_PCI_ON_LINE = re.compile(r"\b(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d\b")


_GPU_TEMP = re.compile(r"gpu\.[^.]+\.temp_c$")
_GPU_BUS = re.compile(r"gpu\.[^.]+\.bus_id$")


def _bus(value) -> str:
    """'PCI:0000:06:00', '0000:06:00.0', '00000000:06:00.0' -> '06:00' (bus:device), '' when none."""
    m = re.search(r"([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.\d)?\s*$", str(value or ""))
    return f"{m.group(1)}:{m.group(2)}".lower() if m else ""
