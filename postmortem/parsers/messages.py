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
from postmortem.parsers.keywords import any_word
from postmortem.parsers.stamps import leading_stamp


class MessageMatcher:
    name = "messages"
    _compiled: dict[int, tuple[re.Pattern[str], tuple]] = {}

    def __init__(self, path: str, sink: Sink, k: knowledge.Knowledge | None = None) -> None:
        self.path, self.sink = path, sink
        self.k = k or knowledge.load()
        key = id(self.k.messages)
        if key not in self._compiled:
            self._compiled[key] = (any_word(kw for m in self.k.messages for kw in m.keywords), self.k.messages)
        self.prefilter, self.patterns = self._compiled[key]

    def feed(self, line: Line) -> bool:
        text = line.text
        if not self.prefilter.search(text):
            return False
        matched = causal_done = False
        stamp = line.stamp or leading_stamp(text)
        for m in self.patterns:
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
                data = {k: v for k, v in hit.groupdict().items() if v is not None}
                who = {k: int(data.pop(k)) for k in ("pid", "tid", "rank") if k in data}
                self.sink.event(line, f"msg.{m.id}", Severity(m.severity), stamp=stamp,
                                data={"id": m.id, **data}, **who)
                matched = True
                causal_done = causal_done or not is_context
        return matched

    def matches(self, text: str) -> bool:
        """Would `feed` record anything for a line with this text?  (No side effects.)"""
        if not self.prefilter.search(text):
            return False
        return any(m.regex.search(text) for m in self.patterns if any(kw in text for kw in m.keywords))
