"""Generate the NVIDIA driver catalogs: postmortem/knowledge/xid.toml (the whole Xid catalog),
postmortem/knowledge/catalogs/sxid.json (NVSwitch SXids) and
postmortem/knowledge/catalogs/nv_status.json (the NV_ERR_* status codes NVRM lines carry).

Upstream:
- Xid: GPUd (https://github.com/leptonai/gpud, commit 4a8de33a3f02e207f39e9023d67125592d599731),
  components/accelerator/nvidia/xid/catalog_generated.go, itself generated from NVIDIA's Xid
  catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): code,
  mnemonic, description, immediate and investigatory resolution.
- SXid: GPUd components/accelerator/nvidia/sxid/sxid.go (from NVIDIA's Fabric Manager user
  guide DU-09883-001): name, potential/always fatal, impact, recovery.
- NV_STATUS: https://github.com/NVIDIA/open-gpu-kernel-modules (595.45.04, commit
  df1c9a3de2be4b130f4fc7680f7198193d8ac6ad) src/common/sdk/nvidia/inc/nvstatuscodes.h.

Entries already in xid.toml are kept exactly as they are (their readings were reviewed
against real lines, tests/classify/test_xid_catalog.py); the other codes get the reading
XID_RULES derive from NVIDIA's mnemonic, description and resolution.  Re-running is
idempotent.

Re-run:
    python tools/catalogs/gen_nvidia.py /path/to/gpud.git /path/to/open-gpu-kernel-modules.git
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KNOWLEDGE = ROOT / "postmortem/knowledge"
GPUD_COMMIT = "4a8de33a3f02e207f39e9023d67125592d599731"
OGKM_COMMIT = "df1c9a3de2be4b130f4fc7680f7198193d8ac6ad"
OGKM_VERSION = "595.45.04"
GENERATED = "NVIDIA Xid catalog via GPUd"  # the source line that marks a generated xid.toml entry

# Xid reading from NVIDIA's catalog row, first match wins: (field regex over
# "MNEMONIC | description | immediate | investigatory", cause, weight, role).
# cause '' = never a root (informational / unused); 'app_fault' = the workload's own fault.
XID_RULES: tuple[tuple[str, str, float, str], ...] = (
    (r"\| Unused \|", "", 0.0, "context"),
    (r"SMBPBI|Informational|RECOVERY_ACTION|PSHC_(?:RE|DIS)ENGAGED|VGPU|KEY_ROTATION|SECURE|CC mode|DLA_", "", 0.0, "context"),
    (r"\| IGNORE \| IGNORE", "", 0.0, "context"),
    (r"FALLEN_OFF_THE_BUS", "gpu_fell_off_bus", 0.9, "root"),
    (r"NVLINK|NVLink|C2C|LINK_TRAINING|ALI_TRAINING", "nvlink_fault", 0.5, "root"),
    (r"GSP", "gsp_fault", 0.6, "root"),
    (r"PCIE", "pcie_error", 0.6, "root"),
    (r"ECC|DBE|DRAM|SRAM|[Mm]emory error|RETIREMENT|remapp|WPR", "gpu_memory_ecc", 0.5, "root"),
    (r"PWR|THERM|[Pp]ower|PSHC", "gpu_thermal_power", 0.5, "root"),
    (r"[Dd]river firmware|by driver|HALT|micro-controller", "driver_bug", 0.4, "root"),
    (r"CHECK_APP/CUDA", "app_fault", 0.3, "root"),
    (r"\| (?:RESET_GPU|RESTART_BM) \|", "gpu_hardware_other", 0.5, "root"),
    (r"_CE\d+_ERROR|NVDEC|NVJPG|NVENC|OFA|[Vv]ideo|SEC2", "gpu_hardware_other", 0.3, "root"),
    (r"CHECK_UVM|CHI_", "gpu_hardware_other", 0.3, "root"),
    (r"\| IGNORE \|", "", 0.0, "context"),  # NVIDIA's immediate action is 'ignore': never a root
)

# NV_STATUS name -> (cause, why).  Unlisted codes are 'context' (what failed, not why).
NV_STATUS_READINGS: dict[str, tuple[str, str]] = {
    "NV_ERR_RESET_REQUIRED": ("gpu_hardware_other", "the GPU needs a reset before it can be used again"),
    "NV_ERR_GPU_IS_LOST": ("gpu_fell_off_bus", "the GPU no longer answers on the bus"),
    "NV_ERR_CARD_NOT_PRESENT": ("gpu_fell_off_bus", "the GPU is not present on the bus"),
    "NV_ERR_ECC_ERROR": ("gpu_memory_ecc", "an ECC error"),
    "NV_ERR_MEMORY_ERROR": ("gpu_memory_ecc", "a GPU memory error"),
    "NV_ERR_BROKEN_FB": ("gpu_memory_ecc", "the GPU's framebuffer memory is broken"),
    "NV_ERR_MEMORY_TRAINING_FAILED": ("gpu_memory_ecc", "GPU memory training failed"),
    "NV_ERR_GPU_MEMORY_ONLINING_FAILURE": ("gpu_memory_ecc", "GPU memory could not be onlined"),
    "NV_ERR_RESOURCE_RETIREMENT_ERROR": ("gpu_memory_ecc", "retiring a failed resource (memory page/row) failed"),
    "NV_ERR_NVLINK_INIT_ERROR": ("nvlink_fault", "NVLink initialisation failed"),
    "NV_ERR_NVLINK_MINION_ERROR": ("nvlink_fault", "the NVLink MINION controller failed"),
    "NV_ERR_NVLINK_CLOCK_ERROR": ("nvlink_fault", "an NVLink clock error"),
    "NV_ERR_NVLINK_TRAINING_ERROR": ("nvlink_fault", "NVLink link training failed"),
    "NV_ERR_NVLINK_CONFIGURATION_ERROR": ("nvlink_fault", "an NVLink configuration error"),
    "NV_ERR_NVLINK_FABRIC_NOT_READY": ("nvls_fabric", "the NVLink fabric is not ready (Fabric Manager)"),
    "NV_ERR_NVLINK_FABRIC_FAILURE": ("nvls_fabric", "the NVLink fabric failed (Fabric Manager / NVSwitch)"),
    "NV_ERR_FABRIC_MANAGER_NOT_PRESENT": ("nvls_fabric", "Fabric Manager is not running"),
    "NV_ERR_FABRIC_STATE_OUT_OF_SYNC": ("nvls_fabric", "the fabric state is out of sync with Fabric Manager"),
    "NV_ERR_RISCV_ERROR": ("gsp_fault", "the GPU's RISC-V processor (GSP) failed"),
    "NV_ERR_FLCN_ERROR": ("gpu_hardware_other", "a GPU falcon micro-controller failed"),
    "NV_ERR_SECURE_BOOT_FAILED": ("gpu_hardware_other", "the GPU's secure boot failed"),
    "NV_ERR_PMU_NOT_READY": ("gpu_hardware_other", "the GPU's PMU is not ready"),
    "NV_ERR_FATAL_ERROR": ("gpu_hardware_other", "a fatal GPU error"),
    "NV_ERR_INSUFFICIENT_POWER": ("gpu_thermal_power", "the GPU does not get enough power"),
    "NV_ERR_GPU_NOT_FULL_POWER": ("gpu_thermal_power", "the GPU is not at full power"),
    "NV_ERR_LIB_RM_VERSION_MISMATCH": ("cuda_driver_mismatch", "the user-mode driver and the kernel module versions differ"),
}


def git_show(repo: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], check=True, capture_output=True,
                          text=True).stdout


def go_catalog(src: str) -> list[dict]:
    rows = []
    for m in re.finditer(r'\{Code: (\d+), Mnemonic: "((?:[^"\\]|\\.)*)", Description: "((?:[^"\\]|\\.)*)", '
                         r'ImmediateResolution: "((?:[^"\\]|\\.)*)", InvestigatoryResolution: "((?:[^"\\]|\\.)*)"\}', src):
        clean = [s.replace("\\n", " ").replace('\\"', '"').strip() for s in m.groups()[1:]]
        rows.append({"code": int(m.group(1)), "name": clean[0].split(" /")[0].strip(), "meaning": clean[1],
                     "immediate": clean[2], "investigatory": clean[3]})
    return rows


def xid_reading(row: dict) -> tuple[str, float, str]:
    text = f"{row['name']} | {row['meaning']} | {row['immediate']} | {row['investigatory']}"
    for rx, c, w, r in XID_RULES:
        if re.search(rx, text):
            return c, w, r
    raise SystemExit(f"Xid {row['code']}: no rule in XID_RULES reads '{text}': add one")


def toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def write_xid(rows: list[dict]) -> tuple[int, int]:
    path = KNOWLEDGE / "xid.toml"
    text = path.read_text(encoding="utf-8")
    existing = tomllib.loads(text)
    header = text.split("\n[", 1)[0].rstrip("\n")
    header = re.sub(r"\n# Generated part:.*", "", header, flags=re.S)
    header += ("\n# Generated part: tools/catalogs/gen_nvidia.py adds every other code of NVIDIA's catalog (via GPUd"
               f"\n#   {GPUD_COMMIT[:12]} catalog_generated.go), reading derived from mnemonic, description and"
               "\n#   resolution by its XID_RULES (entries with that source line); the others are kept as they are.")
    blocks = []
    for code in sorted({int(c) for c in existing} | {r["code"] for r in rows}):
        e = existing.get(str(code))
        if e is None or e.get("source", "").startswith(GENERATED):
            row = next(r for r in rows if r["code"] == code)
            cause, weight, role = xid_reading(row)
            e = {"name": row["name"], "meaning": row["meaning"], "cause": cause, "weight": weight, "role": role,
                 "immediate": row["immediate"], "investigatory": row["investigatory"],
                 "source": f"{GENERATED} {GPUD_COMMIT[:12]}"}
        lines = [f"[{code}]"] + [f"{k} = {toml_str(v) if isinstance(v, str) else v}" for k, v in e.items()]
        blocks.append("\n".join(lines))
    path.write_text(header + "\n\n" + "\n\n".join(blocks) + "\n", encoding="utf-8")
    return sum(not e.get("source", "").startswith(GENERATED) for e in existing.values()), len(blocks)


def sxid_catalog(src: str) -> list[dict]:
    out = []
    for m in re.finditer(r"\n\t(\d{4,6}): \{(.*?)\n\t\},", src, re.S):
        body = m.group(2)

        def field(name: str, body=body) -> str:
            f = re.search(name + r':\s*(?:"((?:[^"\\]|\\.)*)"|`([^`]*)`|(true|false))', body)
            return next((g for g in f.groups() if g is not None), "") if f else ""
        fatal = field("AlwaysFatal") == "true" or field("PotentialFatal") == "true" or "EventTypeFatal" in body
        name = field("Name")
        cause = "nvlink_fault" if fatal or "DBE" in name else "context"
        out.append({"id": f"sxid.{m.group(1)}", "code": int(m.group(1)), "name": name,
                    "potential_fatal": field("PotentialFatal") == "true", "always_fatal": field("AlwaysFatal") == "true",
                    "impact": field("Impact").strip(), "recovery": field("Recovery").strip(), "cause": cause,
                    "why": "fatal NVSwitch error: the NVLink fabric is broken" if cause != "context"
                           else "non-fatal NVSwitch error (corrected or no impact)"})
    return out


def nv_status(src: str) -> list[dict]:
    out = []
    for m in re.finditer(r'NV_STATUS_CODE\((NV_\w+),\s*(0x[0-9A-Fa-f]+),\s*"([^"]*)"\)', src):
        name = m.group(1)
        if name == "NV_OK":
            continue
        cause, why = NV_STATUS_READINGS.get(name, ("context", "says what the driver call hit, not why"))
        out.append({"id": f"nvstatus.{name}", "name": name, "number": int(m.group(2), 16), "message": m.group(3),
                    "cause": cause, "why": why})
    return out


def main(argv: list[str]) -> int:
    gpud, ogkm = argv[1], argv[2]
    rows = go_catalog(git_show(gpud, GPUD_COMMIT, "components/accelerator/nvidia/xid/catalog_generated.go"))
    kept, total = write_xid(rows)
    sx = sxid_catalog(git_show(gpud, GPUD_COMMIT, "components/accelerator/nvidia/sxid/sxid.go"))
    st = nv_status(git_show(ogkm, OGKM_COMMIT, "src/common/sdk/nvidia/inc/nvstatuscodes.h"))
    cat = KNOWLEDGE / "catalogs"
    for name, data in (("sxid.json", {"catalog": "sxid", "upstream": "https://github.com/leptonai/gpud sxid.go "
                                      "(NVIDIA Fabric Manager user guide DU-09883-001)", "version": GPUD_COMMIT[:12],
                                      "generator": "tools/catalogs/gen_nvidia.py", "entries": sx}),
                       ("nv_status.json", {"catalog": "nv_status", "upstream": "https://github.com/NVIDIA/open-gpu-kernel-modules "
                                           "src/common/sdk/nvidia/inc/nvstatuscodes.h", "version": OGKM_VERSION,
                                           "commit": OGKM_COMMIT, "generator": "tools/catalogs/gen_nvidia.py", "entries": st})):
        (cat / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"xid.toml: {total} codes ({kept} kept, {total - kept} generated); {len(rows)} in NVIDIA's catalog; "
          f"sxid: {len(sx)}; nv_status: {len(st)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
