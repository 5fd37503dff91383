"""Output is inert everywhere (issue 19 items 7-8): bundle text never becomes a link, an
image or HTML in Markdown (checked by rendering with markdown-it-py, CommonMark + linkify
as GitHub does), and never carries a control, escape or bidi character to a terminal.

The hostile bundle is generated here at test time (deliberately hostile, not a real crash).
"""
from __future__ import annotations

import dataclasses
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem.model import Ref
from postmortem.report import markdown, render_text, terminal
from postmortem.report.text import markdown_block, markdown_code, markdown_text
from postmortem.run import analyze
from tests.report.reports import analysis

ROOT = Path(__file__).resolve().parents[2]
EVIL_PATH = "/tmp/![x](https://evil.example/p.png)/error.txt"
EVIL_NAME = "<img src=x onerror=alert(1)>.log"
TERMINAL_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Our own HTML in the ticket: the folded symptoms list.
OWN_HTML = re.compile(r"<details><summary>Symptoms \(\d+\)</summary>|</details>")
HOSTILE = ["www.evil.com/a", "https://evil.example/x", "mail me: a@evil.com", "[t](http://evil.example)",
           "![i](http://evil.example/i.png)", "<b>bold</b><script>alert(1)</script>", "`` ` ```",
           "\x1b]0;title\x07\x1b[2J\x9b31m\u202eabc\u2066", "1. list", "# head", "&amp; &#60;"]


def _md():
    pytest.importorskip("linkify_it")
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"linkify": True}).enable("linkify")


def _active(tokens) -> list[str]:
    """Every link, image and HTML piece a Markdown renderer would produce."""
    found = []
    for t in tokens:
        if t.type in ("link_open", "image", "autolink_open"):
            found.append(f"{t.type}: {t.attrs}")
        if t.type in ("html_inline", "html_block") and not OWN_HTML.fullmatch(t.content.strip()):
            found.append(f"{t.type}: {t.content!r}")
        if t.children:
            found.extend(_active(t.children))
    return found


@pytest.fixture(scope="module")
def hostile_bundle(tmp_path_factory) -> Path:
    """A bundle whose launcher names an error file with a Markdown image in its path, in a
    file whose name is raw HTML: the unknown verdict's Collect list quotes both."""
    root = tmp_path_factory.mktemp("hostile") / "node-\x1b[31mred"
    root.mkdir()
    (root / EVIL_NAME).write_text(
        "[2026-11-29 10:00:00,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1)\n"
        f"error_file: {EVIL_PATH}\n"
        "traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n",
        encoding="utf-8")
    return root


def test_collect_list_quotes_the_bundle_and_stays_inert(hostile_bundle):
    a = analyze(hostile_bundle)
    assert any("evil.example" in c for c in a.verdict.collect), "the hostile path must reach the Collect list"
    text = markdown.render(a, report="reports/x.html")
    tokens = _md().parse(text)
    assert _active(tokens) == []
    assert "evil.example" in text          # shown, as text


@pytest.mark.parametrize("payload", HOSTILE)
def test_every_bundle_string_in_the_ticket_is_inert(payload):
    """Summary, counter-evidence, symptoms, collect items, evidence, signature, bundle and
    host names: each carries the payload, none renders as markup."""
    a = analysis("cores")
    v = a.verdict
    root = dataclasses.replace(v.root, evidence=(Ref(path=payload, line=1, text=payload),) * 2,
                               summary=payload)
    v = dataclasses.replace(v, summary=payload, counter_evidence=(payload,), collect=(payload, payload),
                            signature=f"sig2:config:x:{payload}", root=root,
                            symptoms=(dataclasses.replace(root, summary=payload),))
    a = dataclasses.replace(a, verdict=v, case=dataclasses.replace(a.case, name=payload), hosts=(payload,))
    text = markdown.render(a, report=f"reports/{payload}.html")
    assert _active(_md().parse(text)) == [], text
    assert not TERMINAL_BAD.search(text.replace("\n", ""))


def test_a_frame_name_with_backticks_cannot_close_the_signature_span():
    sig = "sig2:app:x:foo`](http://evil.example)`bar|<b>x</b>"
    tokens = _md().parseInline(f"Signature: {markdown_code(sig, 300)}")
    assert _active(tokens) == []
    code = [c for t in tokens for c in (t.children or []) if c.type == "code_inline"]
    assert len(code) == 1 and code[0].content.strip() == sig


def test_fenced_block_is_longer_than_any_backtick_run():
    lines = ["```", "a ```` b", "[x](http://evil.example)"]
    block = markdown_block(lines)
    tokens = _md().parse(block)
    assert [t.type for t in tokens] == ["fence"] and tokens[0].content.splitlines() == lines


def test_prose_escaping_stops_linkify_and_autolinks():
    for payload in HOSTILE + [EVIL_PATH, "see evil.com", "http://a.b/c?d=e"]:
        assert _active(_md().parse(markdown_text(payload))) == [], payload


@pytest.mark.parametrize("payload", HOSTILE)
def test_terminal_strips_controls_from_every_bundle_string(payload):
    a = analysis("cores")
    v = a.verdict
    root = dataclasses.replace(v.root, evidence=(Ref(path=payload, line=1, text=payload),), summary=payload)
    v = dataclasses.replace(v, summary=payload, counter_evidence=(payload,), collect=(payload,), root=root)
    a = dataclasses.replace(a, verdict=v, case=dataclasses.replace(a.case, name=payload), hosts=(payload,))
    for quiet in (False, True):
        out = io.StringIO()
        terminal.render(a, out=out, quiet=quiet, report=f"reports/{payload}.html")
        text = out.getvalue()
        assert not TERMINAL_BAD.search(text.replace("\n", "")), repr(text[-300:])
        assert "report: reports/" in text


def test_cli_report_line_and_markdown_stdout_carry_no_escape(hostile_bundle, tmp_path):
    """The report's file name comes from the bundle's name, which holds ESC [31m."""
    env = {**os.environ, "NO_COLOR": "1"}
    for extra in ([], ["--markdown", "-"]):
        r = subprocess.run([sys.executable, "-m", "postmortem", "analyze", str(hostile_bundle), *extra],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert not TERMINAL_BAD.search(r.stdout.replace("\n", "")), repr(r.stdout[-300:])
        assert re.search(r" · report: reports/node-\S*red\.html$", r.stdout.strip()) or extra


def test_unknown_verdict_copy_buttons_hold_valid_commands(hostile_bundle):
    """What a copy button copies is the <code> text of ul.commands: each must parse as shell."""
    from html.parser import HTMLParser

    a = analyze(hostile_bundle)
    assert a.verdict.cause == "unknown"
    page = render_text("html", a)

    class Commands(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.depth, self.inside, self.found = 0, False, []

        def handle_starttag(self, tag, attrs):
            if tag == "ul" and ("class", "commands") in attrs:
                self.inside = True
            if self.inside and tag == "code":
                self.found.append("")
                self.depth = 1

        def handle_endtag(self, tag):
            if tag == "ul":
                self.inside = False
            if tag == "code":
                self.depth = 0

        def handle_data(self, data):
            if self.inside and self.depth and data:
                self.found[-1] += data

    p = Commands()
    p.feed(page)
    assert p.found == ["postmortem collect --out bundle.tar.gz"]
    for command in p.found:
        shlex.split(command)
        assert subprocess.run(["bash", "-n", "-c", command]).returncode == 0


def test_renderers_are_picked_by_name_from_one_registry():
    from postmortem import report

    a = analysis("cores")
    assert set(report.RENDERERS) >= {"terminal", "json", "markdown", "html"}
    assert render_text("markdown", a) == markdown.render(a)
    assert render_text("json", a).startswith('{\n  "schema": "postmortem.verdict/1"')
    with pytest.raises(KeyError, match="no renderer"):
        report.get("pdf")
