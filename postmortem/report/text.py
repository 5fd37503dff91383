"""Helpers shared by the renderers: making bundle text safe to show."""
from __future__ import annotations

import re

# CSI/OSC/other escape sequences and C0 controls found in logs must never reach a terminal.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|[\x00-\x08\x0b-\x1f\x7f]")


def strip_escapes(text: str) -> str:
    return _ESCAPES.sub("", text)


def short(text: str, width: int = 160) -> str:
    text = strip_escapes(text)
    return text if len(text) <= width else text[: width - 1] + "…"
