"""keywords.any_word and its lazily compiled form answer "does the line contain one of
these words?" alike, before and after the lazy form compiles its regex."""
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem import knowledge
from postmortem.parsers.keywords import LazyAnyWord, any_word

WORDS = sorted({kw for m in knowledge.load().messages for kw in m.keywords})
# Lines made of pieces of the real keywords and random text (generated here, on purpose).
PIECES = st.one_of(st.sampled_from(WORDS), st.sampled_from([w[: len(w) // 2] for w in WORDS]),
                   st.text(max_size=12))


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=5).map(" ".join))
def test_any_word_is_containment(text):
    expected = any(w in text for w in WORDS)
    assert bool(any_word(WORDS).search(text)) == expected


def test_lazy_any_word_compiles_only_after_its_plain_lines_and_agrees_throughout():
    lines = [f"x {w} y" for w in WORDS] + [w[:-1] for w in WORDS if len(w) > 1] + ["", "nothing here"]
    lazy = LazyAnyWord(WORDS, plain_lines=len(lines) // 2)
    compiled = any_word(WORDS)
    for i, line in enumerate(lines):
        assert bool(lazy.search(line)) == bool(compiled.search(line)) == any(w in line for w in WORDS), line
        assert (lazy._compiled is None) == (i < len(lines) // 2)
