"""The catalog rule (classify/rules/catalog.py) on whole bundles: a specific upstream
message claims alone, a subsystem-level one never does, a line a message pattern reads is
left to it, and a CUDA error that a hardware Xid explains is fallout.

The one-line bundles below are built at test time from the formats the upstream sources
print (named per test); they test the mechanism, they are not real crashes."""
from __future__ import annotations

from pathlib import Path

from postmortem import knowledge
from postmortem.classify import classify
from postmortem.classify.rules.catalog import CatalogReadings
from postmortem.knowledge.registry import LIMIT
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parent.parent
K = knowledge.load()


def _case(tmp_path: Path, files: dict[str, str]):
    b = tmp_path / "bundle"
    b.mkdir(parents=True)
    for name, text in files.items():
        (b / name).write_text(text + "\n")
    return analyze(b).case


def _catalog_findings(case):
    return CatalogReadings().findings(case, K, [])


def test_oops_in_the_nvidia_module_is_a_driver_bug(tmp_path):
    # arch/x86/mm/fault.c and dumpstack.c formats; the function is the one issue 13 quotes.
    case = _case(tmp_path, {"dmesg.txt": "[ 5021.112233] BUG: kernel NULL pointer dereference, address: 0000000000000008\n"
                                          "[ 5021.112270] RIP: 0010:nvidia_vma_access+0x5d/0x150 [nvidia]"})
    v = classify(case, K)
    assert v.cause == "driver_bug" and v.category.value == "hardware"
    assert any(r.line == 2 for r in v.root.evidence)


def test_oops_in_another_module_says_nothing(tmp_path):
    case = _case(tmp_path, {"dmesg.txt": "[ 5021.112270] RIP: 0010:ext4_readdir+0x5d/0x150 [ext4]"})
    assert _catalog_findings(case) == []


def test_nv_status_in_an_nvrm_line(tmp_path):
    # nvstatuscodes.h NV_ERR_RESET_REQUIRED (0x65), as RmInitAdapter prints it.
    case = _case(tmp_path, {"dmesg.txt": "[ 88.1] NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x62:0x65:1555) NV_ERR_RESET_REQUIRED"})
    (f,) = _catalog_findings(case)
    assert f.cause == "gpu_hardware_other" and f.strength == "strong" and f.confidence >= LIMIT.min_confidence


def test_an_exact_nccl_warn_claims_alone(tmp_path):
    # NCCL src/transport/net_ib: WARN("NET/IB : Got async event : %s", ...)
    case = _case(tmp_path, {"nccl.log": "node1:123:456 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error"})
    v = classify(case, K)
    assert v.cause == "nccl_network" and v.confidence >= LIMIT.min_confidence


def test_a_subsystem_level_sign_alone_never_claims(tmp_path):
    # ATen's device check: "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
    case = _case(tmp_path, {"train.log": "Traceback (most recent call last):\n"
                                         '  File "/w/train.py", line 40, in forward\n'
                                         "    return self.head(h) + y\n"
                                         "RuntimeError: Expected all tensors to be on the same device, but found at "
                                         "least two devices, cuda:0 and cuda:3!"})
    (f,) = _catalog_findings(case)
    assert f.cause == "device_mapping" and f.strength == "weak" and f.confidence < LIMIT.min_confidence
    assert classify(case, K).cause != "device_mapping"  # (the exception itself is the app-error rule's)


def test_cuda_illegal_address_is_the_jobs_unless_a_hardware_xid_explains_it(tmp_path):
    # c10/cuda/driver_api.h C10_CUDA_DRIVER_CHECK: "CUDA driver error: " + cuGetErrorString
    # ("CUDA error: ..." lines are read by a messages.toml pattern, so left to it).
    tb = ("Traceback (most recent call last):\n  File \"/w/train.py\", line 9, in <module>\n    loss.item()\n"
          "RuntimeError: CUDA driver error: an illegal memory access was encountered")
    (f,) = [f for f in _catalog_findings(_case(tmp_path / "a", {"train.log": tb})) if f.discriminator.startswith("cuda.")]
    assert f.cause == "app_error" and f.role == "root"
    xid = (ROOT / "fixtures/xid/xid_public.txt").read_text().splitlines()
    hw = next(line for line in xid if K.xids[int(line.split("): ")[1].split(",")[0])].cause in ("gpu_memory_ecc", "gpu_fell_off_bus"))
    (f,) = [f for f in _catalog_findings(_case(tmp_path / "b", {"train.log": tb, "dmesg.txt": hw}))
            if f.discriminator.startswith("cuda.")]
    assert f.cause == "app_error" and f.role == "symptom"


def test_lines_a_message_pattern_reads_are_left_to_it():
    # Real bundle: every NET/IB completion line is read by messages.toml's pattern.
    case = analyze(ROOT / "fixtures/validation19/roce-error12-gid-index-ncclt24-01/bundle").case
    found = _catalog_findings(case)
    assert not any(f.cause == "nccl_network" for f in found)
    # The sticky CUDA error NCCL reports on the abort path is only a weak sign of the job's code.
    (app,) = [f for f in found if f.cause == "app_error"]
    assert app.strength == "weak"
    assert classify(case, K).cause == "nccl_network"
