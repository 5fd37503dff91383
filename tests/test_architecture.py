"""docs/architecture.md stays true.

1. The "add a format" recipe, followed on a toy format: a grammar file, a parser module
   (found by the parser registry's discovery), a [kind.*] entry in the signal registry,
   then a toy file fed through the real pipeline (`postmortem.run.analyze`) on a bundle
   in a temporary folder.  The toy format and its file are generated at test time and are
   marked as such: they stand for no real program's output.
2. Every file path the document names exists in the checkout.
"""
from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

from postmortem import grammar, knowledge, parsers, run
from postmortem.knowledge import registry as reg
from postmortem.model import Basis, Severity

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"

# Step 1 of the recipe: grammars/<name>.lark (here in a temporary grammars/ folder).
TOY_GRAMMAR = r"""
// A toy format made up for tests/test_architecture.py (not any real program's output):
//   TOYBEACON 2026-03-04T05:06:07Z node=3 state=down
start: "TOYBEACON" STAMP "node=" INT "state=" WORD
STAMP: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/
%import common.INT
%import common.WORD
%import common.WS
%ignore WS
"""

# Step 2 of the recipe: postmortem/parsers/<name>.py (here in a temporary folder of the package).
TOY_PARSER = '''
"""Toy beacon lines (made up for tests/test_architecture.py)."""
from __future__ import annotations

import re
from datetime import datetime, timezone

from lark.exceptions import LarkError

from postmortem import grammar
from postmortem.model import ClockKind, Severity, Stamp
from postmortem.parsers.base import Line, LineParser

PREFILTER = re.compile(r"^TOYBEACON ")


class ToyParser(LineParser):
    name = "toy"
    prefilter = PREFILTER

    def feed(self, line: Line) -> bool:
        try:
            tree = grammar.load("toy").parse(line.text)
        except LarkError:
            return False
        stamp_text, node, state = (str(t) for t in tree.children)
        wall = datetime.strptime(stamp_text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        severity = Severity.ERROR if state == "down" else Severity.INFO
        self.sink.event(line, "toy.beacon", severity, stamp=Stamp(ClockKind.WALL, wall=wall),
                        node=int(node), state=state)
        return True
'''

# Step 3 of the recipe: the kind's entry in postmortem/knowledge/signals.toml.
TOY_KIND = '''
[kind."toy.beacon"]
producer = "parser:toy"
fields = ["node", "state"]
doc = "a toy beacon: `node` (int), `state` (up, down)"
provenance = "made up for tests/test_architecture.py"
'''

# The toy file (generated here, marked as such), mixed with a real NCCL line (verbatim from
# fixtures/validation16/iommu-acs-hang-a6000-tp2-vllm-01/bundle/vllm.log) so the dispatcher
# must split the file between the toy parser and a built-in one.
NCCL_LINE = ("HP-Z8-Fury-G5-Workstation-Desktop-PC:23458:23665 [0] NCCL INFO comm 0x23ba7ea0 rank 0 nranks 2 "
             "cudaDev 0 nvmlDev 0 busId 47000 commId 0x47dc53f08cbcda96 - Init COMPLETE")
TOY_LOG = f"""\
TOYBEACON 2026-03-04T05:06:07Z node=3 state=up
{NCCL_LINE}
TOYBEACON 2026-03-04T05:06:09Z node=3 state=down
TOYBEACON this line passes the prefilter but not the grammar
"""


def _follow_the_recipe(tmp_path: Path, monkeypatch) -> None:
    grammars = tmp_path / "grammars"
    grammars.mkdir()
    (grammars / "toy.lark").write_text(TOY_GRAMMAR, encoding="utf-8")
    real_text = grammar.grammar_text
    monkeypatch.setattr(grammar, "grammar_text",
                        lambda name: (grammars / f"{name}.lark").read_text(encoding="utf-8")
                        if (grammars / f"{name}.lark").is_file() else real_text(name))
    # The parser module goes into the parsers package (a temporary folder added to its path);
    # the registry finds it there: no list to edit.
    package = tmp_path / "parsers"
    package.mkdir()
    (package / "toy.py").write_text(TOY_PARSER, encoding="utf-8")
    monkeypatch.setattr(parsers, "__path__", [*parsers.__path__, str(package)])
    monkeypatch.delitem(sys.modules, "postmortem.parsers.toy", raising=False)
    monkeypatch.setattr(parsers, "PARSERS", parsers.discover())
    assert "toy" in [cls.name for cls in parsers.PARSERS]


def _gen(name: str):
    """One of the doc generators under tools/docs/, loaded as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_formats_index_of_docs_formats_md_is_current():
    gen = _gen("gen_formats_md")
    current = gen.FORMATS_MD.read_text(encoding="utf-8")
    assert gen.render(current, parsers.PARSERS) == current, "run python tools/docs/gen_formats_md.py"


def _forget_the_toy() -> None:
    sys.modules.pop("postmortem.parsers.toy", None)
    if hasattr(parsers, "toy"):
        delattr(parsers, "toy")


def test_add_a_format_recipe_puts_the_toy_events_on_the_timeline(tmp_path, monkeypatch):
    _follow_the_recipe(tmp_path, monkeypatch)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "toy.log").write_text(TOY_LOG, encoding="utf-8")
    grammar.load.cache_clear()
    try:
        analysis = run.analyze(bundle)
        # docs/formats.md's row for it is written from its module docstring, not by hand
        formats_row = _gen("gen_formats_md").table(parsers.PARSERS, tmp_path)
    finally:
        grammar.load.cache_clear()   # the toy grammar must not outlive this test
        _forget_the_toy()

    toys = [e for e in analysis.case.events if e.kind == "toy.beacon"]
    assert [(e.data["node"], e.data["state"], e.severity) for e in toys] == [
        (3, "up", Severity.INFO), (3, "down", Severity.ERROR)]
    assert [e.ref.describe() for e in toys] == ["toy.log:1", "toy.log:3"]
    # The timeline placed them on the absolute axis from the printed UTC time.
    assert all(e.when is not None and e.when.basis is Basis.MEASURED for e in toys)
    assert (toys[1].when.at - toys[0].when.at).total_seconds() == 2
    # The built-in NCCL parser still read its line of the same file.
    assert any(e.kind == "nccl.init" and e.ref.line == 2 for e in analysis.case.events)
    assert ("| `toy` | `postmortem/parsers/toy.py` | `grammars/toy.lark` |  | "
            "Toy beacon lines (made up for tests/test_architecture.py). |") in formats_row
    artifact = next(a for a in analysis.case.artifacts if a.path == "toy.log")
    assert {"toy", "nccl"} <= set(artifact.parsers)
    assert artifact.unclaimed == 1   # line 4: our prefilter took it, our grammar did not


def test_add_a_format_recipe_kind_entry_is_a_valid_registry_entry():
    real = tomllib.loads((ROOT / "postmortem" / "knowledge" / "signals.toml").read_text(encoding="utf-8"))
    toy = tomllib.loads(TOY_KIND)
    merged = {**real, "kind": {**real.get("kind", {}), **toy["kind"]}}
    loaded = reg.parse_signals(merged, knowledge.load().causes)
    assert loaded.signals["toy.beacon"].producer == "parser:toy"
    assert loaded.signals["toy.beacon"].fields == ("node", "state")
    assert "toy.beacon" not in reg.registry().signals   # the test left the real registry alone
    # docs/kinds.md's row for it is written by tools/docs/gen_kinds_md.py, not by hand
    gen = _gen("gen_kinds_md")
    assert "| `toy.beacon` | toy |  | `node`, `state` | a toy beacon: `node` (int), `state` (up, down) |" \
        in gen.table(merged)


_PATH = re.compile(r"`((?:postmortem|grammars|tests|docs|fixtures|tools|bench)/[^`\s]*)`")


def test_every_path_named_in_the_architecture_doc_exists():
    named = set(_PATH.findall(DOC.read_text(encoding="utf-8")))
    assert len(named) > 30
    missing = []
    for p in sorted(named):
        p = p.split("::")[0].rstrip(".,:;)")
        if "<" in p:          # a placeholder such as parsers/<name>.py: its folder must exist
            p = p[: p.index("<")].rsplit("/", 1)[0]
        if any(c in p for c in "*?["):
            if not list(ROOT.glob(p)):
                missing.append(p)
        elif not (ROOT / p).exists():
            missing.append(p)
    assert not missing, f"docs/architecture.md names paths that do not exist (update the doc): {missing}"


def test_the_parser_registry_is_discovered_in_order():
    """PARSERS is every parser module's class, ordered by `order`; nothing is listed by hand."""
    names = [cls.name for cls in parsers.PARSERS]
    assert len(names) == len(set(names)) >= 10
    assert [cls.order for cls in parsers.PARSERS] == sorted(cls.order for cls in parsers.PARSERS)
    # the order that matters: NCCL and kernel lines before the block parsers, tracebacks after
    # the launcher (its ChildFailedError lines), the catch-all system facts late
    assert names.index("nccl") < names.index("kernel") < names.index("faulthandler") < names.index("pytrace")
    assert names.index("launcher") < names.index("pytrace") < names.index("system")
    assert parsers.discover() == parsers.PARSERS
