"""Rules that read measured GPU health (nvidia-smi)."""
from __future__ import annotations

import re

from postmortem.classify.rules.base import Rule, _bad, _num, finding

# GPU health counters from `nvidia-smi -q` / the nvidia-smi table: name pattern -> (cause, weight, why).
GPU_HEALTH: tuple[tuple[re.Pattern[str], str, float, str], ...] = (
    (re.compile(r"gpu\.\d+\.ecc_uncorrected$"), "gpu_memory_ecc", 0.7, "uncorrectable ECC errors counted"),
    (re.compile(r"gpu\.\d+\.remapped_rows_failure$"), "gpu_memory_ecc", 0.8, "row remapping failed"),
    (re.compile(r"gpu\.\d+\.remapped_rows_uncorrectable$"), "gpu_memory_ecc", 0.55, "rows remapped after uncorrectable errors"),
    (re.compile(r"gpu\.\d+\.smi_error$"), "gpu_hardware_other", 0.55, "nvidia-smi cannot read the GPU"),
)

HOT_GPU_C = 90

class GpuHealth(Rule):
    """What nvidia-smi measured: uncorrectable ECC counts, failed row remapping, a GPU
    nvidia-smi can no longer read, temperatures at the throttle point."""

    id = "gpu-health"

    def findings(self, case, k, trace):
        out = []
        for pattern, cause, weight, why in GPU_HEALTH:
            hits = [f for f in case.facts if pattern.match(f.name) and _bad(f.value)]
            if hits:
                where = ", ".join(f"{f.name}={f.value} ({f.ref.describe()})" for f in hits[:4])
                trace.append(f"{self.id}: {why}: {where}")
                out.append(finding(k, cause, weight, self.id, f"nvidia-smi: {why}: {where}", [], "root",
                                   "nvidia-smi", extra_refs=tuple(f.ref for f in hits[:8])))
        hot = [f for f in case.facts if re.match(r"gpu\.\d+\.temp_c$", f.name) and _num(f.value) >= HOT_GPU_C]
        if hot:
            where = ", ".join(f"{f.name}={f.value} C ({f.ref.describe()})" for f in hot[:4])
            trace.append(f"{self.id}: GPU at {HOT_GPU_C} C or more: {where}")
            out.append(finding(k, "gpu_thermal_power", 0.4, self.id, f"GPU temperature at the throttle point: {where}",
                               [], "root", "thermal", extra_refs=tuple(f.ref for f in hot[:8])))
        return out
