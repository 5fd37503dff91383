"""A crash signature: stable across runs, hosts, pids, paths and timestamps.

    sig2:<category>:<cause>:<discriminator>:<frame>|<frame>...

* discriminator - the root finding's key (Xid code, NCCL message id, signal); when the
  verdict has none, the fatal signal the bundle reports; `-` when there is neither;
* frames - the crashing stack walked with Socorro's rules (postmortem.stacks.walk):
  sentinel, irrelevant frames skipped, prefix frames kept up to the first other frame;
  `-` when no stack was found.

SCHEME names the version of this recipe: any change that can alter a signature (code or
the frame lists in postmortem/knowledge/frames) bumps it, so triage baselines made with
another scheme are visibly not comparable.
"""
from __future__ import annotations

from dataclasses import dataclass

from postmortem import stacks
from postmortem.model import Case, Finding

SCHEME = "sig2"


@dataclass(frozen=True, slots=True)
class Explained:
    """A signature with its plaintext explanation (satyr's SR_DUPHASH_NOHASH, siggen's debug log)."""

    signature: str
    notes: tuple[str, ...]

    def plaintext(self) -> str:
        return "\n".join((self.signature, *(f"  {n}" for n in self.notes)))


def _field(text: str) -> str:
    # ':' separates the signature's fields; inside a field it would shift them.
    return stacks.scrub(text).replace(":", ".").strip() or "-"


def discriminator_of(root: Finding | None, case: Case) -> tuple[str, str]:
    """The key discriminator and where it came from."""
    if root and root.discriminator:
        return _field(root.discriminator), f"discriminator from the root finding ({root.rule})"
    signal = stacks.signal_name(case.events)
    if signal:
        return signal, "discriminator: the fatal signal the bundle reports"
    return "-", "no discriminator: no root finding key and no fatal signal"


def explain_signature(cause: str, category: str, root: Finding | None, case: Case) -> Explained:
    disc, disc_note = discriminator_of(root, case)
    stack, why = stacks.crashing_with_reason(case.stacks, case.events)
    walked = stacks.walk(stack)
    frames = "|".join(walked.frames) or "-"
    where = f"{stack.origin} stack at {stack.ref.describe()}" if stack else "no stack"
    notes = (f"scheme {SCHEME}; category {category}; cause {cause}", disc_note,
             f"crashing stack: {where} ({why})", *walked.notes)
    return Explained(":".join((SCHEME, category, cause, disc, frames)), notes)


def signature_of(cause: str, category: str, root: Finding | None, case: Case) -> str:
    return explain_signature(cause, category, root, case).signature
