"""gdb / eu-stack / lldb parser on real debugger output (fixtures/gdb/SOURCE.md)."""
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.grammar import load
from postmortem.parsers import parse_text

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "gdb"


def parse(name: str | None = None, lines: list[str] | None = None):
    if lines is None:
        lines = (FIX / name).read_text(errors="replace").splitlines()
    return parse_text(name or "x", lines)


def stacks(result, origin="gdb"):
    return [s for s in result.sink.stacks if s.origin == origin]


def test_grammar_builds_strict():
    load("gdb", strict=True)


def test_core_header_signal_and_current_thread():
    r = parse("gdb-core.txt")
    (sig,) = [e for e in r.sink.events if e.kind == "gdb.signal"]
    assert sig.data["signal"] == "SIGBUS" and sig.data["signo"] == 7 and sig.data["detail"] == "Bus error"
    (core,) = [e for e in r.sink.events if e.kind == "gdb.core"]
    assert core.data["command"] == "/tmp/gdbx/prog /tmp/gdbx/shm.bin"
    s = stacks(r)
    # bare `bt` (current thread) + three threads of `thread apply all bt full`
    assert [x.thread for x in s] == [None, "Thread 3", "Thread 2", "Thread 1"]
    assert [x.crashed for x in s] == [True, False, False, True]
    assert [len(x.frames) for x in s] == [3, 12, 12, 3]
    assert r.unclaimed == 0 and not r.sink.problems


def test_frame_shapes():
    s = stacks(parse("gdb-core.txt"))
    crashed, thread3 = s[0], s[1]
    top = crashed.frames[0]
    assert top.function == "(anonymous namespace)::Buffer<float, 3>::touch"
    assert top.file == "prog.cpp" and top.line == 19 and top.address == 0x55555555524d
    inlined = crashed.frames[2]
    assert inlined.function == "main" and inlined.address is None
    templ = thread3.frames[7]
    assert templ.function == "std::thread::_Invoker<std::tuple<void (*)(int), int> >::operator()"
    unknown = thread3.frames[9]
    assert unknown.function is None and unknown.module == "/lib/x86_64-linux-gnu/libstdc++.so.6"
    assert thread3.tid == 10186


def test_thread_headers_without_libthread_db():
    s = stacks(parse("gdb-core-nothreaddb.txt"))
    assert [(x.thread, x.tid, x.crashed) for x in s] == [
        ("Thread 3", 10186, False), ("Thread 2", 10185, False), ("Thread 1", 10182, True)]


def test_live_session_received_signal_and_thread_names():
    r = parse("gdb-live.txt")
    (sig,) = [e for e in r.sink.events if e.kind == "gdb.signal"]
    assert sig.data["signal"] == "SIGBUS"
    named = [x for x in stacks(r) if x.thread == "Thread 1"]
    assert named[0].crashed and named[0].data["name"] == "prog"
    assert r.unclaimed == 0


def test_signal_handler_frame():
    r = parse("gdb-handler.txt")
    (s,) = stacks(r)
    assert s.crashed and s.title == "SIGABRT"
    assert s.frames[5].note == "signal handler called"
    assert s.frames[6].function == "(anonymous namespace)::Buffer<float, 3>::touch"


def test_formats_md_frames_smashed_stack_and_stop_message():
    # verbatim lines from docs/formats.md §4.1 (gdb 13.1 run)
    r = parse(lines=["#0  0x0000000000000000 in ?? ()", "#2  0x4141414141414141 in ?? ()",
                     "Backtrace stopped: previous frame inner to this frame (corrupt stack?)"])
    (s,) = stacks(r)
    assert [f.address for f in s.frames] == [0, 0x4141414141414141]
    assert all(f.function is None for f in s.frames)
    assert s.data["stopped"].startswith("Backtrace stopped: previous frame inner")


def test_eu_stack():
    r = parse("eu-stack.txt")
    s = stacks(r, "eu-stack")
    assert [x.thread for x in s] == ["TID 10182", "TID 10185", "TID 10186"]
    assert all(x.pid == 10182 for x in s)
    first = s[0].frames[1]
    assert first.function == "nccl_like::detail::shmTouch(char const*, unsigned long)"
    assert first.file.endswith("prog.cpp") and first.line == 30
    assert s[1].frames[9].function is None  # `#9  0x00007ffff7cd44a3` with no symbol
    assert r.unclaimed == 0


def test_lldb():
    r = parse("lldb.txt")
    s = stacks(r, "lldb")
    assert [(x.thread, x.crashed) for x in s] == [("thread #1", True), ("thread #2", False), ("thread #3", False)]
    f0, f1, f5 = s[0].frames[0], s[0].frames[1], s[0].frames[5]
    assert f0.function == "(anonymous namespace)::Buffer<float, 3>::touch" and f0.module == "prog"
    assert f0.file == "prog.cpp" and f0.line == 19
    assert f1.note == "inlined" and f1.function == "nccl_like::detail::shmTouch"
    assert f5.function == "_start" and f5.offset == 33
    (sig,) = [e for e in r.sink.events if e.kind == "gdb.signal"]
    assert sig.data == {"signal": "SIGBUS", "detail": "", "debugger": "lldb", "signo": 7}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=80),
    st.binary(max_size=80).map(lambda b: b.decode("utf-8", "replace")),
    st.sampled_from((FIX / "gdb-core.txt").read_text().splitlines() + (FIX / "lldb.txt").read_text().splitlines()),
), max_size=30))
def test_arbitrary_text_never_raises(lines):
    r = parse_text("x", lines)
    assert not [p for p in r.sink.problems if p.startswith("gdb")]
