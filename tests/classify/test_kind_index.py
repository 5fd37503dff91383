"""The rules read events by kind through classify/index.py: the same events, in the same
order, as walking every event; and the catalog rule's list of the kinds it reads is whole."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

from postmortem.classify import index
from postmortem.classify.rules import catalog as catalog_rule
from postmortem.knowledge.registry import KIND
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]


def test_events_of_is_the_walk_it_replaces():
    case = analyze(ROOT / "fixtures" / "bundles" / "lab-torchrun-oom-cgroup" / "bundle").case
    kinds = index.kinds_in(case)
    assert len(kinds) > 3 and kinds == list(dict.fromkeys(e.kind for e in case.events))
    for wanted in ([kinds[0]], kinds[1:3], kinds[::2], ["no.such.kind", kinds[-1]], []):
        assert index.events_of(case, wanted) == [e for e in case.events if e.kind in set(wanted)]
    assert index.events_of(case, kinds[0]) == [e for e in case.events if e.kind == kinds[0]]


def test_every_kind_the_catalog_rule_reads_is_in_its_read_kinds():
    named = set(re.findall(r"KIND\.(\w+)", inspect.getsource(catalog_rule._hits)))
    assert named, "the catalog rule reads kinds by KIND.<name>"
    for name in named:
        assert getattr(KIND, name) in catalog_rule._READ_KINDS, name
    for kind in catalog_rule._CUDA_LINE_KINDS:
        assert kind in catalog_rule._READ_KINDS
