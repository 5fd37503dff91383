import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = FIXTURES / "corpus"


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    """Run `python -m postmortem ARGS` as a subprocess, the way users do."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "postmortem", *args], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def analyze_json(bundle: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "v.json"
    r = run_cli("analyze", str(bundle), "--json", str(out), "--html", str(tmp_path / "r.html"), *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


@pytest.fixture
def corpus_cases():
    return sorted(p.parent for p in CORPUS.glob("*/truth.json"))
