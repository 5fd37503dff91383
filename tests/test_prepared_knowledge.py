"""postmortem/knowledge/prepared.json (made by tools/prepare_knowledge.py) is what the TOML
files parse to now: a TOML file edited without regenerating it fails here, and is read from
its text at run time instead of from the stale prepared data."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem import knowledge
from postmortem.knowledge import registry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import prepare_knowledge  # noqa: E402

REGENERATE = "run python tools/prepare_knowledge.py and commit postmortem/knowledge/prepared.json"
STORED = ROOT / "postmortem" / "knowledge" / knowledge.PREPARED


def stored() -> dict:
    assert STORED.is_file(), f"no postmortem/knowledge/prepared.json: {REGENERATE}"
    return json.loads(STORED.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", knowledge.SOURCES)
def test_prepared_data_was_made_from_this_toml_text(name):
    entry = stored()["sources"].get(name)
    assert entry is not None, f"{name} is not in prepared.json: {REGENERATE}"
    assert entry["sha256"] == knowledge.text_digest(knowledge.source_text(name)), f"{name} changed: {REGENERATE}"
    assert entry["data"] == knowledge.parse_toml(name), f"{name}: {REGENERATE}"


def test_prepared_file_equals_a_fresh_run_of_the_tool():
    assert STORED.read_text(encoding="utf-8") == prepare_knowledge.render(), REGENERATE


def test_knowledge_from_the_prepared_file_equals_knowledge_from_the_toml(monkeypatch):
    prepared = knowledge.load()
    assert all(knowledge.prepared_entry(n) is not None for n in knowledge.SOURCES), REGENERATE
    monkeypatch.setattr(knowledge, "prepared_entry", lambda name: None)
    from_toml = knowledge._builtin.__wrapped__()
    assert from_toml.causes == prepared.causes
    assert from_toml.xids == prepared.xids
    assert from_toml.messages == prepared.messages
    # the named groups read from prepared.json are the compiled patterns' own
    assert all(m.fields == tuple(m.regex.groupindex) for m in prepared.messages)
    assert any(m.fields for m in prepared.messages)


def test_a_stale_prepared_entry_is_not_used(monkeypatch):
    """An edit of a TOML file (a new cause, here) is what the tool reads before anyone
    regenerates prepared.json."""
    text = knowledge.source_text("causes.toml")
    edited = text + '\n[edited_here]\ncategory = "config"\ntitle = "t"\nexplanation = "e"\nremediation = ["r"]\n' \
                    'steps = ["s"]\nsource = "test"\n'
    real = knowledge.source_text
    monkeypatch.setattr(knowledge, "source_text", lambda name: edited if name == "causes.toml" else real(name))
    assert knowledge.prepared_entry("causes.toml") is None
    assert "edited_here" in knowledge.source.__wrapped__("causes.toml")
    assert knowledge.prepared_entry("xid.toml") is not None


def test_a_stale_messages_file_is_validated_in_full(monkeypatch):
    """Read from the TOML, every pattern is compiled and matched against its sample again."""
    text = knowledge.source_text("messages.toml")
    bad = text.replace('pattern = \'Too many open files\'', 'pattern = \'Too many open filez\'', 1)
    assert bad != text
    real = knowledge.source_text
    monkeypatch.setattr(knowledge, "source_text", lambda name: bad if name == "messages.toml" else real(name))
    monkeypatch.setattr(knowledge, "source", knowledge.source.__wrapped__)   # uncached
    with pytest.raises(knowledge.KnowledgeError, match="too_many_open_files' does not match its own sample"):
        knowledge._builtin.__wrapped__()


def test_no_message_pattern_is_compiled_before_a_line_needs_it():
    """Loading the knowledge and the registry compiles no pattern; a line compiles only the
    patterns one of whose keywords it carries (a fresh process: nothing cached)."""
    code = """if 1:
        from postmortem import knowledge
        from postmortem.knowledge import registry
        k = knowledge.load(); registry.registry()
        assert knowledge.prepared_entry("messages.toml") is not None
        assert not knowledge._COMPILED, sorted(knowledge._COMPILED)
        from postmortem.parsers.base import Line, Sink
        from postmortem.parsers.messages import MessageMatcher
        m = MessageMatcher("x.log", Sink(), k)
        line = "RuntimeError: Too many open files. Communication with the workers is no longer possible."
        assert m.feed(Line("x.log", 1, line, line))
        want = {p.pattern for p in k.messages if any(kw in line for kw in p.keywords)}
        assert set(knowledge._COMPILED) == want, (sorted(knowledge._COMPILED), sorted(want))
        print(len(want))
    """
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) >= 1


def test_registry_fields_of_message_signals_are_the_pattern_groups():
    for m in knowledge.load().messages:
        assert registry.registry().signals[f"msg.{m.id}"].fields == tuple(m.regex.groupindex)
