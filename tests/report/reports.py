"""Reports rendered once per test session, through the real pipeline (postmortem.run.analyze)."""
from __future__ import annotations

import functools
from html.parser import HTMLParser
from pathlib import Path

from postmortem.model import Analysis
from postmortem.report import html
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
INJECTION = FIXTURES / "injection" / "bundle"
BUNDLES = {p.parent.name: p for p in sorted((FIXTURES / "corpus").glob("*/bundle"))}
BUNDLES["cores"] = FIXTURES / "cores"
BUNDLES["injection"] = INJECTION


@functools.lru_cache(maxsize=None)
def analysis(name: str) -> Analysis:
    return analyze(BUNDLES[name])


@functools.lru_cache(maxsize=None)
def report(name: str) -> str:
    return html.render(analysis(name), bundle_path=BUNDLES[name])


class Page(HTMLParser):
    """What the structure tests look at: ids, links, attributes, text and script bodies."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []   # (tag, name, value)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.raw_blocks: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None
        self._classes: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            value = value or ""
            self.attributes.append((tag, name, value))
            if name == "id":
                self.ids.add(value)
            if name in ("href", "xlink:href"):
                self.hrefs.append(value)
        if tag in self.raw_blocks:
            self._in = tag

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in:
            self.raw_blocks[self._in].append(data)
        else:
            self.text.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)
