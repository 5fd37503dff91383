"""The HTML report's templates compiled ahead of time (postmortem/report/templates_compiled/,
made by tools/compile_templates.py) are what the templates compile to now: a template edited
without recompiling fails here, and is compiled from its text at run time instead."""
import json
import sys
from pathlib import Path

import jinja2
import pytest

from postmortem.report import html
from postmortem.run import Options, analyze

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import compile_templates  # noqa: E402

REGENERATE = "run python tools/compile_templates.py and commit postmortem/report/templates_compiled/"
MANIFEST = compile_templates.OUT / "manifest.json"
# Compiled by another jinja2: not used there (the report compiles the templates), not checked here.
same_jinja2 = pytest.mark.skipif(MANIFEST.is_file() and json.loads(MANIFEST.read_text())["jinja2"] != jinja2.__version__,
                                 reason="templates compiled by another jinja2 version")


@same_jinja2
def test_compiled_templates_equal_a_fresh_compile(tmp_path):
    assert compile_templates.OUT.is_dir(), f"no precompiled templates: {REGENERATE}"
    compile_templates.build(tmp_path / "fresh")
    assert compile_templates.contents(compile_templates.OUT) == compile_templates.contents(tmp_path / "fresh"), \
        REGENERATE


@same_jinja2
def test_every_template_is_compiled_and_in_use():
    assert html.compiled_templates() == compile_templates.OUT, REGENERATE
    assert isinstance(html._template().environment.loader, jinja2.ModuleLoader)
    modules = {p.name for p in compile_templates.OUT.glob("tmpl_*.py")}
    assert modules == {jinja2.ModuleLoader.get_module_filename(n) for n in html.template_names()}


def test_a_stale_or_foreign_compile_is_not_used(monkeypatch):
    manifest = html.templates_manifest()
    edited = dict(manifest, templates=dict(manifest["templates"], **{"report.html.j2": "0" * 64}))
    monkeypatch.setattr(html, "templates_manifest", lambda: edited)
    assert html.compiled_templates() is None
    monkeypatch.setattr(html, "templates_manifest", lambda: dict(manifest, jinja2="0.0"))
    assert html.compiled_templates() is None
    assert isinstance(html.environment().loader, jinja2.PackageLoader)


@same_jinja2
@pytest.mark.parametrize("case", ["demo/bundle", "bundles/lab-flightrec-hang-stacks/bundle"])
def test_the_compiled_templates_render_what_the_templates_render(case):
    bundle = ROOT / "fixtures" / case
    if not bundle.exists():
        pytest.skip(f"no fixture {case}")
    a = analyze(bundle, Options())
    page = html.page(a, {})
    compiled = html.environment(compiled=True)
    assert isinstance(compiled.loader, jinja2.ModuleLoader), REGENERATE
    from_text = html.environment(compiled=False).get_template("report.html.j2").render(**page)
    assert compiled.get_template("report.html.j2").render(**page) == from_text
    assert "<html" in from_text and a.verdict.cause in from_text
