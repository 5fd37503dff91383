"""The kernel's OOM report cut before its 'Killed process' line -- how a report is often pasted --
still says the OOM killer ran (signals.toml kernel.oom_report_cut): weak alone, a claim beside the
job's own death by SIGKILL, and never read where the kill line is there to name the victim.

REAL lines: fixtures/bundles/lab-torchrun-oom-cgroup (a memcg OOM kill of rank 1 under torchrun,
made by its SOURCE.md's script); the excerpt is its dmesg.txt's report of the job's kill (lines
452-534: dump_header to dump_oom_summary), cut as a paste would be.  Public: fixtures/validation32
gh-frameworks dali-585 and gh-forums llamafactory-3230 (reports pasted without the kill line)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures/bundles/lab-torchrun-oom-cgroup/bundle"


def _excerpt(tmp_path: Path, with_launcher: bool, end: int = 534) -> Path:
    lines = (LAB / "dmesg.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "dmesg.txt").write_text("".join(lines[451:end]), encoding="utf-8")
    if with_launcher:
        shutil.copy(LAB / "train.log", tmp_path / "train.log")
    return tmp_path


def test_cut_report_beside_a_sigkill_claims_host_oom(tmp_path):
    v = analyze(_excerpt(tmp_path, with_launcher=True)).verdict
    assert (v.category.value, v.cause) == ("config", "host_oom"), v.trace
    assert any("kernel.oom_report_cut" in t and "sigkill.exit" in t for t in v.trace), v.trace


def test_cut_report_alone_only_leans(tmp_path):
    v = analyze(_excerpt(tmp_path, with_launcher=False)).verdict
    assert v.cause == "unknown" and "leaning host_oom" in v.summary, (v.summary, v.trace)


def test_report_with_its_kill_line_is_read_by_that_line(tmp_path):
    a = analyze(_excerpt(tmp_path, with_launcher=False, end=535))
    assert any("is read by its kill line" in t for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "host_oom"


def test_public_excerpts_lean_to_host_memory():
    for name in ("dali-585-multigpu-hang-memcg-oom-killer-python-10", "llamafactory-3230-qwen72b-z3-lora-host-ram-oom-killed-01"):
        bundle = next((ROOT / "fixtures").glob(f"validation32/*/{name}/bundle"))
        v = analyze(bundle).verdict
        assert "leaning host_oom" in v.summary, (name, v.summary)
