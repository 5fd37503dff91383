"""Bundles arranged at test time from real fixture files (the audit-fixer tests share these)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def analyze_files(tmp_path: Path, files: dict[str, str]):
    """Write `files` (name -> text) into a fresh bundle folder under tmp_path and analyse it."""
    bundle = tmp_path / "bundle"
    bundle.mkdir(parents=True)
    for name, text in files.items():
        (bundle / name).write_text(text, encoding="utf-8")
    return analyze(bundle)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def claims_without(verdict, sign: str) -> bool:
    """The verdict does not rest on `sign`: unknown, or claimed on the timeouts' own two signs
    (every rank timed out at the same logged step: timeout.all_ranks + timeout.ranks_level)."""
    if any(sign in line for line in verdict.trace if "rests on" in line):
        return False
    return verdict.cause == "unknown" or any(
        "rests on 2 independent weak signs: timeout.all_ranks, timeout.ranks_level" in line for line in verdict.trace)
