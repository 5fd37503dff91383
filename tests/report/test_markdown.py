"""Markdown for a ticket: short, and bundle text cannot become markup."""
from __future__ import annotations

import pytest

from postmortem.report import markdown
from postmortem.report.text import markdown_code, markdown_text
from tests.report.reports import BUNDLES, analysis


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_fits_a_ticket(name):
    text = markdown.render(analysis(name))
    assert len(text) <= markdown.MAX_CHARS
    v = analysis(name).verdict
    assert text.startswith(f"## postmortem: {v.category.value} / `{v.cause}`")
    # The ticket leads with the facts a reader looks for first, before any evidence.
    facts = text.split("\n\n")[2]
    assert "**host**" in facts and "**crash time**" in facts and "**bundle**" in facts
    assert "Signature:" in text


def test_injection_stays_inside_code_spans():
    text = markdown.render(analysis("injection"))
    assert "\x1b" not in text
    for line in text.splitlines():
        if "<img" in line or "<script" in line:
            # Raw markup may appear only inside a code span.
            outside = line.split("`")[::2]
            assert not any("<img" in part or "<script" in part for part in outside), line


def test_code_span_keeps_backticks_verbatim():
    assert markdown_code("a `b` c") == "`` a `b` c ``"
    assert markdown_code("plain") == "`plain`"


def test_prose_escapes_active_characters():
    assert markdown_text("**x** [a](http://e) <b> |t| #h") == r"\*\*x\*\* \[a\](http\://e) \<b\> \|t\| \#h"
    assert markdown_text("- item") == r"\- item"
    assert markdown_text("1. item") == r"1\. item"
