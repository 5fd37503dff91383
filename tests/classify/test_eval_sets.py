"""The classifier on every case with a known truth: the crash lab's bundles (made here)
must all be right; the development corpus must stay at its floor."""
from pathlib import Path

import pytest

from postmortem.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]


# Lab bundles whose truth is known by construction but whose bundle cannot show it: the verdict
# must then be an honest `unknown`, never a claim.  lab-flightrec-sigkill: the program SIGKILLs
# its own rank 1; Flight Recorder proves which rank the others waited for, not why it died, and a
# SIGKILL alone is the OOM killer, the scheduler or a teardown as much as the job (audit 6 H8).
UNDECIDABLE_BY_CONSTRUCTION = {"lab-flightrec-sigkill"}


def test_every_lab_bundle_is_right_and_cites_real_lines():
    result = evaluate([ROOT / "fixtures/bundles"])
    wrong = [(c["case"], c.get("category"), c.get("cause")) for c in result["cases"]
             if not (c.get("category_ok") and c.get("cause_ok"))
             and not (c["case"] in UNDECIDABLE_BY_CONSTRUCTION and c.get("cause") == "unknown")]
    assert result["total"] >= 8 and not wrong
    assert result["evidence_ok"] == result["total"]


def test_corpus_floors_and_no_confident_mistake():
    result = evaluate([ROOT / "fixtures/corpus"])
    n = result["total"]
    # 18/20 categories since audit 5: two NCCL versions not shown to be one run and a stopped NCCL
    # init (one failure read twice) now lean instead of claiming.  Audit 6 H5: CUDA's catch-all
    # "unknown error" alone (hw-gpu-died-cuda-unknown-01) only leans to the GPU; round 6 (audit 5 M3):
    # a UCX SIGBUS inside libnccl with nothing else (shm-nccl-sigbus-ucx-06) is one weak sign: 16/20
    assert result["category_correct"] >= 0.8 * n and result["cause_correct"] >= 0.8 * n, (result["category_correct"], result["cause_correct"])
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
    # Floors measured with the strict claim policy (issue 13 §4, signals.toml
    # weak_sign_alone_claims = 0): 53/83 categories and 51/83 causes.  The misses are `unknown`:
    # bundles of 1-20 lines whose only sign is weak (a bare "unhandled system error", an exit
    # code -9, a SIGBUS with no location, NCCL stopping during init), each now "leaning" its
    # cause with what to collect; before the policy they were claimed tentatively (75/83, 72/83).
    # audit 5 fixes (one fact read twice is one sign, ENOMEM/memlock, versions): 51/83 and 50/83 measured
    # audit 6 H6: an application-fault Xid repeated by runs of one program (or unnamed processes) on
    # one GPU only leans to the GPU (hw-faulty-gpu-xid31-xid43-08 now leans); round 6 (audit 5 M3): the
    # UCX SIGBUS inside libnccl alone (validation7 ucx-sigbus-ncclgroupend-hugectr-01) is one weak sign:
    # 49/83 and 48/83 measured with both
    assert result["category_correct"] >= 49 and result["cause_correct"] >= 48, (result["category_correct"], result["cause_correct"])
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


def test_frozen_split_first_seen_floor():
    """The blind set (fixtures/frozen, see its README): scored once at first sight, 28/44
    categories and 26/44 causes; re-scored at 68412fc after development work elsewhere, 30/44
    and 27/44.  Never tuned against, so this only guards against regressions."""
    result = evaluate([ROOT / "fixtures/frozen/sweep-2026-12"])
    assert result["total"] == 44
    # With the strict claim policy (issue 13 §4) the floor is what this test printed when it
    # failed (category 25, cause 24; no case folder or per-case output read): one weak sign no longer claims.
    # After the audit 5 fixes the same way: 26, 25 printed (counts only).
    # Round 17: 27, 24 printed. Toggling each change of the round (counts only) puts the lost cause on
    # c10d's "Detected mismatch between collectives" now reading collective_desync (its cause id in
    # causes.toml) instead of app_error: this split was labelled at 648cc75b, twelve minutes before
    # collective_desync became a cause id (d3b0b118), so a desync here can only carry app_error.
    # Same category; the floor follows, the label stays as collected.
    assert result["category_correct"] >= 26 and result["cause_correct"] >= 24, (result["category_correct"], result["cause_correct"])
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


def test_validation20_floor():
    """The second blind sweep (fixtures/validation20, see its README): first seen at 22/52
    categories and 20/52 causes; development data since.  What is still missed is in its README
    (single weak lines, hardware told only by the thread, topology files by NCCL version)."""
    result = evaluate([ROOT / "fixtures/validation20"])
    assert result["total"] == 52
    # strict claim policy (issue 13 §4): 36/52, 36/52 measured (38/52 and 37/52 with tentative claims)
    assert result["category_correct"] >= 36 and result["cause_correct"] >= 36, (result["category_correct"], result["cause_correct"])
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


def test_validation21_floor():
    """The third blind sweep (fixtures/validation21, see its README): 44 public threads and 16 lab
    crashes, first seen at ec70056 at 38/60 categories and 32/60 causes; development data since.
    Its one confident mistake at first sight is a label its collector doubted before scoring; it
    is allowed here, no other."""
    result = evaluate([ROOT / "fixtures/validation21"])
    assert result["total"] == 60
    # strict claim policy (issue 13 §4): 38/60, 37/60 measured (46/60 and 43/60 with tentative claims)
    # audit 5 fixes: 37/60, 36/60 measured
    assert result["category_correct"] >= 37 and result["cause_correct"] >= 36, (result["category_correct"], result["cause_correct"])
    assert set(result["confident_wrong"]) <= {"nvlink-bad-state-nvls-multicast-bind-401-14"}
    assert result["evidence_ok"] == result["total"]


def test_validation22_floor():
    """The development half of the fourth blind sweep (fixtures/validation22, see its README):
    first seen at bf33662 with 10/23 categories and 8/23 causes, with no confident mistake."""
    result = evaluate([ROOT / "fixtures/validation22"])
    # 24 since lab4-readonly-dev-shm moved here from the frozen split (its mechanism was worked
    # on after its first-seen miss, so it no longer counts as unseen; see the frozen README).
    assert result["total"] == 24
    # strict claim policy (issue 13 §4): 8/23, 7/23 measured (10/23 and 8/23 with tentative claims); 10/23, 9/23 after audit 5;
    # 11/24, 10/24 with the moved case; 10/24, 10/24 after audit 6 H3 (a bare "[Errno 12] Cannot
    # allocate memory" is one weak sign of host_oom: lab4-mlock-cache-memlock, truth memlock_limit, was
    # claimed host_oom -- the right category by accident -- and now leans)
    assert result["category_correct"] >= 10 and result["cause_correct"] >= 10, (result["category_correct"], result["cause_correct"])
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


def test_second_frozen_split_first_seen_floor():
    """The frozen half of the fourth blind sweep (fixtures/frozen/sweep-2026-12d): first seen at
    bf33662 with 22/35 categories and 20/35 causes, with no confident mistake. The floor only
    guards it against regressions; nobody develops against it."""
    result = evaluate([ROOT / "fixtures/frozen/sweep-2026-12d"])
    # 34 since lab4-readonly-dev-shm moved to fixtures/validation22 (touched: see the README).
    assert result["total"] == 34
    # With the strict claim policy (issue 13 §4) the floor is what this test printed when it
    # failed (category 18, cause 17; no case folder or per-case output read).
    # After the audit 5 fixes: what this test printed when it failed (category 15, cause 15; no
    # case folder or per-case output read).
    # Without the moved case: 14 and 14 (counts only).
    assert result["category_correct"] >= 14 and result["cause_correct"] >= 14, (result["category_correct"], result["cause_correct"])
    assert not result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]


# The blind sweeps since the fifth, split by sha1(case id) parity into a development half and a
# frozen half (see each folder's README). Each floor is the count first seen at the commit named,
# after all of that session's engine work; nobody develops against a frozen half, its floor only
# guards against regressions (counts only).
# (folder, groups, total, category floor, cause floor, confident mistakes allowed, first seen)
_LAB_AND_GH = ("gh", "lab-a", "lab-b", "lab-c")
_SWEEP20_PUBLIC = ("gh-forums4", "gh-hf", "gh-infer2", "gh-megatron-nemo", "gh-nccl-torch", "gh-vision-rl")
_SWEEP19_PUBLIC = ("gh-comms4", "gh-data", "gh-deepspeed", "gh-domains", "gh-forums3", "gh-frameworks2", "gh-hw5",
                   "gh-infer", "gh-ray-k8s")
BLIND_SWEEP_HALVES = (
    ("validation23", _LAB_AND_GH, 24, 10, 9, 0, "fifth sweep, development half, 9f6af5f"),
    ("frozen/sweep-2026-12e", _LAB_AND_GH, 25, 7, 7, 0, "fifth sweep, frozen half, 9f6af5f"),
    # First seen with one confident mistake of cause (an Xid 79 from an overheated GPU read as
    # fallen off the bus, the category right); read as gpu_thermal_power since 127dd2d.
    ("validation24", ("gh", "gh2", "lab-a", "lab-b", "lab-c"), 30, 11, 10, 0, "sixth sweep, development half, 6e445e7"),
    # First seen with one confident mistake; the floor allows it, nothing more.
    ("frozen/sweep-2026-12f", ("gh", "gh2", "lab-a", "lab-b", "lab-c"), 41, 16, 16, 1, "sixth sweep, frozen half, 6e445e7"),
    ("validation25", _LAB_AND_GH, 31, 15, 15, 0, "seventh sweep, development half, 127dd2d"),
    ("frozen/sweep-2026-12g", _LAB_AND_GH, 40, 18, 18, 0, "seventh sweep, frozen half, 127dd2d"),
    ("validation26", _LAB_AND_GH, 36, 20, 15, 0, "eighth sweep, development half, 042df4e"),
    ("frozen/sweep-2026-12h", _LAB_AND_GH, 28, 16, 12, 0, "eighth sweep, frozen half, 042df4e"),
    ("validation27", _LAB_AND_GH, 35, 23, 22, 0, "ninth sweep, development half, 700564b"),
    ("frozen/sweep-2026-12i", _LAB_AND_GH, 31, 16, 12, 0, "ninth sweep, frozen half, 700564b"),
    ("validation28", _LAB_AND_GH + ("lab-d",), 31, 20, 18, 0, "tenth sweep, development half, 0aafd04"),
    ("frozen/sweep-2026-12j", _LAB_AND_GH + ("lab-d",), 37, 25, 17, 0, "tenth sweep, frozen half, 0aafd04"),
    ("validation29", _LAB_AND_GH + ("lab-d",), 31, 15, 14, 0, "eleventh sweep, development half, e651c5c"),
    ("frozen/sweep-2026-12k", _LAB_AND_GH + ("lab-d",), 34, 20, 15, 0, "eleventh sweep, frozen half, e651c5c"),
    ("validation30", _LAB_AND_GH + ("lab-d",), 33, 16, 13, 0, "twelfth sweep, development half, 8ae20a1"),
    ("frozen/sweep-2026-12l", _LAB_AND_GH + ("lab-d",), 30, 18, 15, 0, "twelfth sweep, frozen half, 8ae20a1"),
    ("validation31", _LAB_AND_GH + ("lab-d", "lab-e", "lab-f"), 21, 8, 5, 0, "thirteenth sweep, development half, f8f93db"),
    # First seen with one wrong category below 0.8 (a port above 65535 read as the rendezvous
    # endpoint's bad port: comms/nccl_network, labelled config), no confident mistake.
    ("frozen/sweep-2026-12m", _LAB_AND_GH + ("lab-d", "lab-e", "lab-f"), 14, 4, 4, 0, "thirteenth sweep, frozen half, f8f93db"),
    ("validation32", ("gh-comms", "gh-config", "gh-config2", "gh-forums", "gh-frameworks", "gh-hw", "lab-a"),
     35, 15, 12, 0, "seventeenth sweep, development half, 2879ab9f"),
    ("frozen/sweep-2026-12q", ("gh-comms", "gh-config", "gh-config2", "gh-forums", "gh-frameworks", "gh-hw", "gh-hw2",
                               "gh-hw3", "lab-a"), 36, 17, 16, 0, "seventeenth sweep, frozen half, 2879ab9f"),
    # First seen with one confident mistake of cause (a vLLM image's CUDA 803, 'unsupported display
    # driver / cuda driver combination', read as a driver older than the runtime at 0.85; labelled
    # driver_library_mismatch) and one wrong category below 0.8 (a lab straggler read as nccl_timeout).
    # lab-b's last two cases arrived after the split and were scored at 8b4e57ad too (1/2, 1/2).
    ("validation33", ("gh-cn", "gh-comms3", "gh-hw4", "gh-llm", "gh-pages", "gh-sci", "gh-small", "gh-vision", "lab-b",
                      "lab-c"), 43, 16, 14, 1, "eighteenth sweep, development half, 8b4e57ad"),
    # First seen with two wrong categories below 0.8, no confident mistake.
    ("frozen/sweep-2026-12r", ("gh-cn", "gh-comms3", "gh-hw4", "gh-llm", "gh-pages", "gh-sci", "gh-small", "gh-vision",
                               "lab-b", "lab-c"), 29, 13, 13, 0, "eighteenth sweep, frozen half, 8b4e57ad"),
    # lab-d and lab-e arrived after the public groups' split; scored at a5fc0e41 on arrival, split the same way.
    ("validation34", _SWEEP19_PUBLIC + ("lab-d", "lab-e"), 49, 24, 20, 0, "nineteenth sweep, development half, a5fc0e41"),
    # First seen with one confident mistake of category: ComfyUI's "CUDA error: out of memory" on a
    # nearly empty second GPU read as gpu_oom at 0.90; the thread (still open) blames a CUDA bug
    # when several GPUs are initialised, labelled driver_bug.
    ("frozen/sweep-2026-12s", _SWEEP19_PUBLIC + ("lab-d", "lab-e"), 34, 11, 9, 1, "nineteenth sweep, frozen half, a5fc0e41"),
    # The twentieth sweep (six public groups, two lab groups), each group scored at ce7b99f5 as it
    # arrived; one wrong category below 0.8 in the development half (c10d's old 'ValueError: host not
    # found: ...' read as the job's own argument error, app_error 0.70; labelled nccl_network).
    ("validation35", _SWEEP20_PUBLIC + ("lab-f", "lab-g"), 37, 12, 11, 0, "twentieth sweep, development half, ce7b99f5"),
    ("frozen/sweep-2026-12t", _SWEEP20_PUBLIC + ("lab-f", "lab-g"), 34, 15, 11, 0,
     "twentieth sweep, frozen half, ce7b99f5"),
)


@pytest.mark.parametrize(
    "folder, groups, total, category_floor, cause_floor, confident_allowed, first_seen",
    BLIND_SWEEP_HALVES, ids=[row[0] for row in BLIND_SWEEP_HALVES])
def test_blind_sweep_half_keeps_its_first_seen_floor(folder, groups, total, category_floor, cause_floor,
                                                     confident_allowed, first_seen):
    result = evaluate([ROOT / "fixtures" / folder / g for g in groups])
    assert result["total"] == total
    assert result["category_correct"] >= category_floor and result["cause_correct"] >= cause_floor, (
        first_seen, result["category_correct"], result["cause_correct"])
    assert len(result["confident_wrong"]) <= confident_allowed, result["confident_wrong"]
    assert result["evidence_ok"] == result["total"]
