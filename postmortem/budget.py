"""Budgets, not hopes: what one analysis may spend on one bundle.

A bundle is hostile until read.  Every size, count and second the reading stage can be
made to spend has a limit here; `Meter` keeps the running account for one analysis.
A budget that runs out never raises into the caller: reading stops where it is, the
analysis goes on with what it has, and `Meter.notes` says in words what was cut.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from postmortem import DEFAULT_SECONDS  # noqa: F401 - defined there for a light `--help`; read here

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (startup time)
if TYPE_CHECKING:
    from typing import Callable


@dataclass(frozen=True)
class Budget:
    bytes: int = 1 << 30             # decompressed or read bytes over the whole bundle
    files: int = 20_000              # files or archive members taken from the bundle
    line_chars: int = 4096           # longer lines are cut: regexes only see a bounded window
    repeats: int = 32                # copies of one identical line parsed per file; the rest counted
    events: int = 2_000_000          # events kept per bundle
    header_bytes: int = 64 << 10     # one tar pax or GNU long-name header
    depth: int = 4096                # folder nesting walked


class BudgetExhausted(Exception):
    """Raised inside the reading stage only; the pipeline turns it into a note."""


class Meter:
    """The running account of one analysis against its budget and time limit."""

    def __init__(self, budget: Budget | None = None, time_limit: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget or Budget()
        self.time_limit = time_limit
        self.clock = clock
        self.started = clock()
        self.bytes = 0
        self.files = 0
        self.events = 0
        self.stopped: str | None = None   # why reading stopped early, in words
        self.notes: list[str] = []

    def out_of_time(self) -> bool:
        if self.stopped:
            return True
        if self.time_limit is not None and self.clock() - self.started > self.time_limit:
            self.stop(f"time limit of {self.time_limit:g} s reached")
            return True
        return False

    def stop(self, why: str) -> None:
        if self.stopped is None:
            self.stopped = why
            self.notes.append(f"analysis stopped early: {why}; the verdict uses what was read until then")

    def take_bytes(self, n: int) -> bool:
        """Account `n` more bytes read; False once the bundle's byte budget is spent."""
        self.bytes += n
        if self.bytes > self.budget.bytes:
            self.stop(f"read budget of {self.budget.bytes >> 20} MiB reached")
            return False
        return True

    def take_file(self) -> bool:
        self.files += 1
        if self.files > self.budget.files:
            self.stop(f"file budget of {self.budget.files} files or members reached")
            return False
        return True

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
