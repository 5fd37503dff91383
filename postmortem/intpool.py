"""One int object per index, shared by every list of positions and every event number.

An int above 256 is an object of its own (28 bytes).  An analysis of 259,000 events held
four sets of 0..n-1: the events' `seq`, the kind indexes of the timeline (job.py) and of
the classifier (classify/index.py) and the report's rows (report/rows.py); taken from
this one list they are one set (issue 17: 21 MiB of the dense bundle's peak)."""
from __future__ import annotations

_POOL: list[int] = list(range(1024))


def upto(n: int) -> list[int]:
    """A list whose item i is the shared int i for every i < n."""
    if len(_POOL) < n:
        _POOL.extend(range(len(_POOL), max(n, 2 * len(_POOL))))
    return _POOL


def shared(i: int) -> int:
    """The shared int equal to `i` (a non-negative index)."""
    try:
        return _POOL[i]
    except IndexError:
        return upto(i + 1)[i]
