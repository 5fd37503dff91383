"""Knowledge keywords are linted against routine NCCL INFO lines (issue 17).

The message matcher runs its keyword prefilter on every line of a bundle; a keyword that
routine INFO lines contain (`P2P` in every `Channel .. via P2P/IPC` line, `NVLS` in
`NVLS multicast support ...`) sends those lines, often half of a big NCCL_DEBUG=INFO
bundle, to the regexes for nothing.  So no keyword may occur in a routine INFO line.

A routine INFO line, precisely: a line of a fixture log file (any file in a `bundle/`
folder under fixtures/, or in fixtures/nccl/; fixtures/frozen/ is never read) that
* carries `NCCL INFO`,
* is not one of the error-return traces NCCL prints only while unwinding a failure
  (`transport/nvls.cc:394 -> 1`), and
* is read by no message pattern (MessageMatcher.matches is 0: no keyword-and-regex hit).

Checked: every keyword of knowledge/messages.toml, and the prefilter keys of the catalogs
that are tried as substrings (kernel and PyTorch entries, NCCL WARN entries without a fixed
head).  NCCL INFO catalog entries are left out: they are the INFO formats themselves, and
the catalog is only consulted for WARN lines.
"""
import re
from functools import lru_cache
from pathlib import Path

from postmortem import knowledge
from postmortem.knowledge import catalog
from postmortem.parsers.messages import MessageMatcher

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
ERROR_TRACE = re.compile(r"NCCL INFO \S+\.(?:cc|cu|h|cpp):\d+ -> \d+")


class _NoSink:
    def event(self, *args, **kwargs):
        return None


def _fixture_logs() -> list[Path]:
    files = [p for p in FIXTURES.rglob("*") if p.is_file() and "frozen" not in p.relative_to(FIXTURES).parts
             and ("bundle" in p.relative_to(FIXTURES).parts or p.relative_to(FIXTURES).parts[0] == "nccl")]
    return sorted(files)


@lru_cache(maxsize=None)
def routine_info_lines() -> tuple[str, ...]:
    matcher = MessageMatcher("lint", _NoSink(), knowledge.load())
    lines = set()
    for path in _fixture_logs():
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        lines.update(line for line in text.splitlines() if "NCCL INFO" in line and not ERROR_TRACE.search(line))
    return tuple(sorted(line for line in lines if matcher.matches(line) == 0))


def _offenders(words: dict[str, tuple[str, ...]]) -> list[str]:
    routine = routine_info_lines()
    out = []
    for owner, keys in words.items():
        for key in keys:
            line = next((line for line in routine if key in line), None)
            if line is not None:
                out.append(f"{owner}: keyword {key!r} is in the routine INFO line {line!r}")
    return out


def test_there_are_routine_info_lines_to_lint_against():
    routine = routine_info_lines()
    assert len(routine) > 100
    assert any("via P2P/IPC" in line for line in routine)   # the lines that made `P2P` a bad keyword


def test_no_message_keyword_occurs_in_a_routine_info_line():
    k = knowledge.load()
    assert not _offenders({f"messages.toml {m.id}": m.keywords for m in k.messages})


def test_no_catalog_prefilter_key_occurs_in_a_routine_info_line():
    keys: dict[str, tuple[str, ...]] = {}
    for name in ("pytorch", "kernel"):
        _, entries = catalog._catalog(name)
        keys.update({f"catalogs/{name}.json {e.id}": (e.key,) for e in entries if e.key})
    _, entries = catalog._catalog("nccl")
    keys.update({f"catalogs/nccl.json {e.id}": (e.key,) for e in entries
                 if e.key and e.level == "WARN" and len(catalog._fixed_head(e.name)) < catalog._PREFIX})
    assert not _offenders(keys)


def test_the_lint_catches_a_keyword_routine_lines_carry():
    """The lint is not vacuous: the keywords this change replaced are caught."""
    for old in ("P2P", "NVLS", "nvls", "nccl-", "Connection closed by"):
        assert _offenders({"old": (old,)}), old
