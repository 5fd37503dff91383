"""UCX / backtrace_symbols / c10 / terminate parser on real lines (fixtures/native/SOURCE.md)."""
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.grammar import load
from postmortem.parsers import parse_text

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "native"


def parse(name: str | None = None, lines: list[str] | None = None):
    if lines is None:
        lines = (FIX / name).read_text(errors="replace").splitlines()
    return parse_text(name or "x", lines)


def events(result, kind):
    return [e for e in result.sink.events if e.kind == kind]


def test_grammar_builds_strict():
    load("native", strict=True)


def test_ucx_signal_and_backtrace():
    r = parse("corpus-ucx-06-stderr.log")
    (sig,) = events(r, "native.signal")
    assert sig.data["signo"] == 7 and sig.data["signal"] == "Bus error"
    assert sig.data["detail"] == "nonexistent physical address"
    assert (sig.host, sig.pid, sig.tid) == ("8d6bf97c3bf4", 3039, 3095)
    (stack,) = [s for s in r.sink.stacks if s.origin == "ucx"]
    assert stack.tid == 3095 and stack.pid == 3039 and stack.crashed
    assert len(stack.frames) == 10
    assert stack.frames[2].function == "ncclGroupEnd" and stack.frames[2].offset == 0x7587D
    assert stack.frames[5].function is None and stack.frames[5].file == "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
    assert stack.title == "Caught signal 7 (Bus error: nonexistent physical address)"
    assert r.unclaimed == 0


def test_ucx_frame_shapes_from_formats_md():
    # verbatim from docs/formats.md §5.9 (a user build log, and UCX's plain-build format)
    r = parse(lines=["[edu02:192938:0:192938] Caught signal 7 (Bus error: nonexistent physical address)",
                     "==== backtrace (tid: 192937) ====",
                     " 0 0x000000000003e730 __GI___sigaction()  :0",
                     " 1 0x00000000000295d0 __libc_start_call_main()  ???:0",
                     "================================="])
    (stack,) = [s for s in r.sink.stacks if s.origin == "ucx"]
    assert stack.tid == 192937 and len(stack.frames) == 2
    assert stack.frames[0].function == "__GI___sigaction" and stack.frames[0].file is None
    assert stack.frames[1].function == "__libc_start_call_main"
    assert stack.title == ""  # the signal's TID differs from the backtrace's


def test_backtrace_symbols_with_wrapped_lines():
    r = parse("corpus-returnn-02-native_backtrace.txt")
    (stack,) = r.sink.stacks
    assert stack.origin == "backtrace_symbols" and len(stack.frames) == 12  # 14 lines, two wrapped
    assert stack.frames[0].offset == 0x3CF40 and stack.frames[0].address == 0x7FDA61527F40
    assert stack.frames[2].function == "raise" and stack.frames[2].offset == 0x12
    joined = stack.frames[8]
    assert joined.function == "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs" and joined.address == 0x7FDA364F09BD
    assert stack.frames[9].function == "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"
    assert r.unclaimed == 0


def test_terminate_what_and_c10_frames():
    r = parse("corpus-cuda-unknown-01-train.log")
    (ev,) = events(r, "native.terminate")
    assert ev.data["type"] == "c10::CUDAError" and ev.data["what"] == "CUDA error: unknown error"
    assert ev.rank == 3  # `[default3]:` wrapper
    (stack,) = [s for s in r.sink.stacks if s.origin == "c10"]
    assert len(stack.frames) == 7 and stack.crashed and stack.rank == 3
    assert stack.frames[0].function == "c10::Error::Error(c10::SourceLocation, std::string)"
    assert stack.frames[0].offset == 0x42 and stack.frames[0].address == 0x1518A06137D2
    assert stack.frames[4].function is None and stack.frames[4].module == "/lib64/libstdc++.so.6"
    assert stack.data["raised_from"] == "query"
    assert stack.title == "c10::CUDAError: CUDA error: unknown error"
    assert r.unclaimed == 0


def test_terminate_multiline_what():
    r = parse("corpus-returnn-02-train.log")
    (ev,) = events(r, "native.terminate")
    assert ev.data["type"] == "c10::Error" and ev.data["what"] == "CUDA error: out of memory"
    assert "CUDA_LAUNCH_BLOCKING=1" in ev.data["message"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=80),
    st.binary(max_size=80).map(lambda b: b.decode("utf-8", "replace")),
    st.sampled_from((FIX / "corpus-ucx-06-stderr.log").read_text().splitlines()
                    + (FIX / "corpus-returnn-02-native_backtrace.txt").read_text().splitlines()
                    + (FIX / "corpus-cuda-unknown-01-train.log").read_text().splitlines()),
), max_size=30))
def test_arbitrary_text_never_raises(lines):
    r = parse_text("x", lines)
    assert not [p for p in r.sink.problems if p.startswith("native")]
