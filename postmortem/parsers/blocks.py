"""Multi-line blocks that interleave per launcher rank: the helper every block parser uses.

A faulthandler dump, a gdb backtrace, a native backtrace or a Python traceback spans many
lines, and in a launcher's combined log the lines of several ranks' blocks interleave
(`[rank0]: ...` / `[rank1]: ...`).  A `RankBlockParser` keeps one state object per launcher
rank (`self.blocks`, keyed by `Line.rank`; None when no wrapper named a rank), is busy while
any rank's state `is_open`, and ends every rank's state at end of file.
"""
from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from postmortem.parsers.base import Line, LineParser

State = TypeVar("State")


class RankBlocks(Generic[State]):
    """The block state of each launcher rank, in the order the ranks were first seen."""

    def __init__(self) -> None:
        self._by_rank: dict[int | None, State] = {}

    def get(self, line: Line) -> State | None:
        return self._by_rank.get(line.rank)

    def of(self, line: Line, new: Callable[[], State]) -> State:
        """The state of the line's rank, made with `new()` the first time."""
        state = self._by_rank.get(line.rank)
        if state is None:
            state = self._by_rank[line.rank] = new()
        return state

    def put(self, line: Line, state: State) -> State:
        self._by_rank[line.rank] = state
        return state

    def pop(self, rank: int | None) -> State | None:
        return self._by_rank.pop(rank, None)

    def ranks(self) -> list[int | None]:
        return list(self._by_rank)

    def __iter__(self) -> Iterator[State]:
        return iter(list(self._by_rank.values()))

    def __bool__(self) -> bool:
        return bool(self._by_rank)


class RankBlockParser(LineParser, Generic[State]):
    """A LineParser whose blocks interleave per rank (see the module docstring)."""

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        self.blocks: RankBlocks[State] = RankBlocks()

    def is_open(self, state: State) -> bool:
        """True while this rank's block wants the next line of its rank first."""
        return True

    def end(self, state: State) -> None:
        """End of file: flush what this rank's block holds."""

    @property
    def busy(self) -> bool:
        return any(self.is_open(state) for state in self.blocks)

    def finish(self) -> None:
        for state in self.blocks:
            self.end(state)
