"""The store-address-octal rule's shortcut (peer_path._heads): a case whose events hold none of
the literal texts its pattern's matches begin with is skipped without the regex. The shortcut
must never hide a match, and must step aside when it cannot tell."""
import re

import pytest

from postmortem.classify.rules.peer_path import _heads
from postmortem.knowledge.registry import SIGN

STORE_HOST = SIGN.net_store_address_octal.params["store_host"]
PATTERNS = [STORE_HOST, "ab|ac", "x(y|z)", "abc"]
TEXTS = [
    "[W socket.cpp:697] [c10d] The client socket has failed to connect to any network address of "
    "(010.112.000.001, 29500).",
    "torch.distributed.DistNetworkError: The client socket has failed to connect/validate to host "
    "010.112.000.001:29500",  # not the pattern's third form: 'TCP client' is not required
    "TCP client failed to connect/validate to host 010.112.000.001:29500",
    "[c10d] trying to connect to (010.112.000.001, 29500)",
    "ab", "ac", "xy", "xz", "abc", "nothing here",
]


def test_the_rule_uses_the_shortcut():
    assert _heads(STORE_HOST) is not None


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_match_begins_with_a_head(pattern):
    heads = _heads(pattern)
    assert heads
    matched = 0
    for text in TEXTS:
        for m in re.finditer(pattern, text):
            matched += 1
            assert any(m.group(0).startswith(h) for h in heads), (pattern, text)
    assert matched  # the texts exercise the pattern


@pytest.mark.parametrize("pattern", ["(?i)abc", "a?bc", "x|y+", "(ab)c", "[ab]c"])
def test_no_shortcut_when_a_match_may_begin_otherwise(pattern):
    assert _heads(pattern) is None
