"""Rules that read measured GPU health (nvidia-smi)."""
from __future__ import annotations

import re

from postmortem.classify.rules.base import Rule, _bad, _num, sign_finding
from postmortem.knowledge.registry import LIMIT, SIGN

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
