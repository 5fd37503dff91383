"""Known messages, matched on every line whoever claimed it.

The patterns live in knowledge/messages.toml (with a real sample line each).  A keyword
prefilter built from all entries keeps this cheap: only lines containing one of the
keywords are tried against the regexes, in file order.  Among causal patterns (role root or
symptom) the first match wins; context patterns (progress bars, versions, signals) are
always recorded too, since one pasted line often carries both.
"""
from __future__ import annotations

import re

from postmortem import knowledge
from postmortem.model import Severity
from postmortem.parsers.base import Line, Sink
from postmortem.parsers.keywords import LazyAnyWord
from postmortem.parsers.stamps import leading_stamp


# The `[%F %T] ` prefix of NCCL 2.26+ lines: the same line printed again differs only there.
_NCCL_STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\] ")


# Lines of one shape (scan.py: a rank's line with its `host:pid:tid` digits masked) whose
# candidate messages are remembered, per knowledge.
_CANDIDATES_CAP = 1 << 14


def _has_digit(word: str) -> bool:
    """Whether a keyword could meet a masked digit (any non-ASCII character counts, to be safe)."""
    return not word.isascii() or any(c.isdigit() for c in word)


class MessageMatcher:
    name = "messages"
    _compiled: dict[int, tuple[LazyAnyWord, tuple]] = {}
    # Per knowledge: the messages with a keyword containing a digit, and for each line shape the
    # messages with a keyword in it (see candidates).
    _by_shape: dict[int, tuple[tuple, dict, frozenset]] = {}

    def __init__(self, path: str, sink: Sink, k: knowledge.Knowledge | None = None) -> None:
        self.path, self.sink = path, sink
        self.k = k or knowledge.load()
        key = id(self.k.messages)
        if key not in self._compiled:
            self._compiled[key] = (LazyAnyWord(kw for m in self.k.messages for kw in m.keywords), self.k.messages)
        self.prefilter, self.patterns = self._compiled[key]
        if key not in self._by_shape:
            digit_keyed = tuple(m for m in self.patterns if any(_has_digit(kw) for kw in m.keywords))
            self._by_shape[key] = (digit_keyed, {}, frozenset(map(id, digit_keyed)))
        self._digit_keyed, self._shapes, self._digit_ids = self._by_shape[key]
        # A context message (a version, a progress bar) printed again in the very same line
        # adds to the `lines` of its first event instead of making another one.
        self._context: dict[tuple[str, str], dict] = {}
        self.repeat_targets: list[dict] = []  # the context events the line just fed added to

    def candidates(self, text: str, shape: str) -> tuple:
        """The messages `feed` tries on `text` (those with a keyword in it), remembered for
        `shape`: the text with some of its digits masked (scan.py's key of a rank's line; the
        bundle's other ranks print the same line with other digits there).  A keyword without
        digits occurs in every text of the shape alike (at the same places, with digits at the
        same places around it), so the messages keyed by digit-free words are found once per
        shape; those with a digit in a keyword are always tried (their keywords checked again)."""
        got = self._shapes.get(shape)
        if got is None:
            if len(self._shapes) >= _CANDIDATES_CAP:
                self._shapes.clear()
            digit_ids = self._digit_ids
            got = self._shapes[shape] = tuple(
                m for m in self.patterns
                if id(m) in digit_ids or any(kw in text for kw in m.keywords)) if self.prefilter.search(text) else \
                self._digit_keyed
        return got

    def feed(self, line: Line, shape: str | None = None) -> bool:
        """Record the known messages `line` carries; True if any.  `shape`: see candidates."""
        text = line.text
        if self.repeat_targets:
            self.repeat_targets = []
        if shape is not None:
            patterns = self.candidates(text, shape)
            if not patterns:
                return False
        elif not self.prefilter.search(text):
            return False
        else:
            patterns = self.patterns
        matched = causal_done = False
        stamp = line.stamp or leading_stamp(text)
        for m in patterns:
            is_context = m.role == "context"
            if causal_done and not is_context:
                continue
            for kw in m.keywords:
                if kw in text:
                    break
            else:
                continue
            hit = m.regex.search(text)
            if hit:
                matched = True
                causal_done = causal_done or not is_context
                if is_context:
                    said = (m.id, _NCCL_STAMP.sub("", text, count=1))
                    seen = self._context.get(said)
                    if seen is not None:
                        seen["lines"] += 1
                        self.repeat_targets.append(seen)
                        continue
                data = {k: v for k, v in hit.groupdict().items() if v is not None}
                who = {k: int(data.pop(k)) for k in ("pid", "tid", "rank") if k in data}
                ev = self.sink.event(line, f"msg.{m.id}", Severity(m.severity), stamp=stamp,
                                     data={"id": m.id, **data, **({"lines": 1} if is_context else {})}, **who)
                if is_context:
                    self._context[said] = ev.data  # type: ignore[assignment]
                    self.repeat_targets.append(ev.data)  # type: ignore[arg-type]
        return matched

    def matches(self, text: str) -> int:
        """What `feed` would record for a line with this text (no side effects): 0 nothing,
        1 context messages only, 2 a causal message (root or symptom)."""
        if not self.prefilter.search(text):
            return 0
        found = 0
        for m in self.patterns:
            if any(kw in text for kw in m.keywords) and m.regex.search(text):
                if m.role != "context":
                    return 2
                found = 1
        return found
