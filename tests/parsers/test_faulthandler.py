"""faulthandler parser on real dumps (fixtures/faulthandler/SOURCE.md)."""
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.grammar import load
from postmortem.parsers import parse_text

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "faulthandler"
VERSIONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]


def parse(name: str):
    path = FIX / name
    return parse_text(name, path.read_text(errors="replace").splitlines())


def mine(result):
    return [s for s in result.sink.stacks if s.origin == "faulthandler"]


def test_grammar_builds_strict():
    load("faulthandler", strict=True)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario,signal,signo", [
    ("bus", "Bus error", 7), ("segv", "Segmentation fault", 11), ("abrt", "Aborted", 6)])
def test_fatal_signal_all_threads(version, scenario, signal, signo):
    r = parse(f"py{version}-{scenario}.txt")
    events = [e for e in r.sink.events if e.kind == "py.fatal_signal"]
    assert [(e.data["signal"], e.data["signo"], e.ref.line) for e in events] == [(signal, signo, 1)]
    stacks = mine(r)
    assert len(stacks) == 3  # two worker threads + the main thread
    crashed = [s for s in stacks if s.crashed]
    assert len(crashed) == 1
    assert crashed[0].frames[0].function == "inner" and crashed[0].frames[0].line == 27
    assert crashed[0].frames[-1].function == "<module>"
    assert crashed[0].thread.startswith("0x")
    assert all(s.title == f"Fatal Python error: {signal}" for s in stacks)
    assert r.unclaimed == 0 and not r.sink.problems


@pytest.mark.parametrize("version", VERSIONS)
def test_timeout_dump_has_no_crashed_thread(version):
    r = parse(f"py{version}-timeout.txt")
    (ev,) = [e for e in r.sink.events if e.kind == "py.dump"]
    assert ev.data["reason"] == "Timeout (0:00:00.250000)!"
    stacks = mine(r)
    assert len(stacks) == 2 and not any(s.crashed for s in stacks)


def test_whole_second_timeout_header():
    r = parse("py3.13-timeout_int.txt")
    assert [e.data["reason"] for e in r.sink.events if e.kind == "py.dump"] == ["Timeout (0:00:01)!"]


@pytest.mark.parametrize("version", VERSIONS)
def test_several_dumps_in_one_file(version):
    r = parse(f"py{version}-repeat.txt")
    kinds = [e.kind for e in r.sink.events if e.kind.startswith("py.")]
    assert kinds == ["py.dump", "py.dump", "py.fatal_signal"]
    stacks = mine(r)
    assert len(stacks) == 6
    assert [s.crashed for s in stacks].count(True) == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_single_thread_mode_stack_header(version):
    r = parse(f"py{version}-single.txt")
    (stack,) = mine(r)
    assert stack.crashed and stack.thread is None and len(stack.frames) == 3


@pytest.mark.parametrize("version", VERSIONS)
def test_depth_limit(version):
    (stack,) = mine(parse(f"py{version}-deep.txt"))
    assert len(stack.frames) == 100
    # 3.8-3.12 print `  ...` after 100 frames; 3.13 truncates silently (docs/formats.md §3)
    assert stack.data.get("truncated", False) is (version != "3.13")


def test_extension_modules_recorded_on_the_event():
    r = parse("py3.11-extmod.txt")
    (ev,) = [e for e in r.sink.events if e.kind == "py.fatal_signal"]
    assert ev.data["extension_modules"] == ["markupsafe._speedups"]
    assert ev.data["extension_count"] == 1


def test_headerless_corpus_paste():
    r = parse("corpus-returnn-02-faulthandler.txt")
    (stack,) = mine(r)
    assert len(stack.frames) == 7
    assert stack.frames[0].function == "_sync_params_avg" and stack.frames[0].line == 160
    (ev,) = [e for e in r.sink.events if e.kind.startswith("py.")]
    assert ev.kind == "py.dump" and ev.data["reason"] == "no header"
    assert ev.data["extension_modules"][0] == "numpy.core._multiarray_umath"
    assert ev.data["extension_count"] is None  # the paste cut the line before `(total: N)`
    assert r.unclaimed == 0


def test_interleaved_ranks_keep_the_dump_whole():
    r = parse("py3.11-interleave-ranks.txt")
    stacks = mine(r)
    assert len(stacks) == 3 and all(s.rank == 0 for s in stacks)
    assert [len(s.frames) for s in stacks] == [4, 4, 3]
    (ev,) = [e for e in r.sink.events if e.kind == "py.fatal_signal"]
    assert ev.rank == 0


def test_lines_split_mid_way_never_crash():
    r = parse("py3.11-interleave-procs.txt")
    assert not r.sink.problems
    # the last frame survived whole; it is taken as a headerless stack
    assert any(s.frames[-1].function == "<module>" for s in mine(r))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=80),
    st.binary(max_size=80).map(lambda b: b.decode("utf-8", "replace")),
    st.sampled_from((FIX / "py3.12-bus.txt").read_text().splitlines() + ["  ...", "Extension modules: a, b (total: 2)"]),
), max_size=30))
def test_arbitrary_text_never_raises(lines):
    r = parse_text("x", lines)
    assert not [p for p in r.sink.problems if p.startswith("faulthandler")]
