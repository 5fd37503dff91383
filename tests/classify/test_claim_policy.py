"""The claim policy (signals.toml threshold.weak_sign_alone_claims = 0, issue 13 §4): one
strong sign or two independent ones claim; one weak sign gives `unknown` leaning its cause,
with what to collect.  Bundles here are written at test time from real lines (the samples of
knowledge/messages.toml, each quoted from a public report, and fixtures/system's real
`df -h /dev/shm` of a Docker container): synthetic arrangements of real lines, and say so."""
from pathlib import Path

from postmortem import knowledge
from postmortem.knowledge import registry
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
K = knowledge.load()
SAMPLE = {m.id: m.sample for m in K.messages}
SHM_64M = (ROOT / "fixtures/system/shm64_df_h.txt").read_text(encoding="utf-8")
SHM_BIG = "Filesystem      Size  Used Avail Use% Mounted on\ntmpfs           126G     0  126G   0% /dev/shm\n"


def _bundle(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "bundle"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_policy_is_strict():
    assert registry.LIMIT.weak_sign_alone_claims == 0


def test_no_weak_sign_weighs_just_above_the_claim_threshold():
    """A weak sign's weight is never placed in [threshold, threshold + 0.05): that band is where
    weights were nudged to flip single cases (issue 13)."""
    low = registry.LIMIT.min_confidence
    nudged = sorted(s.id for s in registry.registry().signals.values()
                    if s.strength == "weak" and low <= s.weight < low + 0.05)
    assert not nudged


def test_a_bare_nccl_system_error_alone_is_unknown_leaning_shm(tmp_path):
    v = analyze(_bundle(tmp_path, {"train.log": SAMPLE["nccl_system_error_bare"] + "\n"})).verdict
    assert v.cause == "unknown" and "leaning shm_exhausted" in v.summary
    assert any("df -h /dev/shm" in c for c in v.collect)


def test_the_same_error_beside_a_64_mib_dev_shm_is_two_independent_signs(tmp_path):
    v = analyze(_bundle(tmp_path, {"train.log": SAMPLE["nccl_system_error_bare"] + "\n",
                                   "df_shm.txt": SHM_64M})).verdict
    assert v.cause == "shm_exhausted"
    assert any("2 independent weak signs" in t and "shm.small_beside_failure" in t for t in v.trace)
    assert any(r.path == "df_shm.txt" for r in v.root.evidence)


def test_a_large_dev_shm_is_no_second_sign(tmp_path):
    v = analyze(_bundle(tmp_path, {"train.log": SAMPLE["nccl_system_error_bare"] + "\n",
                                   "df_shm.txt": SHM_BIG})).verdict
    assert v.cause == "unknown"


def test_a_small_dev_shm_alone_claims_nothing(tmp_path):
    v = analyze(_bundle(tmp_path, {"train.log": SAMPLE["watchdog_timeout"] + "\n", "df_shm.txt": SHM_64M})).verdict
    assert v.cause != "shm_exhausted"
