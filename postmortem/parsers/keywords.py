"""One fast regex for "does this line contain any of these words?".

A plain alternation of a hundred literals makes Python's regex engine try every
literal at every position.  Folding the words into a trie first (`Call to ibv_|Caught`
becomes `Ca(?:ll to ibv_|ught)`) lets it reject most positions on the first character,
which makes the keyword prefilter several times faster.
"""
from __future__ import annotations

import re
from typing import Iterable


def _trie(words: Iterable[str]) -> dict:
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}  # end of a word
    return root


def _pattern(node: dict) -> str:
    if "" in node and len(node) == 1:
        return ""
    alts = []
    optional = "" in node
    for ch, child in sorted(node.items()):
        if ch == "":
            continue
        alts.append(re.escape(ch) + _pattern(child))
    body = alts[0] if len(alts) == 1 and not optional else "(?:" + "|".join(alts) + ")"
    # A word that ends here is enough: the rest is optional for a containment test.
    return "" if optional else body


def any_word(words: Iterable[str]) -> re.Pattern[str]:
    """A compiled regex whose .search(text) is truthy iff text contains one of `words`."""
    words = sorted(set(w for w in words if w))
    if not words:
        return re.compile(r"(?!)")
    return re.compile(_pattern(_trie(words)))


class LazyAnyWord:
    """any_word(words), compiled only once it pays: building and compiling the trie of a few
    hundred words costs as much as testing them one by one on a few hundred lines, so the
    first `plain_lines` searches test the words one by one (a bundle of one short log never
    compiles it).  `search(text)` is truthy iff text contains one of the words, either way."""

    __slots__ = ("words", "_left", "_compiled")

    def __init__(self, words: Iterable[str], plain_lines: int = 256) -> None:
        self.words = tuple(sorted(set(w for w in words if w)))
        self._left = plain_lines
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str):
        if self._compiled is not None:
            return self._compiled.search(text)
        if self._left > 0:
            self._left -= 1
            return any(w in text for w in self.words)
        self._compiled = any_word(self.words)
        return self._compiled.search(text)

