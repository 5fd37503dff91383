"""Knowledge keeps commands and prose apart: a `commands` entry can be pasted into a shell
as it stands; everything else is a `step` in words."""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import pytest

from postmortem import knowledge

K = knowledge.load()
COMMANDS = [(cid, cmd) for cid, c in sorted(K.causes.items()) for cmd in c.commands]
# Words a sentence starts with, never a program: what prose in a command list looked like.
PROSE_STARTS = {"a", "an", "the", "compare", "rerun", "run", "check", "set", "on", "use", "print"}


@pytest.mark.parametrize("cid,cmd", COMMANDS, ids=[f"{c}:{i}" for i, (c, _) in enumerate(COMMANDS)])
def test_every_command_parses_as_shell_and_is_not_prose(cid, cmd):
    words = shlex.split(cmd)
    assert words and words[0].lower() not in PROSE_STARTS, cmd
    assert not re.search(r"<[a-z][a-z _-]*>", cmd), f"{cid}: placeholder that bash reads as a redirection: {cmd}"
    assert "  " not in cmd and not cmd.rstrip().endswith(")") or "(" in words[-1], f"{cid}: a comment in prose: {cmd}"


@pytest.mark.skipif(not shutil.which("bash"), reason="bash not installed")
def test_every_command_is_valid_bash_syntax():
    bad = [cmd for _, cmd in COMMANDS if subprocess.run(["bash", "-n", "-c", cmd], capture_output=True).returncode]
    assert not bad


def test_every_cause_says_how_to_confirm_it():
    for c in K.causes.values():
        assert c.commands or c.steps, c.id
        assert c.next_steps == c.commands + c.steps


def test_unknown_offers_a_pasteable_collect_command():
    assert "postmortem collect --out bundle.tar.gz" in K.causes["unknown"].commands


def test_older_rule_files_with_next_steps_load_as_prose(tmp_path):
    f = tmp_path / "site.toml"
    f.write_text('[causes.site_psu]\ncategory = "hardware"\ntitle = "PSU"\nexplanation = "' + "x" * 50 + '"\n'
                 'remediation = ["swap PSU"]\nnext_steps = ["look at the PSU LEDs"]\nsource = "site"\n')
    c = knowledge.load((f,)).causes["site_psu"]
    assert c.steps == ("look at the PSU LEDs",) and c.commands == () and c.next_steps == c.steps


def test_a_cause_without_any_confirmation_is_refused(tmp_path):
    f = tmp_path / "site.toml"
    f.write_text('[causes.site_psu]\ncategory = "hardware"\ntitle = "PSU"\nexplanation = "' + "x" * 50 + '"\n'
                 'remediation = ["swap PSU"]\nsource = "site"\n')
    with pytest.raises(knowledge.KnowledgeError, match="commands"):
        knowledge.load((f,))
