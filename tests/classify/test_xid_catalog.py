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


def test_app_fault_xid_on_one_gpu_repeating_points_at_hardware(tmp_path):
    line = LINES[7]
    case = _case(tmp_path, "\n".join([line] * 4))
    (f,) = rules.XidCatalog().findings(case, K, [])
    assert f.cause == "gpu_hardware_other"
