"""NCCL's shmutils.cc WARN 'Error while creating shared memory segment %s (size %ld), error: %s (%d)'
read when a hard-wrapped paste left its first word on the line before (messages.toml
nccl_shm_segment_error).  The real lines: fixtures/validation21/xpk-a3mega-jobset-no-dshm-nccl-shm-01
(XLA's pjrt status quoting NCCL's last warning, wrapped at the issue's width)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_XPK = ROOT / "fixtures/validation21/xpk-a3mega-jobset-no-dshm-nccl-shm-01/bundle/stderr.txt"


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "stderr.txt").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


def test_the_warn_wrapped_after_its_first_word_still_names_the_segment(tmp_path):
    text = _XPK.read_text(encoding="utf-8")
    assert "'Error \nwhile creating shared memory segment /dev/shm/nccl-" in text   # the wrap the test is about
    v = _verdict(tmp_path, text)
    assert v.cause == "shm_exhausted", (v.cause, v.summary)
    assert "nccl-TfciGV" in v.summary


def test_the_same_words_inside_another_sentence_are_not_the_warn(tmp_path):
    """Near miss: only the format's own words starting a line (the wrapped rest of the WARN) are read,
    not a sentence that merely contains them."""
    lines = _XPK.read_text(encoding="utf-8").splitlines(keepends=True)
    moved = [("a script failed " + ln) if ln.startswith("while creating") else ln for ln in lines]
    v = _verdict(tmp_path, "".join(moved))
    assert v.cause != "shm_exhausted", (v.cause, v.summary)


def test_a_wrapped_attach_to_a_missing_segment_is_not_exhaustion(tmp_path):
    """Near miss: the attach form with ENOENT is a peer's segment missing (nccl_shm_attach_missing's
    reading), wrapped or not."""
    text = ("E0605 09:26:44.248647    1054 pjrt_stream_executor_client.cc:2839] Execution of replica 0\n"
            "failed: INTERNAL: NCCL operation ncclGroupEnd() failed: unhandled system error (run with \n"
            "NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated)  'Error \n"
            "while attaching to shared memory segment /dev/shm/nccl-TfciGV (size 31850880), error: No such file or directory (2)'.\n")
    v = _verdict(tmp_path, text)
    assert v.cause != "shm_exhausted", (v.cause, v.summary)
