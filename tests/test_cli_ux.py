"""What an on-call engineer meets at the terminal (issue 16), as subprocesses."""
from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS, FIXTURES, ROOT, run_cli

DEMO = FIXTURES / "demo" / "bundle"
CORES = FIXTURES / "cores"
OOM = FIXTURES / "bundles" / "lab-torchrun-oom-cgroup"


def _analyze(bundle, tmp_path, *extra, env=None):
    return _analyze_to(bundle, tmp_path / "r.html", *extra, env=env)


def _analyze_to(bundle, html, *extra, env=None):
    r = run_cli("analyze", str(bundle), "--html", str(html), *extra, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_terminal_shows_the_failing_stack_and_ends_with_verdict_and_report(tmp_path):
    out = _analyze(CORES, tmp_path)
    assert "Failing stack" in out and re.search(r"^  #0 \S", out, re.M)
    last = out.rstrip("\n").splitlines()[-1]
    assert re.fullmatch(rf"CONFIG shm_exhausted \(0\.\d\d\)( on rank \d+)? · report: {re.escape(str(tmp_path))}/r\.html", last)


def test_quiet_prints_one_verdict_line(tmp_path):
    out = _analyze(DEMO, tmp_path, "-q")
    assert out.splitlines() == [f"CONFIG shm_exhausted (0.40) on rank 1 · report: {tmp_path}/r.html"]


def test_readme_shows_what_the_demo_prints(tmp_path):
    """README's first command and its printed output stay true: every line of the block that is
    not an elision (…) is a line `postmortem analyze fixtures/demo/bundle` prints at 90 columns,
    in the same order, and the last line is the verdict line."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("$ postmortem analyze fixtures/demo/bundle\n", 1)[1].split("```", 1)[0]
    shown = [line.rstrip() for line in block.splitlines() if line.strip() != "…"]
    html = tmp_path / "reports" / "demo.html"
    out = [line.rstrip() for line in _analyze_to(DEMO, html, env={"COLUMNS": "90"}).splitlines()]
    assert shown[-1] == out[-1].replace(str(html), "reports/demo.html")
    at = 0
    for line in shown[:-1]:
        assert line in out[at:], f"README line not printed (in order): {line!r}"
        at = out.index(line, at) + 1


def test_commands_are_not_wrapped_and_backticks_not_shown_at_80_columns(tmp_path):
    out = _analyze(DEMO, tmp_path, env={"COLUMNS": "80"})
    lines = out.splitlines()
    assert "  $ docker inspect --format '{{.HostConfig.ShmSize}} {{.HostConfig.IpcMode}}' \"$CONTAINER\"" in lines
    assert not any("`" in line for line in lines)


def test_table_cells_are_not_broken_inside_a_word(tmp_path):
    out = _analyze(CORES, tmp_path, env={"COLUMNS": "80"})
    assert "segv-accerr.core.gz@0x7b8" in out or "segv-accerr.core.gz@…" in out
    assert not re.search(r"@0x7\s*│\s*\n", out)


def test_headline_says_what_happened_in_words_not_ids(tmp_path):
    out = _analyze(OOM, tmp_path, "--json", str(tmp_path / "v.json"))
    v = json.loads((tmp_path / "v.json").read_text())["verdict"]
    assert v["title"] == "Host memory exhausted (OOM killer)"
    assert "matching '" not in v["summary"] and "oom_killer" not in v["summary"]
    assert v["summary"].count(v["title"]) == 1
    assert "Killed process" in out.split("Failing stack")[0].split("Fix")[0]


def test_demo_headline_does_not_repeat_itself(tmp_path):
    _analyze(DEMO, tmp_path, "--json", str(tmp_path / "v.json"))
    summary = json.loads((tmp_path / "v.json").read_text())["verdict"]["summary"]
    assert "SIGBUS: the SIGBUS" not in summary and summary.count("SIGBUS") <= 2


def test_separator_lines_are_never_root_evidence(tmp_path):
    # a UCX backtrace block (its `==== backtrace` header) and a faulthandler dump (its
    # `(most recent call first)` header): the real stderr of msr-fiddle/pipedream#76 and the demo
    for bundle in (CORPUS / "shm-nccl-sigbus-ucx-06" / "bundle", DEMO):
        _analyze(bundle, tmp_path, "--json", str(tmp_path / "v.json"))
        v = json.loads((tmp_path / "v.json").read_text())["verdict"]
        texts = [e["text"] for e in v["evidence"]] + [r["text"] for f in v["alternatives"] for r in f.get("evidence", ())]
        assert texts and not any("==== backtrace" in t or "most recent call first" in t for t in texts), bundle


def test_identical_evidence_lines_are_listed_once_with_a_count():
    from postmortem.model import Ref
    from postmortem.report.terminal import evidence_lines

    refs = tuple(Ref(path="a.log", line=n, text="NCCL WARN same") for n in (3, 7, 9)) + (Ref("b.log", 1, text="x"),)
    assert evidence_lines(refs) == [("a.log:3", "NCCL WARN same", 3), ("b.log:1", "x", 1)]


def test_broken_pipe_is_quiet(tmp_path):
    """`analyze ... | head -2`: the reader is gone before the verdict is printed."""
    p = subprocess.Popen([sys.executable, "-m", "postmortem", "analyze", str(DEMO), "--html", str(tmp_path / "r.html")],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "NO_COLOR": "1"})
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) in (0, 141)
    assert "internal error" not in err and "Traceback" not in err and "Exception ignored" not in err


def test_json_and_markdown_both_to_stdout_is_a_usage_error():
    r = run_cli("analyze", str(DEMO), "--json", "-", "--markdown", "-", "--html", "-")
    assert r.returncode == 2 and r.stdout == "" and "--json - and --markdown -" in r.stderr


@pytest.mark.parametrize("command", ["analyze", "triage", "collect", "check", "eval", "explain", "rules"])
def test_every_command_help_has_examples_and_exit_codes(command):
    r = run_cli(command, "--help")
    assert r.returncode == 0
    assert "exit status:" in r.stdout and "examples:" in r.stdout, r.stdout


def test_explain_has_a_description_and_suggests_near_misses():
    assert "Print what the project knows" in run_cli("explain", "--help").stdout
    r = run_cli("explain", "shm")
    assert r.returncode == 2 and "did you mean shm_exhausted" in r.stderr
    r = run_cli("explain", "Xid79")
    assert r.returncode == 0 and r.stdout.startswith("Xid 79 ")
    r = run_cli("explain", "xid:99999")
    assert r.returncode == 2 and "close: xid:" in r.stderr


def test_rules_and_explain_lists_have_column_headers():
    assert run_cli("rules").stdout.splitlines()[0].split() == ["PATTERN", "ROLE", "CAUSE", "WEIGHT"]
    assert run_cli("explain").stdout.splitlines()[0].split() == ["CAUSE", "CATEGORY", "TITLE"]


def test_eval_prints_a_confusion_table_and_refuses_an_empty_folder(tmp_path):
    r = run_cli("eval", str(FIXTURES / "validation2"))
    assert r.returncode == 0
    assert re.search(r"^  expected / got +config +comms +hardware +unknown +total$", r.stdout, re.M)
    assert "{" not in r.stdout
    r = run_cli("eval", str(tmp_path))
    assert r.returncode == 2 and "no case folders" in r.stderr


def test_an_empty_env_txt_is_not_a_problem(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(DEMO, bundle)
    (bundle / "env.txt").write_text("")
    out = _analyze(bundle, tmp_path)
    assert "env.txt" not in out and "Artifact problems" not in out


def test_progress_goes_to_stderr_on_a_terminal_only(tmp_path):
    """A spinner on stderr once the analysis takes longer than the threshold (0 s here)."""
    master, slave = pty.openpty()
    env = {**os.environ, "POSTMORTEM_PROGRESS_AFTER": "0", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    p = subprocess.Popen([sys.executable, "-m", "postmortem", "analyze", str(CORES), "--html", str(tmp_path / "r.html")],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out = p.communicate(timeout=120)[0].decode()
    err = b""
    try:
        while chunk := os.read(master, 65536):
            err += chunk
    except OSError:
        pass
    os.close(master)
    assert p.returncode == 0
    assert b"analysing cores" in err
    assert "analysing" not in out


def test_readme_command_table_names_every_flag_that_exists():
    """The README's command table is true: every option of every command is in its row."""
    from postmortem.cli import _parser

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.index("make demo") < readme.index("make test") < readme.index("## Install")
    rows = {m[1]: m[0] for m in re.finditer(r"^\| `postmortem (\w+)[^|]*(?:\\\|[^|]*)*\|.*$", readme, re.M)}
    sub = next(a for a in _parser()._actions if a.dest == "command")
    for name, parser in sub.choices.items():
        assert name in rows, f"README has no row for {name}"
        for action in parser._actions:
            flags = [f for f in action.option_strings if f != "--help" and f != "-h"]
            if flags:
                assert any(f in rows[name] for f in flags), f"README's {name} row lacks {flags}"


def test_make_demo_installs_only_the_tool():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = re.search(r"^demo: (\S+)", text, re.M)[1]
    assert demo == "$(TOOL)" and "[test]" not in text.split("$(TOOL): ")[1].split("\n\n")[0]
    assert "activate" in text.split("demo:")[1].split("\n\n")[0]


def test_a_case_layout_bundle_names_its_report_after_the_case(tmp_path):
    r = run_cli("analyze", str(OOM / "bundle"), "-q", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("report: reports/lab-torchrun-oom-cgroup.html")
    assert (tmp_path / "reports" / "lab-torchrun-oom-cgroup.html").is_file()
