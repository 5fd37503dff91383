"""The lines around each cited line, re-read from the bundle for the report.

The model keeps only the cited line itself (`Ref.text`).  A reader judges evidence
better with a few neighbours, so the report layer may re-open the bundle, read-only
and bounded: only artifacts that are cited, only up to the last cited line plus
RADIUS, each line cut to MAX_CHARS.  Any failure just means no context for that
artifact; the report then shows the cited line alone.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from postmortem import bundle
from postmortem.model import Ref

RADIUS = 3
MAX_CHARS = 400

# (artifact path, cited line) -> [(line number, text), ...] in file order
Context = dict[tuple[str, int], list[tuple[int, str]]]


def read_context(bundle_path: Path, refs: Iterable[Ref], radius: int = RADIUS) -> Context:
    wanted: dict[str, set[int]] = {}
    for r in refs:
        if r.line is not None and r.line > 0:
            wanted.setdefault(r.path, set()).add(r.line)
    if not wanted:
        return {}
    try:
        entries, _ = bundle.open_bundle(Path(bundle_path))
    except bundle.BundleError:
        return {}
    context: Context = {}
    for entry in entries:
        if entry.path not in wanted:
            continue
        try:
            window = _read_window(entry, wanted[entry.path], radius)
        except Exception:  # noqa: BLE001 - context is a nicety; the cited line is still shown
            continue
        for line in wanted[entry.path]:
            context[(entry.path, line)] = [(n, window[n]) for n in range(line - radius, line + radius + 1) if n in window]
    return context


def _read_window(entry: bundle.Entry, cited: set[int], radius: int) -> dict[int, str]:
    """Line number -> text for every line within `radius` of a cited line; stops after the last."""
    last = max(cited) + radius
    keep = {n for line in cited for n in range(line - radius, line + radius + 1)}
    window: dict[int, str] = {}
    with entry.open() as raw:
        stream = raw if hasattr(raw, "peek") else _buffered(raw)
        head = stream.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES]
        kind = bundle.sniff(head)
        if kind == "gzip":
            stream = bundle.gunzip(stream, entry.path)
            kind = bundle.sniff(stream.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES])
        if kind != "text":
            return {}
        for number, line in enumerate(bundle.iter_lines(stream), start=1):
            if number in keep:
                window[number] = line.rstrip("\r\n")[:MAX_CHARS]
            if number >= last:
                break
    return window


def _buffered(raw):
    import io

    return io.BufferedReader(raw)
