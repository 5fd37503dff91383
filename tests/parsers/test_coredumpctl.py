"""coredumpctl info / list parser on verbatim public output (fixtures/coredumpctl/SOURCE.md)."""
from pathlib import Path

from postmortem import stacks as stacklib
from postmortem.knowledge import registry
from postmortem.model import ClockKind
from postmortem.parsers import parse_text

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "coredumpctl"


def lines(name):
    return (FIX / name).read_text().splitlines()


def parse(name, text=None):
    return parse_text(name, text if text is not None else lines(name))


def test_info_sigbus_record_fields_and_stack():
    r = parse("info-fscli-bus.txt")
    (ev,) = r.sink.events
    assert ev.kind == "coredumpctl.signal" and ev.pid == 588797 and ev.tid == 588797
    assert ev.data["signo"] == 7 and ev.data["signal"] == "SIGBUS" and ev.data["comm"] == "fs-cli"
    assert ev.data["uid"] == 1000 and ev.data["command"] == "./fs-cli --version"
    assert ev.data["exe"].endswith("/fsclient/fs-cli") and ev.data["corefile"] == "present"
    assert ev.ref.line == 4 and "7 (BUS)" in ev.ref.text   # cites the Signal: line
    # CST is ambiguous (US Central / China): kept as printed, the stamp is local, not zoned
    assert ev.data["zone"] == "CST" and ev.stamp.clock is ClockKind.WALL_LOCAL
    assert (ev.stamp.wall.year, ev.stamp.wall.hour, ev.stamp.wall.minute) == (2024, 13, 38)
    (st,) = r.sink.stacks
    assert st.origin == "coredumpctl" and st.crashed and st.tid == 588797 and st.pid == 588797
    assert [f.function for f in st.frames] == [
        "clock_nanosleep", "__nanosleep", "sleep", "args_process", "main", None,
        "__libc_start_main", "_start"]
    assert st.frames[3].module == "fs-cli" and st.frames[3].offset == 0xb69a
    assert st.frames[0].address == 0x000070ef250faf07
    assert r.unclaimed == 0 and not r.sink.problems


def test_info_older_frames_without_offset():
    r = parse("info-xorg-abrt.txt")
    (ev,) = r.sink.events
    assert ev.data["signal"] == "SIGABRT" and ev.data["zone"] == "CEST" and ev.pid == 32567
    (st,) = r.sink.stacks
    (frame,) = st.frames
    assert frame.function == "__GI_raise" and frame.module == "libc.so.6" and frame.offset is None


def test_info_segv_with_na_frames():
    r = parse("info-qk4-segv.txt")
    (ev,) = r.sink.events
    assert ev.data["signo"] == 11 and ev.tid == 131435 and ev.data["hostname"] == "laptop"
    (st,) = r.sink.stacks
    assert st.frames[0].function == "pw_stream_dequeue_buffer" and st.frames[1].function is None
    assert st.frames[1].module == "libQt6Multimedia.so.6" and len(st.frames) == 5


def test_crashing_stack_and_death_registry():
    r = parse("info-fscli-bus.txt")
    chosen, _why = stacklib.crashing_with_reason(r.sink.stacks, r.sink.events)
    assert chosen is r.sink.stacks[0]
    reg = registry.registry()
    assert "coredumpctl.signal" in reg.kinds_with_death("fatal_signal")
    assert "coredumpctl.listed" not in reg.kinds_with_death()   # the same death, not counted twice


def test_two_records_in_one_file():
    # Built at test time from two real records (`coredumpctl info` with no match prints every
    # core, a blank line between records): each keeps its own fields and stack.
    text = lines("info-xorg-abrt.txt") + [""] + lines("info-fscli-bus.txt")
    r = parse("coredumpctl_info.txt", text)
    assert [(e.pid, e.data["signal"]) for e in r.sink.events] == [(32567, "SIGABRT"), (588797, "SIGBUS")]
    assert [len(s.frames) for s in r.sink.stacks] == [1, 8]
    assert r.unclaimed == 0


def test_truncated_record_is_a_problem_not_a_traceback():
    # Deliberately damaged input made at test time: the record stops before `Signal:`.
    r = parse("coredumpctl_info.txt", lines("info-fscli-bus.txt")[:3])
    assert not r.sink.events and any("without a Signal" in p for p in r.sink.problems)


def test_list_numeric_signal():
    r = parse("list-gnome-shell.txt")
    evs = r.sink.events
    assert [e.kind for e in evs] == ["coredumpctl.listed"] * 2
    assert [(e.pid, e.data["signo"], e.data["corefile"], e.data["exe"]) for e in evs] == [
        (1749, 11, "present", "/usr/bin/gnome-shell")] * 2
    assert evs[1].stamp.wall.day == 25 and evs[1].data["zone"] == "CET"


def test_list_signal_name_and_size_column():
    r = parse("list-pg-waldump-size.txt")
    ev = r.sink.events[0]
    assert ev.data["signal"] == "SIGSEGV" and ev.data["signo"] == 11 and ev.data["size"] == "32.7K"
    assert ev.data["exe"].endswith("/pg_waldump/pg_waldump") and ev.pid == 89240
    assert r.unclaimed == 0


def test_a_timestamp_that_is_no_date_keeps_no_stamp_and_raises_nothing():
    """Found by bench/fuzz_parsers.py (fuzz/crashers/parsers/contained-coredumpctl.json)."""
    from postmortem.parsers.coredumpctl import parse_time
    assert parse_time("Tue 2019-54-30 18:57:16 CEST (1 day ago)") == (None, None)
    stamp, zone = parse_time("Tue 2019-04-30 18:57:16 +9900")
    assert zone == "+9900" and stamp.wall.tzinfo is None
