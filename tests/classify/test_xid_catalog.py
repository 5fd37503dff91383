"""The Xid catalog on real NVRM lines (fixtures/xid): each line reaches the catalog's
reading through the real parser and rule."""
from pathlib import Path

import pytest

from postmortem import knowledge
from postmortem.classify import classify, rules
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
LINES = (ROOT / "fixtures/xid/xid_public.txt").read_text().splitlines()
K = knowledge.load()


def _case(tmp_path, text: str):
    b = tmp_path / "b"
    b.mkdir(exist_ok=True)
    (b / "dmesg.txt").write_text(text + "\n")
    return analyze(b).case


@pytest.mark.parametrize("line", LINES, ids=lambda l: l.split("): ")[1].split(",")[0])
def test_real_xid_line_gets_the_catalog_reading(tmp_path, line):
    code = int(line.split("): ")[1].split(",")[0])
    info = K.xids[code]
    case = _case(tmp_path, line)
    assert any(e.kind == "kernel.xid" and e.data.get("code") == code for e in case.events)
    (f,) = rules.XidCatalog().findings(case, K, [])
    assert f.discriminator == f"xid{code}"
    if info.cause in ("", "app_fault"):
        assert f.role == "symptom" and f.cause == "unknown"
    else:
        assert f.cause == info.cause and f.role == ("root" if info.role == "root" else "symptom")


def test_consequence_xid_never_becomes_the_verdict(tmp_path):
    v = classify(_case(tmp_path, LINES[3]), K)  # Xid 154 alone: "recovery action changed"
    assert v.cause == "unknown"


def test_fatal_xid_is_root_and_its_consequence_a_symptom(tmp_path):
    v = classify(_case(tmp_path, LINES[2] + "\n" + LINES[3]), K)  # 119 then 154
    assert v.cause == "gsp_fault" and v.category.value == "hardware"
    assert any(f.discriminator == "xid154" for f in v.symptoms)


def test_app_fault_xid_without_a_process_is_no_one_s_fault(tmp_path):
    # Xid 13 with pid '<unknown>', four times on one GPU: no process to blame, one GPU only.
    case = _case(tmp_path, "\n".join([LINES[7]] * 4))
    (f,) = rules.XidCatalog().findings(case, K, [])
    assert f.cause == "unknown" and f.role == "symptom"


def test_app_fault_xid_on_one_gpu_from_several_processes_leans_to_the_gpu():
    # pytorch/pytorch#51382: Xid 31 on db:00 from three separate runs (pids 13641, 14323, 33275),
    # no name= field: a re-run program repeats its own bad access just the same -> weak (audit 6 H6).
    case = analyze(ROOT / "fixtures/validation/hw-faulty-gpu-xid31-xid43-08/bundle").case
    fs = [f for f in rules.XidCatalog().findings(case, K, []) if f.discriminator == "xid31"]
    assert [f.cause for f in fs] == ["gpu_hardware_other"] and "3 separate processes" in fs[0].summary
    assert fs[0].strength == "weak"


def test_app_fault_xid_on_one_gpu_from_different_programs_is_the_gpu(tmp_path):
    # The real Xid 31 line of pytorch/pytorch#51382 as printed by drivers that add name= (format of
    # the NVRM lines in fixtures/xid): two different programs faulting on one GPU -> the GPU.
    # (Rearranged lines made at test time from a real line: only the pid/name fields differ.)
    line = next(l for l in (ROOT / "fixtures/validation/hw-faulty-gpu-xid31-xid43-08/bundle/dmesg.txt")
                .read_text().splitlines() if "): 31, pid=13641" in l)
    a = line.replace("pid=13641,", "pid=13641, name=python3,")
    b = line.replace("pid=13641,", "pid=22222, name=cuda_bench,")
    c = line.replace("pid=13641,", "pid=33333, name=python3,")
    (f,) = rules.XidCatalog().findings(_case(tmp_path, "\n".join([a, b])), K, [])
    assert f.cause == "gpu_hardware_other" and f.strength == "strong" and "2 different programs" in f.summary
    # near miss: two runs of the same program
    (g,) = rules.XidCatalog().findings(_case(tmp_path, "\n".join([a, c])), K, [])
    assert g.cause == "gpu_hardware_other" and g.strength == "weak"


def test_app_fault_xid_from_one_process_is_that_process_s_code(tmp_path):
    # The same real line of pytorch/pytorch#51382 (one pid) four times: one program's bad access.
    line = next(l for l in (ROOT / "fixtures/validation/hw-faulty-gpu-xid31-xid43-08/bundle/dmesg.txt")
                .read_text().splitlines() if "): 31, pid=13641" in l)
    (f,) = rules.XidCatalog().findings(_case(tmp_path, "\n".join([line] * 4)), K, [])
    assert f.cause == "app_error" and f.role == "root" and "pid 13641" in f.summary
