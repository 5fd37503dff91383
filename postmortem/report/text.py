"""Helpers shared by the renderers: making bundle text safe to show.

Everything a bundle holds (log lines, file names, host names) is hostile until shown
otherwise.  HTML gets it through jinja2's autoescape; terminals and Markdown get it
through the functions here.
"""
from __future__ import annotations

import re

# CSI/OSC/other escape sequences, C0 controls (tab and newline excepted) and the 8-bit
# C1 controls (0x9b is a one-byte CSI on some terminals) must never reach a terminal.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"            # CSI: colours, cursor moves, clear screen
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window title, hyperlinks (cut even if unterminated)
    r"|\x1b[@-Z\\-_]"                     # other two-byte escapes
    r"|\x1b"                              # a lone ESC left over
    r"|[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
# Bidirectional controls and marks can make a line read differently from what it holds.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def strip_escapes(text: str) -> str:
    return _BIDI.sub("", _ESCAPES.sub("", text))


def one_line(text: str) -> str:
    """Bundle text for a single display line: escapes stripped, line breaks made visible."""
    return strip_escapes(text.replace("\r\n", "\n")).replace("\n", " ⏎ ").replace("\t", " ")


def short(text: str, width: int = 160) -> str:
    text = one_line(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def terminal_text(text: str, width: int = 1000) -> str:
    """The terminal's one escaping function: every bundle-derived string (lines, file and
    host names, paths) goes through it before it is printed — C0/C1 controls, ESC
    sequences and bidi controls removed, line breaks made visible, length capped."""
    return short(text or "", width)


def code_spans(text: str) -> list[tuple[str, bool]]:
    """Knowledge text marks commands with `backticks`: split it into (text, is_code) parts."""
    parts = re.split(r"`([^`]+)`", text)
    return [(part, i % 2 == 1) for i, part in enumerate(parts) if part]


# Markdown: any ASCII punctuation may be backslash-escaped (CommonMark §2.4).  Escaped
# here: what starts emphasis, links, images, HTML, entities, headings, tables or code, and
# what autolinks and GFM's linkify need unescaped (`www.`, `http:`, `a@b.c`: `.`, `:`,
# `@`); list or quote markers are escaped at a line's start.
_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]<>&#|~!:.@])")
_MARKDOWN_LIST_START = re.compile(r"^([-+>=])|^(\d+)([.)])")


def markdown_text(text: str, width: int = 300) -> str:
    """Bundle text placed in Markdown prose: every active character backslash-escaped."""
    escaped = _MARKDOWN_ACTIVE.sub(r"\\\1", short(text, width))
    return _MARKDOWN_LIST_START.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", escaped)


def markdown_code(text: str, width: int = 200) -> str:
    """Bundle text as a Markdown code span that holds it verbatim (CommonMark §6.1):
    the fence is one backtick longer than the longest run inside, padded with spaces."""
    text = short(text, width)
    if not text.strip():
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = longest or text.startswith((" ", "`")) or text.endswith((" ", "`"))
    return f"{fence} {text} {fence}" if padded else f"{fence}{text}{fence}"


def markdown_block(lines: list[str], width: int = 300) -> str:
    """Bundle text as a fenced code block: nothing inside is Markdown.  The fence is longer
    than any backtick run in the text, so no line can close it early."""
    body = [short(line, width) for line in lines]
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + "text", *body, fence]) + "\n"
