"""The prebuilt LALR tables (postmortem/grammar_tables/, made by tools/grammar_tables.py)
are what the grammars produce now: a grammar edited without regenerating its table fails
here, and is built from its text at run time instead of using the stale table."""
import json
import sys
from pathlib import Path

import lark
import pytest

from postmortem import grammar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import grammar_tables  # noqa: E402

NAMES = grammar.grammar_names()
TABLES = ROOT / "postmortem" / grammar.TABLES
REGENERATE = "run python tools/grammar_tables.py and commit postmortem/grammar_tables/"
SAME_LARK = {name: (TABLES / f"{name}.json").is_file()
             and json.loads((TABLES / f"{name}.json").read_text())["lark"] == lark.__version__ for name in NAMES}


def stored(name: str) -> dict:
    path = TABLES / f"{name}.json"
    assert path.is_file(), f"grammars/{name}.lark has no prebuilt table: {REGENERATE}"
    return json.loads(path.read_text(encoding="utf-8"), object_hook=grammar.decode_object)


def test_every_grammar_has_a_table_per_start_rule():
    tables = {p.stem for p in TABLES.glob("*.json")}
    assert set(NAMES) <= tables, f"no table for {sorted(set(NAMES) - tables)}: {REGENERATE}"
    assert tables <= set(NAMES), f"tables of grammars that are gone: {sorted(tables - set(NAMES))}"
    for name in NAMES:
        assert sorted(stored(name)["starts"]) == grammar_tables.start_rules(name), name


@pytest.mark.parametrize("name", NAMES)
def test_table_was_made_from_this_grammar_text(name):
    """The digest is over the exact text: any edit of the .lark file fails this until
    `python tools/grammar_tables.py` is run."""
    assert stored(name)["grammar_sha256"] == grammar.text_digest(grammar.grammar_text(name)), \
        f"grammars/{name}.lark changed: {REGENERATE}"


@pytest.mark.parametrize("name", NAMES)
def test_table_equals_a_fresh_build_of_the_grammar(name):
    if not SAME_LARK[name]:
        pytest.skip(f"tables made by another lark than {lark.__version__}: the grammar is built at run time")
    table = stored(name)
    for start in grammar_tables.start_rules(name):
        fresh = grammar_tables.serialize(grammar.build(name, start))
        assert fresh == table["starts"][start], f"{name}.lark start {start}: {REGENERATE}"


def test_the_parser_in_use_comes_from_the_table_and_a_stale_table_is_not_used(monkeypatch):
    if not SAME_LARK["nccl"]:
        pytest.skip("tables made by another lark version")
    assert grammar.prebuilt("nccl", "start") is not None
    assert grammar.prebuilt("nccl", "no_such_rule") is None
    edited = grammar.grammar_text("nccl") + "\n// an edit\n"
    monkeypatch.setattr(grammar, "grammar_text", lambda name: edited)
    assert grammar.prebuilt("nccl", "start") is None


def _shape(node):
    """A tree as plain data.  (A built parser names trees with lark Tokens, a loaded one
    with plain strings; they compare equal, only their repr differs.)"""
    if isinstance(node, lark.Tree):
        return str(node.data), [_shape(c) for c in node.children]
    return node.type, str(node), node.start_pos, node.end_pos


def _outcome(parser, text: str):
    try:
        return _shape(parser.parse(text))
    except lark.exceptions.UnexpectedInput as exc:
        return type(exc).__name__, exc.line, exc.column
    except lark.exceptions.LarkError as exc:
        return type(exc).__name__


@pytest.mark.parametrize("name", NAMES)
def test_loaded_parser_answers_like_the_built_one_on_fixture_lines(name):
    """Belt and braces: lines of fixtures/<name>/ (and of the NCCL fixtures' messages)
    gets the same tree, or the same error at the same place, from both parsers."""
    if not SAME_LARK[name]:
        pytest.skip("tables made by another lark version")
    folder = ROOT / "fixtures" / name
    if not folder.is_dir():   # formats read from collect's files (cgroup, proclimits) live with system's
        folder = ROOT / "fixtures" / "system"
    lines = {line.strip() for p in sorted(folder.rglob("*")) if p.is_file()
             for line in p.read_text(errors="replace").splitlines() if line.strip()}
    if name == "nccl":
        lines |= {line.split(" NCCL ", 1)[1].split(" ", 1)[-1] for line in list(lines) if " NCCL " in line}
    assert lines
    for start in grammar_tables.start_rules(name):
        table = stored(name)["starts"][start]
        loaded = lark.Lark._load_from_dict(table["data"], table["memo"])
        built = grammar.build(name, start)
        for text in sorted(lines)[:400]:
            assert _outcome(loaded, text) == _outcome(built, text), (name, start, text)
