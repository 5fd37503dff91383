"""The signal registry (knowledge/signals.toml + messages.toml): every id the code reads
is registered, rule code holds no kind, message id, weight or threshold literal, and a
bad registry fails to load naming the entry."""
import ast
import re
from pathlib import Path

import pytest

from postmortem import knowledge
from postmortem.knowledge import registry as reg
from postmortem.parsers import PARSERS, parse_text

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "postmortem"
# Code that reads signals: the classifier, counter-evidence, the timeline, stack code.
READERS = sorted(PKG.glob("classify/**/*.py")) + sorted(PKG.glob("timeline/*.py")) + [PKG / "stacks.py"]
RULE_CODE = sorted(PKG.glob("classify/**/*.py"))
# Any dotted name under a prefix the registered kinds use (nccl., kernel., fr., pyspy. ...).
_PREFIXES = sorted({s.split(".")[0] for s, sig in reg.registry().signals.items() if not sig.producer.startswith("rule:")}
                   | {"torch"})
KIND_LITERAL = re.compile(rf"^(?:{'|'.join(_PREFIXES)})\.[a-z0-9_]+$")
NAMESPACES = {"KIND": reg.KIND, "SIGN": reg.SIGN, "LIMIT": reg.LIMIT, "COUNTER": reg.COUNTER}


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


@pytest.mark.parametrize("path", READERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_registered_name_the_code_uses_exists(path):
    missing = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in NAMESPACES:
            if node.attr not in NAMESPACES[node.value.id].names():
                missing.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
    assert not missing, f"not registered in postmortem/knowledge/signals.toml: {missing}"


def test_the_code_reads_the_registry_at_all():
    used = {n.attr for p in READERS for n in ast.walk(_tree(p))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in NAMESPACES}
    assert {"kernel_xid", "msg_watchdog_timeout", "sigbus_core_in_shm", "before_job_s", "crashed_peer"} <= used


@pytest.mark.parametrize("path", READERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_event_kind_or_message_id_literal_in_code_that_reads_signals(path):
    tree = _tree(path)
    docs = _docstrings(tree)
    message_ids = {m.id for m in knowledge.load().messages}
    bad = [f"{n.value!r} (line {n.lineno})" for n in ast.walk(tree)
           if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
           and (KIND_LITERAL.match(n.value) or n.value in message_ids)]
    assert not bad, f"use KIND.<name> from postmortem.knowledge.registry instead of: {bad}"


@pytest.mark.parametrize("path", RULE_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_weight_or_threshold_literal_in_rule_code(path):
    """Weights and thresholds live in signals.toml with their provenance: a float in rule
    code other than 0 and 1 is one that escaped."""
    bad = [f"{n.value!r} (line {n.lineno})" for n in ast.walk(_tree(path))
           if isinstance(n, ast.Constant) and isinstance(n.value, float) and n.value not in (0.0, 1.0)]
    assert not bad, f"move to signals.toml [threshold.*] / [sign.*]: {bad}"


def test_every_kind_the_parsers_emit_on_the_fixtures_is_registered():
    signals = reg.registry().signals
    seen: dict[str, str] = {}
    # The real bundles, and each parser's own samples: `fixtures/<parser name>/` (discovered, so a
    # new format's folder is read without an edit here).
    folders = ["fixtures/corpus", "fixtures/bundles",
               *(f"fixtures/{cls.name}" for cls in PARSERS if (ROOT / "fixtures" / cls.name).is_dir())]
    assert {"fixtures/kernel", "fixtures/nccl", "fixtures/system", "fixtures/gdb"} <= set(folders)
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in (".log", ".txt", ".out", ".err"):
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
                for e in parse_text(path.name, lines).sink.events:
                    seen.setdefault(e.kind, str(path.relative_to(ROOT)))
    assert len(seen) > 15
    unregistered = {k: where for k, where in seen.items() if k not in signals}
    assert not unregistered, f"register these kinds in postmortem/knowledge/signals.toml: {unregistered}"


def test_every_kind_literal_in_the_parsers_is_registered():
    """Parsers name their kinds as literals (they are the producers); each one is registered."""
    signals = reg.registry().signals
    literal = re.compile(r"""(?:sink\.event\([^,]+,\s*|kind=|\(\(|\),\s*\()["']([a-z]+\.[a-z0-9_]+)["']""")
    found = set()
    for path in sorted((PKG / "parsers").glob("*.py")) + sorted((PKG / "core").glob("*.py")):
        for name in literal.findall(path.read_text(encoding="utf-8")):
            if KIND_LITERAL.match(name):
                found.add(name)
    assert len(found) > 20
    assert not found - set(signals), f"register in postmortem/knowledge/signals.toml: {sorted(found - set(signals))}"


def test_a_process_death_is_defined_once_as_a_role_on_kinds():
    deaths = reg.deaths()
    assert {"py.fatal_signal", "core.signal", "gdb.signal", "native.signal", "launcher.exit", "launcher.child_failed",
            "py.exception", "kernel.oom_kill"} <= deaths
    assert "nccl.warn" not in deaths and "launcher.sigterm" not in deaths
    assert reg.deaths("kernel_kill") >= {"kernel.oom_kill"}
    assert all(reg.registry().signals[k].death for k in deaths)


def test_each_signal_has_one_producer_and_provenance():
    for s in reg.registry().signals.values():
        assert s.producer.split(":")[0] in ("parser", "pattern", "rule"), s.id
        assert s.provenance, s.id
        if s.cause and s.weight > 0:
            assert s.strength in ("strong", "weak"), s.id
        if s.producer.startswith("pattern:"):
            assert s.id.startswith("msg."), s.id


def test_no_message_pattern_reads_a_line_a_parser_already_emits():
    """Where a pattern and a parser both read a line, the pattern went (one producer)."""
    message_ids = {m.id for m in knowledge.load().messages}
    assert not message_ids & {"nvrm_xid", "kernel_segfault", "hung_task", "nccl_version_banner", "caught_signal",
                              "fatal_python_signal", "shell_signal", "spawn_terminated", "c10_terminate",
                              "sigterm_sent", "mpi_exited_on_signal"}


@pytest.mark.parametrize("text,error", [
    ('[kind."x.y"]\nproducer = "parser:x"\n', "provenance is required"),
    ('[kind."x.y"]\nproducer = "rule:x"\nprovenance = "p"\n', "produced by one parser"),
    ('[sign."x.y"]\nproducer = "rule:r"\ncause = "no_such"\nrole = "root"\nstrength = "strong"\nweight = 0.5\n'
     'provenance = "p"\n', "unknown cause 'no_such'"),
    ('[sign."x.y"]\nproducer = "rule:r"\ncause = "host_oom"\nrole = "root"\nweight = 0.5\nprovenance = "p"\n',
     "needs strength"),
    ('[kind."x.y"]\nproducer = "parser:x"\ndeath = "maybe"\nprovenance = "p"\n', "death must be one of"),
    ('[counter.c]\nagainst = "host_oom"\nfactor = 2\nprovenance = "p"\n', "factor in"),
])
def test_a_bad_registry_entry_fails_to_load_naming_it(text, error):
    import tomllib
    with pytest.raises(knowledge.KnowledgeError, match=error):
        reg.parse_signals(tomllib.loads(text), knowledge.load().causes)


def test_an_unknown_name_fails_where_it_is_used():
    with pytest.raises(knowledge.KnowledgeError, match="not registered"):
        _ = reg.KIND.kernel_no_such_kind
    with pytest.raises(knowledge.KnowledgeError, match="not registered"):
        _ = reg.SIGN.no_such_sign


def test_every_mapped_catalog_entry_is_a_registered_signal_with_a_strength():
    from postmortem.knowledge import catalog
    causes = knowledge.load().causes
    n = 0
    for name in ("nccl", "cuda", "nv_status", "pytorch", "kernel", "sxid"):
        _, entries = catalog._catalog(name)
        for e in entries:
            if e.cause in causes and e.strength in reg.CATALOG_STRENGTH:
                s = reg.catalog_signal(e.catalog, e.id, e.cause, e.strength, e.why)
                assert s.strength in ("strong", "weak") and 0 < s.weight < 1 and s.producer == f"catalog:{name}"
                n += 1
    assert n > 100
    with pytest.raises(knowledge.KnowledgeError, match="unknown cause"):
        reg.catalog_signal("nccl", "x", "no_such_cause", "specific", "")


def test_docs_kinds_md_is_what_the_registry_says():
    """docs/kinds.md's event table is written from signals.toml (tools/docs/gen_kinds_md.py)."""
    import importlib.util
    import tomllib

    spec = importlib.util.spec_from_file_location("gen_kinds_md", ROOT / "tools" / "docs" / "gen_kinds_md.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    signals = tomllib.loads((ROOT / "postmortem" / "knowledge" / "signals.toml").read_text(encoding="utf-8"))
    current = (ROOT / "docs" / "kinds.md").read_text(encoding="utf-8")
    assert gen.render(current, signals) == current, \
        "docs/kinds.md is not current: run python tools/docs/gen_kinds_md.py"
    # every parser kind has its row, and says what it is
    parser_kinds = [k for k, e in signals["kind"].items() if e["producer"].startswith("parser:")]
    assert len(parser_kinds) > 40 and all(f"| `{k}` |" in current for k in parser_kinds)
    assert all(signals["kind"][k].get("doc") for k in parser_kinds), "give each [kind.*] entry a doc"


def test_every_report_source_is_a_label_the_report_knows():
    """signals.toml [source] names the report's source label per kind prefix (no code edit)."""
    from postmortem.report import timeline_view

    labels = reg.source_labels()
    assert labels["kernel"] == "kernel" and labels["py"] == "python" and labels["msg"] == "messages"
    assert set(labels.values()) <= set(timeline_view.SOURCES)
    assert timeline_view.source_of("native.signal") == "core"
    assert timeline_view.source_of("fr.created") == "system"   # an unlisted prefix
