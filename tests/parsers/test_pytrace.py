"""Python traceback parser on real tracebacks (fixtures/pytrace/SOURCE.md)."""
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.grammar import load
from postmortem.parsers import parse_text
from postmortem.parsers.pytrace import is_exception_name

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "pytrace"


def parse(name: str | None = None, lines: list[str] | None = None):
    if lines is None:
        lines = (FIX / name).read_text(errors="replace").splitlines()
    return parse_text(name or "x", lines)


def exceptions(result):
    return [e for e in result.sink.events if e.kind == "py.exception"]


def tracebacks(result):
    return [s for s in result.sink.stacks if s.origin == "traceback"]


def test_grammar_builds_strict():
    load("pytrace", strict=True)


@pytest.mark.parametrize("version", ["3.8", "3.12"])
def test_chained_cause(version):
    r = parse(f"py{version}-chained.txt")
    ex = exceptions(r)
    assert [(e.data["type"], e.data.get("chained")) for e in ex] == [
        ("json.decoder.JSONDecodeError", None), ("RuntimeError", "cause")]
    assert ex[1].data["message"] == "could not read the config"
    first, last = tracebacks(r)
    assert first.frames[0].function == "raw_decode"  # innermost first
    assert last.frames[-1].function == "<module>" and last.data["chained"] == "cause"
    assert last.title == "RuntimeError: could not read the config"
    assert r.unclaimed == 0


@pytest.mark.parametrize("version", ["3.8", "3.12"])
def test_chained_context(version):
    r = parse(f"py{version}-context.txt")
    assert [(e.data["type"], e.data.get("chained")) for e in exceptions(r)] == [
        ("KeyError", None), ("ZeroDivisionError", "context")]
    assert exceptions(r)[0].data["message"] == "'missing'"


@pytest.mark.parametrize("version", ["3.8", "3.12"])
def test_recursion_repeated_line(version):
    r = parse(f"py{version}-recursion.txt")
    (ex,) = exceptions(r)
    assert ex.data["type"] == "RecursionError"
    (tb,) = tracebacks(r)
    assert tb.frames[0].note.startswith("repeated 99")


def test_caret_lines_are_part_of_the_traceback():
    r = parse("py3.12-caret.txt")
    (tb,) = tracebacks(r)
    assert [f.function for f in tb.frames] == ["caret", "<module>"]
    assert exceptions(r)[0].data["message"] == "list index out of range"
    assert r.unclaimed == 0


def test_multiline_message():
    r = parse("py3.8-multiline.txt")
    (ex,) = exceptions(r)
    assert ex.data["message"] == "CUDA error: unknown error"
    assert ex.data["continuation"].endswith("CUDA_LAUNCH_BLOCKING=1.")


def test_interleaved_ranks():
    r = parse("py3.12-interleave-ranks.txt")
    by_rank = {}
    for e in exceptions(r):
        by_rank.setdefault(e.rank, []).append(e.data["type"])
    assert by_rank == {1: ["IndexError"], 0: ["json.decoder.JSONDecodeError", "RuntimeError"]}
    rank1 = [s for s in tracebacks(r) if s.rank == 1]
    assert [f.function for f in rank1[0].frames] == ["caret", "<module>"]


def test_unprefixed_interleaving_from_corpus_never_crashes():
    r = parse("corpus-megatron-05-train.log")
    assert not r.sink.problems
    files = {f.file.rsplit("/", 1)[-1] for s in tracebacks(r) for f in s.frames}
    assert files == {"pretrain_gpt.py", "training.py"}


def test_dataloader_worker_traceback_corpus():
    r = parse("corpus-pangeo-02-train.log")
    (ex,) = exceptions(r)
    assert ex.data == {"type": "RuntimeError", "message": "unable to write to file </torch_1394_2747491098>",
                       "frames": 3, "source": "fd, size = storage._share_fd_()"}   # the innermost frame's line
    (tb,) = tracebacks(r)
    assert tb.frames[0].function == "reduce_storage"


def test_dataloader_reraise_with_original_traceback():
    r = parse("public-dataloader-reraise.txt")
    outer, inner = exceptions(r)
    assert outer.data["dataloader_worker"] == 0 and outer.data["type"] == "UnboundLocalError"
    assert inner.data["original"] is True
    assert inner.data["message"] == "local variable 'im_h' referenced before assignment"
    main, worker = tracebacks(r)
    assert main.frames[0].function == "reraise" and len(main.frames) == 8
    assert worker.data["original"] and worker.frames[0].line == 158 and len(worker.frames) == 6


def test_headerless_exception_with_continuation():
    r = parse("corpus-ecc-01-stderr.log")
    (ex,) = exceptions(r)
    assert ex.data["message"] == "CUDA error: uncorrectable ECC error encountered"
    assert "TORCH_USE_CUDA_DSA" in ex.data["continuation"]
    assert r.unclaimed == 0


def test_lone_exception_line():
    (ex,) = exceptions(parse("corpus-shapeworks-02-train.log"))
    assert ex.data["type"] == "RuntimeError" and ex.data["message"].startswith("Too many open files.")


@pytest.mark.parametrize("name,expected", [
    ("RuntimeError", True), ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError", True),
    ("KeyboardInterrupt", True), ("StopIteration", True), ("json.decoder.JSONDecodeError", True),
    ("Error", False), ("ERROR", False), ("INFO", False), ("Note", False), ("ncclSystemError", False),
])
def test_exception_names(name, expected):
    assert is_exception_name(name) is expected


def test_log_lines_are_not_exceptions():
    # real lines from the corpus that look like `Word: text`
    r = parse(lines=["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
                     "INFO:megatron.core.datasets.gpt_dataset:> total number of samples: 640"])
    assert exceptions(r) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=80),
    st.binary(max_size=80).map(lambda b: b.decode("utf-8", "replace")),
    st.sampled_from((FIX / "py3.12-chained.txt").read_text().splitlines()
                    + (FIX / "corpus-megatron-05-train.log").read_text().splitlines()),
), max_size=30))
def test_arbitrary_text_never_raises(lines):
    r = parse_text("x", lines)
    assert not [p for p in r.sink.problems if p.startswith("pytrace")]
