"""Audit 12 H1, L1 (app.exception_every_rank): the sign's set-asides read every link of an
exception's chain and any OSError class; a verdict resting on it speaks of every rank.

REAL: fixtures/lab/audit12/hub-unreachable (the auditor's probe: every rank's huggingface_hub
download on a node with no route out, httpcore2.ConnectError '[Errno -3] ...' -> LocalEntryNotFoundError),
fixtures/lab/output/lab-through-* (fixtures/lab/rank_raises_through.sh)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem.knowledge import catalog
from postmortem.parsers.wrappers import strip
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
HUB = ROOT / "fixtures/lab/audit12/hub-unreachable/bundle/torchrun.log"
OUT = ROOT / "fixtures/lab/output"


def _analysis(tmp_path: Path, text: str, name: str = "torchrun.log", folder: str = "bundle"):
    bundle = tmp_path / folder
    bundle.mkdir()
    (bundle / name).write_text(text, encoding="utf-8")
    return analyze(bundle)


def _every_rank(v) -> bool:
    return any("raised the same exception" in line for line in v.trace)


def test_every_rank_failing_to_reach_the_hub_is_not_the_programs_failure(tmp_path):
    text = HUB.read_text(encoding="utf-8")
    assert text.count("huggingface_hub.errors.LocalEntryNotFoundError: ") == 2
    a = _analysis(tmp_path, text)
    v = a.verdict
    assert not _every_rank(v)
    assert v.cause != "app_error" and v.confidence < 0.35
    # the chain's earlier links are read, ranks kept (a module name with a digit is no pdsh host)
    links = [(e.rank, e.data["type"]) for e in a.case.events if e.kind == "py.exception"]
    assert (0, "httpcore2.ConnectError") in links and (1, "httpx2.ConnectError") in links


def test_the_wrapper_alone_is_an_oserror_class_without_an_errno(tmp_path):
    # Edited at test time: the earlier links cut, so only the wrapper's class says what failed.
    lines = HUB.read_text(encoding="utf-8").splitlines()
    kept, skip = [], 0
    for ln in lines:
        if "ConnectError: [Errno -3]" in ln:
            skip = 4   # the link, its blank line, the marker and its blank line
        if skip:
            skip -= 1
            continue
        kept.append(ln)
    text = "\n".join(kept) + "\n"
    assert "ConnectError" not in text and not any(ln.startswith("[rank") and "[Errno" in ln for ln in kept)
    v = _analysis(tmp_path, text).verdict
    assert not _every_rank(v) and v.cause != "app_error"
    assert "huggingface_hub.errors.LocalEntryNotFoundError" in catalog.os_error_classes()


def test_an_errno_in_an_earlier_link_sets_the_program_reading_aside(tmp_path):
    # Edited at test time: each rank's checkpoint error chained from an I/O error, as a library
    # wrapping a failed read prints it.  Without the link (the landed fixture) the sign fires.
    text = (OUT / "lab-through-corrupt_all" / "console.log").read_text(encoding="utf-8")
    assert _every_rank(_analysis(tmp_path, text, "console.log", "plain").verdict)
    out = []
    for ln in text.splitlines():
        for r in ("0", "1"):
            if ln.startswith(f"[rank{r}]: Traceback (most recent call last):"):
                out += [f"[rank{r}]: OSError: [Errno 5] Input/output error", "",
                        f"[rank{r}]: The above exception was the direct cause of the following exception:", ""]
        out.append(ln)
    v = _analysis(tmp_path, "\n".join(out) + "\n", "console.log").verdict
    assert not _every_rank(v) and v.cause != "app_error"


def test_every_rank_alike_speaks_of_every_rank_and_one_rank_of_one():
    alike = analyze(OUT / "lab-through-corrupt_all").verdict
    assert alike.cause == "app_error" and _every_rank(alike)
    assert alike.title == "The job's own code failed alike on every rank" and "one rank" not in alike.summary.split(":")[0]
    one = analyze(OUT / "lab-through-static_graph").verdict
    assert one.cause == "app_error"
    if not _every_rank(one):
        assert one.title == "The job's own code failed on one rank"


@pytest.mark.parametrize("name,cause", [
    ("lab-through-corrupt_all", "app_error"), ("lab-through-mmap_legacy", "app_error"),
    ("lab-through-static_graph", "app_error"), ("lab-through-unused", "app_error"),
    ("lab-through-peer_killed", "unknown"), ("lab-through-readonly", "unknown"),
    ("lab-through-cuda_on_cpu", "unknown"), ("lab-through-corrupt_one", "unknown"),
])
def test_the_landed_fixtures_keep_their_readings(name, cause):
    assert analyze(OUT / name).verdict.cause == cause


def test_an_exception_name_with_a_digit_is_no_host_prefix():
    assert strip("urllib3.exceptions.NewConnectionError: boom")[2] is None
    assert strip("[rank1]: httpcore2.ConnectError: [Errno -3] x")[1:3] == (1, None)
    assert strip("node12: hello")[2] == "node12"


def test_the_os_error_classes_are_what_the_generator_prints_for_its_python():
    data = json.loads((ROOT / "postmortem/knowledge/catalogs/python_exceptions.json").read_text(encoding="utf-8"))
    if data["version"].rsplit(".", 1)[0] != f"{sys.version_info.major}.{sys.version_info.minor}":
        pytest.skip(f"generated with Python {data['version']}")
    out = json.loads(subprocess.run([sys.executable, str(ROOT / "tools/catalogs/gen_python_exceptions.py")],
                                    capture_output=True, text=True, check=True).stdout)
    libraries = tuple(data["os_error_libraries"])
    stdlib = {k: v for k, v in data["os_error_classes"].items() if not k.startswith(libraries)}
    assert {k: v for k, v in out["os_error_classes"].items() if not k.startswith(libraries)} == stdlib
    assert {"FileNotFoundError", "socket.gaierror", "urllib.error.URLError"} <= set(stdlib)
    assert "ValueError" not in catalog.os_error_classes()
