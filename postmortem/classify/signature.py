"""A crash signature: stable across runs, hosts, pids, paths and timestamps.

`category/cause/discriminator/frames` where frames are the normalized top frames of
the crashing stack (see postmortem.stacks).  SCHEME names the version of this recipe,
so a rule change that alters signatures is visible.
"""
from __future__ import annotations

from postmortem.model import Case, Finding

SCHEME = "sig1"


def signature_of(cause: str, category: str, root: Finding | None, case: Case) -> str:
    from postmortem.stacks import top_frames

    disc = root.discriminator if root else ""
    frames = top_frames(case.stacks, n=3)
    parts = [SCHEME, category, cause, disc or "-", "|".join(frames) or "-"]
    return ":".join(parts)
