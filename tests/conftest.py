import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = FIXTURES / "corpus"

# A fresh clone gives every fixture the clone's time as its mtime, so a test that reads a checkout
# mtime passes only on the day it was written.  Pin every fixture's mtime to one day that is never
# "today" before any test runs: such a test then fails at once, wherever and whenever it runs.
# A test that needs an mtime copies its fixture and sets the time itself (os.utime).
PINNED_FIXTURE_MTIME = 1924992000.0   # 2031-01-01T00:00:00Z


def pytest_sessionstart(session):
    # Likewise the analyst's zone must never leak into a result: unless the caller chose a zone,
    # run in one that is neither UTC nor a whole hour away from it (subprocesses inherit it).
    if "TZ" not in os.environ:
        os.environ["TZ"] = "Asia/Kolkata"
        time.tzset()
    for folder, _dirs, files in os.walk(FIXTURES):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.utime(path, (PINNED_FIXTURE_MTIME, PINNED_FIXTURE_MTIME))


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
