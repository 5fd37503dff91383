"""The classifier on every case with a known truth: the crash lab's bundles (made here)
must all be right; the development corpus must stay at its floor."""
from pathlib import Path

from postmortem.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]


def test_every_lab_bundle_is_right_and_cites_real_lines():
    result = evaluate([ROOT / "fixtures/bundles"])
    wrong = [(c["case"], c.get("category"), c.get("cause")) for c in result["cases"]
             if not (c.get("category_ok") and c.get("cause_ok"))]
    assert result["total"] >= 8 and not wrong
    assert result["evidence_ok"] == result["total"]


def test_corpus_floors_and_no_confident_mistake():
    result = evaluate([ROOT / "fixtures/corpus"])
    n = result["total"]
    assert result["category_correct"] >= 0.9 * n and result["cause_correct"] >= 0.75 * n
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == n


def test_validation_set_floor():
    """The later real cases (fixtures/validation*), collected after the first rules were written."""
    result = evaluate([ROOT / "fixtures/validation", ROOT / "fixtures/validation2", ROOT / "fixtures/validation3",
                         ROOT / "fixtures/validation4", ROOT / "fixtures/validation5", ROOT / "fixtures/validation6",
                         ROOT / "fixtures/validation7", ROOT / "fixtures/validation8", ROOT / "fixtures/validation10",
                         ROOT / "fixtures/validation11", ROOT / "fixtures/validation12",
                         ROOT / "fixtures/validation13", ROOT / "fixtures/validation14",
                         ROOT / "fixtures/validation15", ROOT / "fixtures/validation16",
                         ROOT / "fixtures/validation17", ROOT / "fixtures/validation18", ROOT / "fixtures/validation19"])
    assert result["total"] >= 83
    # known category misses, kept on purpose (each README says why): a truth with no cause id, a
    # Docker hang whose only sign is "P2P disabled", a lone "unhandled cuda error" line, a Ray
    # failure table whose error sits in a file never quoted, two old-NCCL bugs known only by version, a
    # DeepSpeed exit code 1 whose traceback was never posted; a nanoGPT multi-node crash whose bundle is
    # only ProcessGroupNCCL's teardown lines ("Some NCCL operations have failed or timed out"): printed
    # after any failure or timeout, that line is a symptom (issue 13), so nothing in it names the network
    assert result["category_correct"] >= result["total"] - 8 and not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


def test_frozen_split_first_seen_floor():
    """The blind set (fixtures/frozen, see its README): scored once at first sight, 28/44
    categories and 26/44 causes; re-scored at 68412fc after development work elsewhere, 30/44
    and 27/44.  Never tuned against, so this only guards against regressions."""
    result = evaluate([ROOT / "fixtures/frozen/sweep-2026-12"])
    assert result["total"] == 44
    assert result["category_correct"] >= 30 and result["cause_correct"] >= 27
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


def test_validation20_floor():
    """The second blind sweep (fixtures/validation20, see its README): first seen at 22/52
    categories and 20/52 causes; development data since.  What is still missed is in its README
    (single weak lines, hardware told only by the thread, topology files by NCCL version)."""
    result = evaluate([ROOT / "fixtures/validation20"])
    assert result["total"] == 52
    assert result["category_correct"] >= 37 and result["cause_correct"] >= 36
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


def test_validation21_floor():
    """The third blind sweep (fixtures/validation21, see its README): 44 public threads and 16 lab
    crashes, first seen at ec70056 at 38/60 categories and 32/60 causes; development data since.
    Its one confident mistake at first sight is a label its collector doubted before scoring; it
    is allowed here, no other."""
    result = evaluate([ROOT / "fixtures/validation21"])
    assert result["total"] == 60
    assert result["category_correct"] >= 38 and result["cause_correct"] >= 32
    assert set(result["confident_wrong"]) <= {"nvlink-bad-state-nvls-multicast-bind-401-14"}
    assert result["evidence_ok"] == result["total"]


def test_validation22_floor():
    """The development half of the fourth blind sweep (fixtures/validation22, see its README):
    first seen at bf33662 with 10/23 categories and 8/23 causes, with no confident mistake."""
    result = evaluate([ROOT / "fixtures/validation22"])
    assert result["total"] == 23
    assert result["category_correct"] >= 10 and result["cause_correct"] >= 8
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


def test_second_frozen_split_first_seen_floor():
    """The frozen half of the fourth blind sweep (fixtures/frozen/sweep-2026-12d): first seen at
    bf33662 with 22/35 categories and 20/35 causes, with no confident mistake. The floor only
    guards it against regressions; nobody develops against it."""
    result = evaluate([ROOT / "fixtures/frozen/sweep-2026-12d"])
    assert result["total"] == 35
    assert result["category_correct"] >= 22 and result["cause_correct"] >= 20
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]
