"""What a start costs is mostly what it imports (issue 17; the figures are bench/startup_bench.py's).
These check the structure that keeps it small, in fresh processes: heavy modules are imported
only when a run needs them."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem.packaged import packaged
from postmortem.report import html

ROOT = Path(__file__).resolve().parent.parent
NCCL_LINE = "node000:10000:10007 [0] NCCL INFO Bootstrap : Using [0]eth1:9.73.133.81<0>\n"


def _modules_after(tmp_path: Path, *argv: str) -> set[str]:
    code = ("import json, sys\nfrom postmortem.cli import main\nrc = main(sys.argv[1:])\n"
            "print(json.dumps([rc, sorted(sys.modules)]))")
    r = subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rc, modules = json.loads(r.stdout.splitlines()[-1])
    assert rc == 0
    return set(modules)


def test_help_imports_no_dataclasses_and_no_analysis(tmp_path):
    loaded = _modules_after(tmp_path, "--help")
    assert not loaded & {"dataclasses", "postmortem.run", "postmortem.model", "lark", "jinja2", "rich"}


def test_a_one_line_analysis_imports_no_archive_reader_template_engine_or_unneeded_parser(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "nccl.log").write_text(NCCL_LINE)
    loaded = _modules_after(tmp_path, "analyze", "b", "--html", "-", "--json", "v.json", "-q")
    assert "postmortem.parsers.nccl" in loaded
    unneeded = {"tarfile", "zipfile", "gzip", "importlib.resources", "jinja2", "rich", "dateutil", "elftools",
                "multiprocessing",   # only for big bundles (parallel.py) and big files (ranges.py)
                "tomllib", "postmortem.bundle.tar", "postmortem.bundle.zip",
                "postmortem.report.timeline_view"}   # the HTML and terminal views' lanes and marks
    from postmortem import parsers

    if parsers._index() is not None:   # (an index made by another Python version is not used)
        unneeded |= {"postmortem.parsers.kernel", "postmortem.parsers.launcher", "postmortem.parsers.gdb",
                     "postmortem.parsers.system", "lark"}   # the line takes a regex fast path, not the grammar
    assert not loaded & unneeded, sorted(loaded & unneeded)


def test_the_html_report_loads_precompiled_templates(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "nccl.log").write_text(NCCL_LINE)
    if html.compiled_templates() is None:
        pytest.skip("templates compiled by another jinja2 version: compiled at run time")
    loaded = _modules_after(tmp_path, "analyze", "b", "--html", "r.html", "-q")
    # jinja2's ModuleLoader imports the compiled templates from a package of its own
    assert any(m.startswith("_jinja2_module_templates_") for m in loaded)
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!doctype html>")


def test_packaged_files_are_the_package_data_importlib_resources_names():
    from importlib import resources

    for package, parts in (("postmortem.knowledge", ("causes.toml",)), ("postmortem", ("grammar_tables", "nccl.json")),
                           ("postmortem.report", ("templates", "report.html.j2"))):
        ours = packaged(package, *parts)
        assert isinstance(ours, Path)
        assert ours.read_bytes() == resources.files(package).joinpath(*parts).read_bytes()
