"""The built wheel carries everything: grammars (top-level in the checkout), knowledge,
frame lists and templates, and works when installed away from the checkout."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = out.glob("postmortem-*.whl")
    return whl


def test_wheel_contains_grammars_and_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    grammars = {p.name for p in (ROOT / "grammars").glob("*.lark")}
    assert grammars and {f"postmortem/grammars/{g}" for g in grammars} <= names
    for data in ("postmortem/knowledge/causes.toml", "postmortem/knowledge/xid.toml",
                 "postmortem/knowledge/messages.toml", "postmortem/knowledge/frames/irrelevant.txt",
                 "postmortem/grammar_tables/nccl.json", "postmortem/report/templates/report.html.j2",
                 "postmortem/triage/templates/index.html.j2", "postmortem/knowledge/prepared.json",
                 "postmortem/parsers/index.json", "postmortem/report/templates_compiled/manifest.json"):
        assert data in names, data


def test_installed_wheel_runs_from_another_directory(wheel, tmp_path):
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target),
                        str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target), "NO_COLOR": "1"}
    # Every grammar is read from the installed package (importlib.resources), and every
    # parser module that builds one imports.
    probe = ("import postmortem, postmortem.grammar as g, postmortem.parsers; print(postmortem.__file__); "
             "[g.grammar_text(n) for n in g.grammar_names()]; print(len(g.grammar_names()))")
    r = subprocess.run([sys.executable, "-c", probe], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    where, count = r.stdout.split()
    assert where.startswith(str(target)) and int(count) == len(list((ROOT / "grammars").glob("*.lark")))
    # The build-time files are current in the installed package too, so its starts are fast.
    probe = ("from postmortem import knowledge, parsers; from postmortem.report import html; "
             "print(all(knowledge.prepared_entry(n) is not None for n in knowledge.SOURCES), "
             "parsers._index() is not None, html.compiled_templates() is not None)")
    r = subprocess.run([sys.executable, "-c", probe], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True"]
    bundle = ROOT / "fixtures/corpus/xid79-fell-off-bus-01/bundle"
    r = subprocess.run([sys.executable, "-m", "postmortem", "analyze", str(bundle), "--json", "-"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"]["cause"] == "gpu_fell_off_bus"
    assert (work / "reports" / "xid79-fell-off-bus-01.html").is_file()   # <case>/bundle/ is named after the case
