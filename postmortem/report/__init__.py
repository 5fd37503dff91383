"""Renderers: terminal (rich), JSON, Markdown and self-contained HTML (jinja2).

One interface, one registry: every renderer is `render(analysis, out, options)` writing
text to `out`; the CLI and triage pick them by name (`RENDERERS`, `get`).  A new output
format is one module with a render function plus one entry here.  Modules are imported
only when their renderer is used (jinja2 and rich are not loaded for `--json -`).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from postmortem.model import Analysis


@dataclass(frozen=True, slots=True)
class RenderOptions:
    bundle_path: Path | None = None   # lets the HTML report re-read lines around cited ones
    quiet: bool = False               # terminal: only the verdict line and artifact errors
    report: str | None = None         # where the HTML report was written, for the terminal's last line


@dataclass(frozen=True, slots=True)
class Renderer:
    name: str
    module: str          # postmortem.report.<module>
    suffix: str          # file name suffix of its output
    description: str

    def render(self, analysis: Analysis, out: TextIO, options: RenderOptions = RenderOptions()) -> None:
        importlib.import_module(f"postmortem.report.{self.module}").write(analysis, out, options)


RENDERERS: dict[str, Renderer] = {r.name: r for r in (
    Renderer("terminal", "terminal", ".txt", "the verdict for a person at a terminal (rich)"),
    Renderer("json", "jsonout", ".json", "the whole analysis, schema postmortem.verdict/1"),
    Renderer("markdown", "markdown", ".md", "a ticket body: host, crash time, verdict, evidence"),
    Renderer("html", "html", ".html", "one self-contained HTML report"),
)}


def get(name: str) -> Renderer:
    try:
        return RENDERERS[name]
    except KeyError:
        raise KeyError(f"no renderer {name!r}; known: {', '.join(RENDERERS)}") from None


def render(name: str, analysis: Analysis, out: TextIO, options: RenderOptions = RenderOptions()) -> None:
    get(name).render(analysis, out, options)


def render_text(name: str, analysis: Analysis, options: RenderOptions = RenderOptions()) -> str:
    import io

    buf = io.StringIO()
    render(name, analysis, buf, options)
    return buf.getvalue()
