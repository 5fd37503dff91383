"""The line dispatcher: mixed files split by content, a broken parser contained."""
from pathlib import Path

import postmortem.parsers as P
from postmortem.parsers import parse_text

ROOT = Path(__file__).resolve().parents[2]


def test_a_parser_that_raises_costs_a_note_not_the_file(monkeypatch):
    def boom(self, line):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(P.nccl.NcclParser, "feed", boom)
    lines = (ROOT / "fixtures/corpus/multi-roce-hca-enodev-08/bundle/nccl.log").read_text().splitlines()
    r = parse_text("nccl.log", lines)
    assert r.sink.problems and "nccl parser failed at nccl.log:1: ZeroDivisionError" in r.sink.problems[0]
    # the known-message layer still read the WARN line
    assert any(e.kind == "msg.ibv_call_failed" for e in r.sink.events)


def test_busy_parser_sees_continuations_first_and_releases_the_line():
    """A faulthandler dump is followed by an NCCL line: the dump ends, NCCL takes the line."""
    dump = (ROOT / "fixtures/corpus/oom-gpu-paramsync-returnn-02/bundle/faulthandler.txt").read_text().splitlines()
    nccl = (ROOT / "fixtures/corpus/ib-gdr-acs-01/bundle/nccl.log").read_text().splitlines()[0]
    r = parse_text("mixed.log", dump + [nccl])
    kinds = [e.kind for e in r.sink.events]
    assert "nccl.warn" in kinds and r.unclaimed == 0
    assert any(s.origin == "faulthandler" for s in r.sink.stacks)
